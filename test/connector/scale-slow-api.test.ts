/**
 * The group moves while creates are slow, in both delivery modes, slowed two ways: every API call
 * takes longer than `connector.admissionWaitMs` (a slow API), or creates queue behind a saturated
 * rate limit for longer than that (the API grants 15 calls a second). Admissions are then still under
 * way in the background when a second instance joins (as an autoscaler adds one when the API is slow
 * or saturated), and again when that instance is stopped with SIGTERM. Checked: every document gets
 * its result, none is submitted twice (the sandbox counts creates per query id, which the connector
 * sets to the event id), no dead letter, and neither process exits on its own.
 * The four cases run side by side, each on topics, a group and a sandbox of its own: they mostly wait
 * on the slowed API and on the group.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { freePort } from '../../scripts/lib/harness.js';
import { E2E, arrival, exitOf, waitFor } from '../harness/e2e.js';

const PARTITIONS = 4;

/** Whether the instance serving /readyz on `port` holds input partitions whose state is restored. */
async function holdsPartitions(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    const body = (await res.json()) as { checks: { partitions?: { ok: boolean } } };
    return body.checks.partitions?.ok === true;
  } catch {
    return false; // not serving yet: still starting
  }
}

const SLOW = {
  'a slow API': { faults: { extraLatencyMs: 2000 } },
  'a saturated rate limit': { rateLimit: { ratePerSecond: 15, burst: 5 } },
} as const;

/**
 * One case on its own environment: the first instance warms up, the API slows down, a first wave
 * arrives and a second instance joins; once it holds partitions, a second wave arrives and it stops.
 */
async function scaleOutAndIn(
  env: E2E,
  delivery: 'at-least-once' | 'exactly-once',
  slowness: keyof typeof SLOW,
): Promise<void> {
  const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
  const overrides = {
    connector: { delivery, transactionLingerMs: 20, admissionWaitMs: 300, maxInFlight: 500 },
  };
  const first = env.spawnConnector(overrides);
  await env.collect();
  const quality = () => new Set(env.on('quality').map((o) => o.headers.event_id));
  // The first instance is in its group and working before the API slows down.
  await env.produce([arrival('evt-scale-warm', file, { pipeline_configuration: 'QUALITY_ONLY' })]);
  await waitFor('the warm-up result', () => quality().has('evt-scale-warm'), 60_000);
  // Creates now take longer than the admission wait: they go on in the background.
  env.sandbox.configure(SLOW[slowness]);
  const slowApi = slowness === 'a slow API';
  const wave1 = Array.from({ length: slowApi ? 100 : 60 }, (_, i) => `evt-scale-a${i}`);
  await env.produce(
    wave1.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })),
    (i) => `k${i}`,
  );
  // The second instance joins while the first one's creates are out or queued.
  await new Promise((r) => setTimeout(r, 1000));
  const port = await freePort();
  const second = env.spawnConnector({ ...overrides, http: { host: '127.0.0.1', port } });
  await waitFor('results of the first wave', () => wave1.every((id) => quality().has(id)), 150_000);
  // Scale-in needs the second instance in the group with partitions of its own: its start-up (the
  // join waits for the first instance to rejoin) can outlast the first wave on a loaded machine, and
  // a SIGTERM before it is done stops a process that holds nothing yet.
  const deadline = Date.now() + 60_000;
  while (!(await holdsPartitions(port))) {
    if (Date.now() > deadline) throw new Error('the second instance holds no partitions after 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }

  // Scale-in in the same conditions: the second instance stops while creates are out.
  const wave2 = Array.from({ length: slowApi ? 60 : 30 }, (_, i) => `evt-scale-b${i}`);
  await env.produce(
    wave2.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })),
    (i) => `j${i}`,
  );
  await new Promise((r) => setTimeout(r, 1000));
  second.kill('SIGTERM');
  expect(await exitOf(second, 60_000)).toBe(0);
  await waitFor('results of the second wave', () => wave2.every((id) => quality().has(id)), 150_000);

  expect(first.exitCode).toBeNull();
  expect(env.on('dlq')).toEqual([]);
  const counts = env.sandbox.stats().submissionsByQueryId;
  expect(Object.keys(counts).sort()).toEqual(['evt-scale-warm', ...wave1, ...wave2].sort());
  expect(Object.entries(counts).filter(([, n]) => n !== 1)).toEqual([]);
}

describe('scale-out and scale-in while creates are slow', () => {
  test.concurrent.each([
    ['at-least-once', 'a slow API'],
    ['exactly-once', 'a slow API'],
    ['at-least-once', 'a saturated rate limit'],
    ['exactly-once', 'a saturated rate limit'],
  ] as const)(
    'submits no document twice (%s, %s)',
    async (delivery, slowness) => {
      const env = new E2E(PARTITIONS);
      await env.start({ processing: { distribution: 'fixed', meanMs: 300 } });
      try {
        await scaleOutAndIn(env, delivery, slowness);
      } finally {
        await env.stop();
      }
    },
    400_000,
  );
});
