/**
 * Two instances of one group share one API limit on the real stack: each holds one of the two input
 * partitions, so each starts at half the configured rate; while only one partition has work, its
 * owner gets the whole limit (from the group's offsets) and the other keeps the floor; once
 * everything is done both are back at their share of the partitions.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { partitionOfKey } from '../../src/kafka/partitioner.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const RATE = 40;

describe('two instances sharing one API limit, the work on one partition only', () => {
  const env = new E2E(2);
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 3000 } });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('the busy partition’s owner gets the whole limit, the idle member the floor, then both half', async () => {
    const settings = { api: { ratePerSecond: RATE }, connector: { groupShareIntervalMs: 200 } };
    const members = [await env.startConnector(settings), await env.startConnector(settings)];
    const ceilings = () => members.map((m) => m.client.limiter.currentCeiling());
    await waitFor(
      'both members holding one partition',
      () => ceilings().every((c) => c === RATE / 2),
      40_000,
    );
    await env.collect();

    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const keys = Array.from({ length: 400 }, (_, i) => `share-${i}`)
      .filter((k) => partitionOfKey(k, 2) === 0)
      .slice(0, 20);
    await env.produce(
      keys.map((k) => arrival(`evt-${k}`, file)),
      (i) => keys[i]!,
    );
    // Processing takes 3 s: the documents are in flight long enough for several readings.
    await waitFor(
      'the owner of partition 0 at the whole limit, the other at the floor',
      () => [...ceilings()].sort((a, b) => a - b).join() === `1,${RATE}`,
      20_000,
    );
    const owner = ceilings().indexOf(RATE);
    expect(env.sandbox.stats().rateLimited).toBe(0);

    await waitFor(
      'every result',
      () => new Set(env.on('fraud').map((o) => o.key)).size === keys.length,
      60_000,
    );
    await waitFor('both back at half', () => ceilings().every((c) => c === RATE / 2), 20_000);
    expect(owner).toBeGreaterThanOrEqual(0);
    expect(members[owner]!.client.limiter.share()).toEqual({ owned: 1, total: 2 });
  });
});
