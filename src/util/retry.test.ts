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

  it('does not count transient failure against the attempts: only the budget bounds it', async () => {
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

  it('tries again at once when told the caller already waited', async () => {
    const waits: number[] = [];
    const r = await run((n) => n < 3, {
      classify: () => ({ retry: true, immediately: true }),
      onRetry: (_e, _t, delay) => waits.push(delay),
    });
    expect([r.outcome, waits]).toEqual(['ok', [0, 0]]);
  });

  it('waits the first back-off before the first try when asked, then goes on from the second', async () => {
    const waits: number[] = [];
    const started: number[] = [];
    const clock = new FakeClock();
    const pending = retry(
      async (n) => {
        started.push(clock.now());
        if (n < 3) throw boom();
      },
      {
        backoff,
        waitFirst: true,
        classify: () => ({ retry: true }),
        clock,
        random: () => 0.5,
        onRetry: (_e, _t, d) => waits.push(d),
      },
    );
    await clock.advance(10_000);
    await pending;
    // equal jitter at 0.5: three quarters of 100, 200, 400
    expect([started[0], waits]).toEqual([75, [150, 300]]);
  });

  it('cuts the last wait to the budget and tries once more at it when asked', async () => {
    const r = await run(() => true, {
      budgetMs: 1000,
      backoff: { initialMs: 400, maxMs: 400, jitter: false },
      lastTryAtBudget: true,
    });
    // tries at 0, 400, 800 and 1000 (the last wait cut to 200)
    expect([r.tries, r.ended]).toEqual([4, 'budget']);
  });
});
