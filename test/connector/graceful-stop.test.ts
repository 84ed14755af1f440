/**
 * A graceful stop on the real stack: the connector settles its documents' steps and commits its
 * offsets while it is still a member of its group, then leaves. Its offsets are committed by that
 * final commit alone (the interval commit is pushed out of reach), and the next instance of the
 * group finishes the documents that were running, each with one submission and one fraud result.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

describe('graceful stop', () => {
  const env = new E2E();
  beforeAll(async () => {
    // Results take 1.5 s: documents are still running when the first instance stops.
    await env.start({ processing: { distribution: 'fixed', meanMs: 1500 } });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('commits the offsets it took before leaving the group; the next instance publishes each result once', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const ids = Array.from({ length: 10 }, (_, i) => `evt-graceful-${i}`);
    const settings = { connector: { commitIntervalMs: 600_000 } };
    const first = await env.startConnector(settings);
    await env.collect();
    await env.produce(ids.map((id) => arrival(id, file)));
    const submitted = async () =>
      (await Promise.all(ids.map(async (id) => (await env.submissions(id)).length))).every((c) => c === 1);
    for (const until = Date.now() + 60_000; !(await submitted());) {
      if (Date.now() > until) throw new Error('the documents were not all submitted within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const running = first.engine.inFlight;
    await first.stop();

    const admin = env.kafka.admin();
    await admin.connect();
    try {
      const [ends, commits] = await Promise.all([
        admin.topicOffsets(env.topics.arrived),
        admin.groupCommits(`${env.id}-group`, env.topics.arrived),
      ]);
      for (const { partition, high } of ends) expect(commits.get(partition)?.offset).toBe(high);
    } finally {
      await admin.disconnect();
    }

    const next = await env.startConnector(settings);
    await waitFor('a fraud result for every document', () =>
      ids.every((id) => env.on('fraud').some((r) => r.headers.event_id === id)),
    );
    // Its interval commit is out of reach, so the committed offsets cannot show progress: every document
    // it resumed has ended (its outputs are published) once none runs, and then the outputs are read
    // back; a second submission or a second result would be seen below.
    await waitFor('no document running in the next instance', () => next.engine.inFlight === 0, 60_000);
    await env.waitForOutputsRead();
    const counts = await Promise.all(ids.map(async (id) => (await env.submissions(id)).length));
    expect(counts).toEqual(ids.map(() => 1));
    expect(
      env
        .on('fraud')
        .map((r) => r.headers.event_id)
        .sort(),
    ).toEqual([...ids].sort());
    expect(running).toBeGreaterThan(0);
  });
});

describe('graceful stop while creates wait behind a saturated rate limit', () => {
  const env = new E2E();
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 300 } });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('sends no create once the stop began: the next instance submits the rest, each document once', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const ids = Array.from({ length: 12 }, (_, i) => `evt-stop-limited-${i}`);
    // The API grants one call a second, and the stop's settling (three quarters of 3 s) ends before
    // the creates queued behind that limit could all go out.
    const settings = { connector: { delivery: 'exactly-once', shutdownTimeoutMs: 3000 } };
    env.sandbox.configure({ rateLimit: { ratePerSecond: 1, burst: 1 } });
    const first = await env.startConnector(settings);
    await env.collect();
    await env.produce(
      ids.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })),
      (i) => `k${i}`,
    );
    const created = () => Object.values(env.sandbox.stats().submissionsByQueryId).reduce((a, b) => a + b, 0);
    await waitFor('a first create', () => created() >= 1, 60_000);
    await first.stop();
    const atStop = created();
    // In-process, a create still queued when the stop gave up its wait would go out now.
    await new Promise((r) => setTimeout(r, 4000));
    expect(created()).toBe(atStop);

    env.sandbox.configure({ rateLimit: null });
    await env.startConnector(settings);
    await waitFor(
      'a quality result for every document',
      () => ids.every((id) => env.on('quality').some((r) => r.headers.event_id === id)),
      120_000,
    );
    const counts = env.sandbox.stats().submissionsByQueryId;
    expect(ids.map((id) => counts[id] ?? 0)).toEqual(ids.map(() => 1));
    expect(env.on('dlq')).toEqual([]);
    expect(atStop).toBeLessThan(ids.length);
  });
});
