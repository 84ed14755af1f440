/**
 * Kafka itself restarted under a running connector (`docstream stack down/up --services kafka`; the
 * broker's data directory persists): the connector reconnects and no document is lost. Alone in
 * its file, and Kafka is brought back up in afterAll even when the test fails.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

function stack(action: 'up' | 'down'): Promise<unknown> {
  return run(process.execPath, [CLI, 'stack', action, '--services', 'kafka'], { timeout: 150_000 });
}

describe('Kafka restarted mid-run', () => {
  const env = new E2E();
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'uniform', minMs: 1000, maxMs: 2000 } });
  });
  afterAll(async () => {
    await stack('up');
    await env.stop();
  }, 180_000);

  it('the connector recovers and every document gets its result', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const before = Array.from({ length: 60 }, (_, i) => `evt-restart-a${i}`);
    const after = Array.from({ length: 20 }, (_, i) => `evt-restart-b${i}`);
    const child = env.spawnConnector();
    await env.produce(before.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
    await waitFor('the first submissions', () => env.sandbox.stats().submissionsCreated >= 20, 30_000);
    await env.collect();

    await stack('down');
    // Analyses finish while the broker is away: their results wait for it.
    await new Promise((r) => setTimeout(r, 3000));
    await stack('up');
    await env.produce(after.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));

    const ids = [...before, ...after];
    const done = () => new Set(env.on('quality').map((o) => o.headers.event_id)).size;
    await waitFor(`results of all ${ids.length} documents`, () => done() === ids.length, 90_000);
    expect(child.exitCode).toBeNull();
    expect(env.on('dlq')).toEqual([]);
    const counts = env.sandbox.stats().submissionsByQueryId;
    expect(Object.keys(counts).sort()).toEqual([...ids].sort());
    // Each document's results name one submission (re-emission after a lost acknowledgement is allowed).
    for (const id of ids) {
      expect(
        new Set(
          env
            .on('quality')
            .filter((o) => o.headers.event_id === id)
            .map((o) => o.key),
        ).size,
      ).toBe(1);
    }
    const twice = Object.entries(counts).filter(([, n]) => n !== 1);
    expect(twice).toEqual([]);
  }, 240_000);
});
