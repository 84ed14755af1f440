import { buildProgram } from './program.js';
import { UsageError } from './exit-codes.js';
import { shouldReexec } from './runtime-defaults.js';

const RUN = ['node', 'docstream', 'run'];

describe('DOCSTREAM_OPTIMISATIONS_OFF and docstream run', () => {
  afterEach(() => {
    delete process.env.DOCSTREAM_OPTIMISATIONS_OFF;
  });

  it('runtime-settings switched off: run does not start itself again with them', () => {
    expect(shouldReexec(RUN, {}, false)).toBe(true);
    expect(shouldReexec(RUN, { DOCSTREAM_OPTIMISATIONS_OFF: 'runtime-settings' }, false)).toBe(false);
    expect(shouldReexec(RUN, { DOCSTREAM_OPTIMISATIONS_OFF: 'all' }, false)).toBe(false);
    // Another name leaves it on.
    expect(shouldReexec(RUN, { DOCSTREAM_OPTIMISATIONS_OFF: 'packed-state-index' }, false)).toBe(true);
  });

  it('refuses a name that is no optimisation before anything starts, as invalid input', async () => {
    process.env.DOCSTREAM_OPTIMISATIONS_OFF = 'packed-index';
    const program = buildProgram().exitOverride();
    await expect(program.parseAsync(RUN)).rejects.toThrow(UsageError);
    await expect(buildProgram().exitOverride().parseAsync(RUN)).rejects.toThrow(
      /DOCSTREAM_OPTIMISATIONS_OFF: packed-index is not an optimisation/,
    );
  });
});
