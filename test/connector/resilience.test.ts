/**
 * Crashes, rebalances and rate limits on the real stack: whatever happens to the connector, every
 * document ends with exactly one result set and exactly one submission (per event_id = query_id).
 * The scenarios run side by side (each has its own topics, group and sandbox): they mostly wait.
 */
import type { ChildProcess } from 'node:child_process';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const FRAUD_KINDS = ['classification', 'fraud', 'quality'];

/** Asserts one submission per event, one submission id across its results, and every awaited kind. */
async function expectExactlyOnce(env: E2E, ids: string[], kinds: string[]): Promise<void> {
  const stats = env.sandbox.stats();
  const counts = Object.values(stats.submissionsByQueryId);
  expect(Object.keys(stats.submissionsByQueryId).sort()).toEqual([...ids].sort());
  expect(counts.filter((n) => n !== 1)).toEqual([]);
  const byEvent = new Map<string, { keys: Set<string>; kinds: Set<string> }>();
  for (const o of env.outputs) {
    const id = o.headers.event_id!;
    const entry = byEvent.get(id) ?? { keys: new Set(), kinds: new Set() };
    entry.keys.add(o.key!);
    entry.kinds.add(env.kindOf(o)!);
    byEvent.set(id, entry);
  }
  const wrong = ids.filter((id) => {
    const e = byEvent.get(id);
    return !e || e.keys.size !== 1 || [...e.kinds].sort().join() !== kinds.join();
  });
  expect(wrong).toEqual([]);
  expect(env.on('dlq')).toEqual([]);
}

/** Distinct (topic, key) pairs: re-emission of a result is allowed, a second submission is not. */
function distinctResults(env: E2E): number {
  return new Set(env.outputs.map((o) => `${o.topic}\u0000${o.key}`)).size;
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

async function committedTotal(env: E2E): Promise<number> {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.groupOffsets(`${env.id}-group`, env.topics.arrived);
    return [...offsets.values()].reduce((n, o) => n + Number(o ?? 0), 0);
  } finally {
    await admin.disconnect();
  }
}

/**
 * The session timeout of the SIGKILL scenario's connectors: the killed member holds its partitions
 * until its session ends, so this is how long the new instance waits before it takes them over. An
 * idle member heartbeats only about every 5 s (kafkajs's fetch wait), so it keeps a margin over that.
 */
const KILLED_SESSION_TIMEOUT_MS = 8000;

