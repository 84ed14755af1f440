import { FakeClock } from '../client/test-helpers.js';
import { retry } from './retry.js';

const backoff = { initialMs: 100, maxMs: 1000 };
const boom = () => new Error('boom');

/** Runs `retry` on the fake clock until it settles; returns its outcome and the tries made. */
async function run(
  fail: (tries: number) => boolean,
  options: Partial<Parameters<typeof retry>[1]>,
): Promise<{ outcome: unknown; tries: number; ended?: string; at: number }> {
  const clock = new FakeClock();
  let tries = 0;
  let ended: string | undefined;
  const pending = retry(
    async (n) => {
      tries = n;
      if (fail(n)) throw boom();
      return 'ok';
    },
    {
      backoff,
      classify: () => ({ retry: true }),
      clock,
      random: () => 0.5,
      onGiveUp: (_e, _t, why) => (ended = why),
      ...options,
    },
  ).catch((e: unknown) => e);
  await clock.advance(120_000);
  return { outcome: await pending, tries, ended, at: clock.now() };
}

describe('retry', () => {
  it('tries again after a failure and returns the first success', async () => {
    const r = await run((n) => n < 3, { attempts: 5 });
    expect([r.outcome, r.tries]).toEqual(['ok', 3]);
  });

  it('stops after the counted attempts, throwing the last error', async () => {
    const r = await run(() => true, { attempts: 4 });
    expect(r.outcome).toBeInstanceOf(Error);
    expect([r.tries, r.ended]).toEqual([4, 'attempts']);
  });

  it('does not count weather against the attempts: only the budget bounds it', async () => {
    const r = await run(() => true, {
      attempts: 2,
      budgetMs: 10_000,
      classify: () => ({ retry: true, counts: false }),
    });
    expect(r.ended).toBe('budget');
    expect(r.tries).toBeGreaterThan(5);
  });

  it('gives up at once on a final failure', async () => {
    const r = await run(() => true, { classify: () => ({ retry: false }) });
    expect([r.tries, r.ended]).toEqual([1, 'final']);
  });

  it('waits at least the time the other side named, spread by jitter', async () => {
    const waits: number[] = [];
    for (const random of [0, 0.5, 1]) {
      await run((n) => n < 2, {
        random: () => random,
        classify: () => ({ retry: true, counts: false, notBeforeMs: 1000 }),
        onRetry: (_e, _t, delay) => waits.push(delay),
      });
    }
    expect(waits).toEqual([1000, 1250, 1500]);
  });
});
