import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

// Long enough that the other results are out before it on a loaded CI machine (3 s once was not, nor
// 6 s with four integration files at a time beside other work: a poll/deadline_exceeded dead letter),
// so that the decision is all that is missing when it fires.
const DEADLINE_MS = 10_000;

describe('deadline: every document ends by its deadline whatever the settings', () => {
  const env = new E2E(1);
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 200 } });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('dead-letters decision/deadline when polling is off and no webhook comes, and frees the slots', async () => {
    // No webhook target at the sandbox and no receiver: the decision can only be missing.
    const connector = await env.startConnector({
      connector: { decisionPolling: false, deadlineMs: DEADLINE_MS },
    });
    await env.collect();
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const waiting = ['dl-0', 'dl-1', 'dl-2', 'dl-3'];
    const produced = Date.now();
    await env.produce([
      ...waiting.map((id) => arrival(id, file, { enable_decision: true })),
      arrival('dl-plain', file),
    ]);

    await waitFor('a dead letter for every decision document', () => env.on('dlq').length >= 4, 30_000);
    await waitFor('no document in flight', () => connector.engine.inFlight === 0, 10_000);
    const deadLetters = env.on('dlq');
    expect(deadLetters.map((l) => l.value.event_id).sort()).toEqual(waiting);
    for (const l of deadLetters) {
      expect(l.value).toMatchObject({ stage: 'decision', error_code: 'deadline' });
      // Not before the deadline: the timer counts from the document's creation, after it was produced.
      expect(new Date(l.value.failed_at as number | Date).getTime()).toBeGreaterThanOrEqual(
        produced + DEADLINE_MS,
      );
    }
    // Everything else of those documents was published; the document without a decision just finished.
    await waitFor('the other results', () => env.on('classification').length >= 5, 10_000);
    expect(new Set(env.on('fraud').map((f) => f.headers.event_id))).toEqual(
      new Set([...waiting, 'dl-plain']),
    );
    expect(env.on('decision')).toEqual([]);
    expect(env.forEvent('dl-plain').some((o) => o.topic === env.topics.dlq)).toBe(false);
    expect((await connector.metrics.inFlight.get()).values[0]?.value).toBe(0);
    const failed = (await connector.metrics.failed.get()).values.find(
      (v) => v.labels.stage === 'decision' && v.labels.reason === 'deadline',
    );
    expect(failed?.value).toBe(4);
  });
});
