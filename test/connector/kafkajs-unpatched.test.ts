/**
 * `docstream run` on a kafkajs version its corrections of kafkajs internals were not written for
 * (faked with DOCSTREAM_TEST_KAFKAJS_VERSION): none is applied, the process says so in one log line, and
 * documents go through kafkajs's own code end to end, each with one submission and all its results,
 * up to a graceful stop.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, exitOf } from '../harness/e2e.js';

describe('the connector on a kafkajs version it was not written for', () => {
  const env = new E2E(2);
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('runs without the corrections, says so once, and finishes every document', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const ids = Array.from({ length: 6 }, (_, i) => `evt-unpatched-${i}`);
    // Warnings only, so that the bounded log the harness keeps holds the whole run.
    const child = env.spawnConnector(
      { log: { level: 'warn' } },
      { DOCSTREAM_TEST_KAFKAJS_VERSION: '2.3.0-test' },
    );
    await env.collect();
    await env.produce(
      ids.map((id) => arrival(id, file)),
      (i) => `key-${i}`,
    );
    for (const id of ids) await env.waitForResults(id);
    const counts = await Promise.all(ids.map(async (id) => (await env.submissions(id)).length));
    expect(counts).toEqual(ids.map(() => 1));
    expect(env.on('dlq')).toEqual([]);

    child.kill('SIGTERM');
    expect(await exitOf(child, 60_000)).toBe(0);
    const said = env.childLogs[0]!.join('')
      .split('\n')
      .filter((line) => line.includes('kafkajs 2.3.0-test is installed, not 2.2.4'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('not applied');
  });
});