describe('crashes, rebalances and rate limits', () => {
  const envs: E2E[] = [];
  // The environments of scenarios that failed (a passed one stops its own at its end).
  afterAll(async () => {
    await Promise.all(envs.map((e) => e.stop()));
  });

  async function start(env: E2E, sandboxConfig: Parameters<E2E['start']>[0]): Promise<E2E> {
    envs.push(env);
    return env.start(sandboxConfig);
  }

  /** Stops a passed scenario's environment at once, while the others still run. */
  async function release(env: E2E): Promise<void> {
    envs.splice(envs.indexOf(env), 1);
    await env.stop();
  }

  test.concurrent(
    'SIGKILL with hundreds of documents in flight: a new instance finishes every document without submitting any twice',
    async () => {
      const env = await start(new E2E(), {
        processing: { distribution: 'uniform', minMs: 1500, maxMs: 2500 },
      });
      const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
      const ids = Array.from({ length: 300 }, (_, i) => `evt-kill-${i}`);
      await env.produce(ids.map((id) => arrival(id, file)));
      const overrides = {
        connector: { maxInFlight: 500 },
        api: { ratePerSecond: 400 },
        kafka: { sessionTimeoutMs: KILLED_SESSION_TIMEOUT_MS },
      };
      const first = env.spawnConnector(overrides);
      await waitFor('the first submissions', () => env.sandbox.stats().submissionsCreated > 0, 30_000);
      await env.collect();
      // Every record admitted (its state durable, its offset committed): kill in the middle of uploads
      // and polling, outside the documented window between a creation and its state record.
      const deadline = Date.now() + 40_000;
      while ((await committedTotal(env)) < ids.length) {
        if (Date.now() > deadline) throw new Error('the first instance did not admit every record');
        await new Promise((r) => setTimeout(r, 50));
      }
      first.kill('SIGKILL');
      await exited(first);
      const atKill = distinctResults(env);
      expect(atKill).toBeLessThan(ids.length * 3);

      env.spawnConnector(overrides);
      await waitFor('every result', () => distinctResults(env) >= ids.length * 3, 50_000);
      await expectExactlyOnce(env, ids, FRAUD_KINDS);
      await release(env);
    },
  );

  test.concurrent(
    'two instances in one group, one stopped mid-run: the survivor takes the partitions over, nothing lost, nothing submitted twice',
    async () => {
      const env = await start(new E2E(3), {
        processing: { distribution: 'uniform', minMs: 1000, maxMs: 2000 },
      });
      const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
      const ids = Array.from({ length: 150 }, (_, i) => `evt-group-${i}`);
      const a = env.spawnConnector();
      const b = env.spawnConnector();
      // Both join before the input arrives, so both own partitions when the work starts.
      const admin = env.kafka.admin();
      await admin.connect();
      try {
        const deadline = Date.now() + 40_000;
        for (;;) {
          const g = await admin.describeGroup(`${env.id}-group`);
          if (g.state === 'Stable' && g.members === 2) break;
          if (Date.now() > deadline) throw new Error(`the group did not settle with 2 members: ${g.state}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        await admin.disconnect();
      }
      await env.produce(
        ids.map((id) => arrival(id, file)),
        (i) => `key-${i}`,
      );
      await waitFor('the first submissions', () => env.sandbox.stats().submissionsCreated >= 40, 30_000);
      await env.collect();
      a.kill('SIGTERM');
      const code = await exited(a);
      if (code !== 0) console.log(env.childLogs[0]!.join(''));
      expect(code).toBe(0);
      expect(b.exitCode).toBeNull();
      await waitFor('every result', () => distinctResults(env) >= ids.length * 3, 50_000);
      await expectExactlyOnce(env, ids, FRAUD_KINDS);
      await release(env);
    },
  );

  test.concurrent(
    'a 429 storm and a low rate limit: everything completes and nothing goes to the dead-letter topic',
    async () => {
      const env = await start(new E2E(), { rateLimit: { ratePerSecond: 10, burst: 10 } });
      const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
      const ids = Array.from({ length: 30 }, (_, i) => `evt-storm-${i}`);
      await env.startConnector({ api: { ratePerSecond: 50 } });
      await env.collect();
      await env.produce(ids.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
      await waitFor('the first submissions', () => env.sandbox.stats().submissionsCreated >= 5, 20_000);
      env.sandbox.configure({ faults: { storm429: { durationMs: 3000 } } });
      await waitFor('every result', () => distinctResults(env) >= ids.length, 50_000);
      await expectExactlyOnce(env, ids, ['quality']);
      expect(env.sandbox.stats().rateLimited).toBeGreaterThan(0);
      await release(env);
    },
  );

  test.concurrent(
    '5xx and dropped connections on every endpoint, creates included: creates whose answer was lost are retried, no good document dead-lettered, none analysed twice',
    async () => {
      const env = await start(new E2E(), { faults: { errorRate: 0.2, dropRate: 0.05 } });
      const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
      const ids = Array.from({ length: 30 }, (_, i) => `evt-5xx-${i}`);
      await env.startConnector({ api: { ratePerSecond: 100 } });
      await env.collect();
      await env.produce(ids.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
      await waitFor('every result', () => distinctResults(env) >= ids.length, 90_000);
      expect(env.on('dlq')).toEqual([]);
      const stats = env.sandbox.stats();
      const createFaults = Object.entries(stats.requests)
        .filter(([k]) => k.startsWith('POST /v2/submission ') && / 5\d\d$/.test(k))
        .reduce((n, [, c]) => n + c, 0);
      expect(createFaults + stats.droppedConnections).toBeGreaterThan(0);
      // Each event's file went to exactly one submission (the sandbox shows a sha256 once uploaded).
      const res = await fetch(`${env.sandbox.baseUrl}/_sandbox/submissions`);
      const { items } = (await res.json()) as { items: Array<{ query_id: string; sha256: string | null }> };
      const uploads = new Map<string, number>();
      for (const s of items) if (s.sha256) uploads.set(s.query_id, (uploads.get(s.query_id) ?? 0) + 1);
      expect([...uploads.keys()].sort()).toEqual([...ids].sort());
      expect([...uploads.values()].filter((n) => n !== 1)).toEqual([]);
      await release(env);
    },
  );
});
