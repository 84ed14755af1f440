/**
 * connector.delivery = exactly-once on the real stack: results through transactions, read by the
 * harness' output reader (kafkajs, read_committed), and a zombie fenced: an instance stopped (SIGSTOP)
 * past its session while a new owner takes its partitions writes nothing visible once it resumes.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const EOS = { connector: { delivery: 'exactly-once', transactionLingerMs: 20 } };

/** Waits until the test's consumer group has no member (a paused member's session has lapsed). */
async function groupEmpty(env: E2E, timeoutMs: number): Promise<void> {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    while ((await admin.describeGroup(`${env.id}-group`)).members > 0) {
      if (Date.now() > deadline) throw new Error(`the group still lists a member after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await admin.disconnect();
  }
}

function countBy(values: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return m;
}

describe('exactly-once delivery', () => {
  const env = new E2E(3);
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 3000 } });
    await env.collect();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('publishes each result once, in transactions with its state records', async () => {
    const file = await env.writeFile('eos-plain.pdf', await sampleBytes('clean-pdf'));
    const connector = await env.startConnector(EOS);
    const ids = Array.from({ length: 6 }, (_, i) => `evt-eos-plain-${i}`);
    await env.produce(
      ids.map((id) => arrival(id, file)),
      (i) => ids[i]!,
    );
    await waitFor(
      'a fraud result per document',
      () => ids.every((id) => env.on('fraud').some((o) => o.headers.event_id === id)),
      60_000,
    );
    await connector.stop();
    const frauds = env.on('fraud').filter((o) => ids.includes(o.headers.event_id!));
    expect(countBy(frauds.map((o) => o.headers.event_id!)).size).toBe(ids.length);
    expect(frauds).toHaveLength(ids.length);
  }, 120_000);

  it('fences a paused instance: after SIGCONT none of its output becomes visible to read_committed', async () => {
    const bytes = await sampleBytes('clean-pdf');
    const file = await env.writeFile('eos.pdf', bytes);
    const zombie = env.spawnConnector({
      ...EOS,
      kafka: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 },
      connector: { ...EOS.connector, pollInitialMs: 200 },
    });
    const ids = Array.from({ length: 12 }, (_, i) => `evt-eos-zombie-${i}`);
    await env.produce(
      ids.map((id) => arrival(id, file)),
      (i) => ids[i]!,
    );
    // Every document created and uploaded by the first instance; its results are seconds away. Uploaded,
    // not just created: the upload starts once the submission's state is recorded, and a submission
    // created but not yet recorded when the instance stops is submitted again by the next owner (as
    // after a crash; document-life.ts), which is not what this test is about.
    const uploaded = async (id: string) =>
      (await env.submissions(id)).some((s) => s.state !== 'awaiting_upload');
    for (const id of ids) {
      const deadline = Date.now() + 60_000;
      while (!(await uploaded(id))) {
        if (Date.now() > deadline) throw new Error(`no submission for ${id}: ${env.childLogs[0]?.join('')}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    zombie.kill('SIGSTOP');
    try {
      // Past its session: the group drops it, and then the new owner gets every partition and
      // initialises their transactional ids.
      await groupEmpty(env, 60_000);
      await env.startConnector({ ...EOS, kafka: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 } });
      await waitFor(
        'one fraud result per document from the new owner',
        () => ids.every((id) => env.forEvent(id).length >= 1),
        90_000,
      );
    } finally {
      zombie.kill('SIGCONT');
    }
    // The zombie's timers fire now: its polls find the results and it tries to publish and commit, and
    // is refused as fenced (the line transactions.ts logs). Then every transaction it may have opened
    // has ended before the collector reads up to its markers (read_committed).
    await waitFor(
      'the paused instance to be fenced',
      () => /fenced: another instance owns this partition/.test(env.childLogs[0]!.join('')),
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; its log: ${env.childLogs[0]!.join('').slice(-3000)}`);
    });
    await env.waitForOutputsRead();
    const mine = env.on('fraud').filter((o) => ids.includes(o.headers.event_id!));
    const perEvent = countBy(mine.map((o) => o.headers.event_id!));
    expect([...perEvent.keys()].sort()).toEqual([...ids].sort());
    expect([...perEvent.values()].every((n) => n === 1)).toBe(true);
    // Each document was submitted once: the new owner resumed the zombie's submissions.
    for (const id of ids) expect(await env.submissions(id)).toHaveLength(1);
    expect(env.on('dlq')).toHaveLength(0);
  }, 180_000);
});
