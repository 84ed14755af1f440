import { currentRunId, isRunTopic, newRunId, RUN_ENV, scratchName } from './scratch-topics.js';

describe('run ids', () => {
  test('a new id is the time in base 36 and 6 hex digits, different each time', () => {
    const id = newRunId(Date.UTC(2026, 10, 26, 20, 15, 53, 776));
    expect(id).toMatch(/^mwxzsots[0-9a-f]{6}$/);
    expect(newRunId()).not.toBe(newRunId());
  });

  test("the process's id comes from DOCSTREAM_TEST_RUN, else is made and recorded there", () => {
    expect(currentRunId({ [RUN_ENV]: 'abc123' })).toBe('abc123');
    const env: NodeJS.ProcessEnv = {};
    const made = currentRunId(env);
    expect(env[RUN_ENV]).toBe(made);
    expect(currentRunId(env)).toBe(made);
    // A value that could match more than one run's names is not taken.
    const odd: NodeJS.ProcessEnv = { [RUN_ENV]: 'a-b' };
    expect(currentRunId(odd)).not.toBe('a-b');
  });
});

describe('scratch names and the topics of a run', () => {
  const run = 'mwxzsots1a2b3c';
  const other = 'mwxzsots9f8e7d';

  test('a name holds its prefix, the run and 8 random hex digits', () => {
    expect(scratchName('e2e', run)).toMatch(/^e2e-mwxzsots1a2b3c-[0-9a-f]{8}$/);
    expect(scratchName('e2e', run)).not.toBe(scratchName('e2e', run));
  });

  test("a run's topics are its names and the topics named after them, no other run's", () => {
    const name = scratchName('e2e', run);
    expect(isRunTopic(name, run)).toBe(true);
    expect(isRunTopic(`${name}.documents.arrived`, run)).toBe(true);
    expect(isRunTopic(`${name}-no-such-dlq`, run)).toBe(true);
    expect(isRunTopic(scratchName('e2e', other), run)).toBe(false);
    // A run id that another name merely contains, not between dashes, is not the run.
    expect(isRunTopic(`e2e-x${run}-00000000`, run)).toBe(false);
    expect(isRunTopic('documents.arrived', run)).toBe(false);
    expect(isRunTopic('demo-20261126194839-13c3.documents.arrived', run)).toBe(false);
    expect(isRunTopic('e2e-anything', '')).toBe(false);
  });

  test('internal topics never are, whatever their names hold', () => {
    for (const topic of ['__consumer_offsets', '__transaction_state', `_schemas-${run}-x`, `__x-${run}-y`])
      expect(isRunTopic(topic, run)).toBe(false);
  });
});
