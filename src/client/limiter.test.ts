import { FakeClock } from './test-helpers.js';
import { AdaptiveRateLimiter } from './limiter.js';

function releases(limiter: AdaptiveRateLimiter, clock: FakeClock, count: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < count; i++) void limiter.acquire().then(() => times.push(clock.now()));
  return times;
}

describe('AdaptiveRateLimiter', () => {
  it('spaces releases at the configured rate', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, clock });
    const times = releases(limiter, clock, 5);
    await clock.advance(1000);
    expect(times).toEqual([0, 100, 200, 300, 400]);
  });

  it('allows a burst after idling, then spaces', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, burst: 3, clock });
    const times = releases(limiter, clock, 5);
    await clock.advance(1000);
    expect(times).toEqual([0, 0, 0, 100, 200]);
  });

  it('halves the rate once for a round of 429s and pauses everyone for Retry-After', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, minRatePerSecond: 1, clock });
    const first = releases(limiter, clock, 3);
    await clock.advance(250);
    expect(first).toEqual([0, 100, 200]);

    // Three requests released in the same round all come back 429: one decrease, not three.
    limiter.onRateLimited(0, 1000);
    limiter.onRateLimited(100, 1000);
    limiter.onRateLimited(200, 1000);
    expect(limiter.currentRate()).toBe(5);

    const second = releases(limiter, clock, 3);
    await clock.advance(2000);
    // Nobody goes before the pause ends at 250 + 1000; then spacing is 1/5 s.
    expect(second).toEqual([1250, 1450, 1650]);

    // A 429 for a request released after the decrease is a new signal.
    limiter.onRateLimited(1650);
    expect(limiter.currentRate()).toBe(2.5);
  });

  it('never drops below the floor', () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 8, minRatePerSecond: 3, clock });
    for (let i = 0; i < 5; i++) limiter.onRateLimited(Number.POSITIVE_INFINITY);
    expect(limiter.currentRate()).toBe(3);
  });

  it('recovers additively with successes, up to the ceiling and no further', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 20, increasePerSecond: 2, clock });
    limiter.onRateLimited(0);
    expect(limiter.currentRate()).toBe(10);
    await clock.advance(1000);
    limiter.onSuccess();
    expect(limiter.currentRate()).toBeCloseTo(12);
    await clock.advance(2000);
    limiter.onSuccess();
    expect(limiter.currentRate()).toBeCloseTo(16);
    await clock.advance(10_000);
    limiter.onSuccess();
    expect(limiter.currentRate()).toBe(20);
  });

  it('does not recover while paused', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 20, increasePerSecond: 2, clock });
    limiter.onRateLimited(0, 3000);
    await clock.advance(3000);
    limiter.onSuccess();
    expect(limiter.currentRate()).toBe(10);
    await clock.advance(1000);
    limiter.onSuccess();
    expect(limiter.currentRate()).toBeCloseTo(12);
  });

  it('applies a lower rate to callers already waiting', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, clock });
    const times = releases(limiter, clock, 4);
    await clock.advance(50);
    expect(times).toEqual([0]);
    limiter.onRateLimited(0);
    await clock.advance(1000);
    // The slot at 100 was scheduled before the decrease; after it, spacing is 200 ms.
    expect(times).toEqual([0, 100, 300, 500]);
  });

  it('rejects nonsense settings', () => {
    expect(() => new AdaptiveRateLimiter({ ratePerSecond: 0 })).toThrow(RangeError);
    expect(() => new AdaptiveRateLimiter({ ratePerSecond: 5, decreaseFactor: 1 })).toThrow(RangeError);
  });

  describe('tryAcquire (a free slot without waiting)', () => {
    it('takes a free slot at once and spaces like acquire', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, burst: 2, clock });
      expect(limiter.tryAcquire()).toBe(0);
      expect(limiter.tryAcquire()).toBe(0);
      expect(limiter.tryAcquire()).toBeUndefined();
      // The next slot is where acquire would release it.
      const times = releases(limiter, clock, 1);
      await clock.advance(1000);
      expect(times).toEqual([100]);
      await clock.advance(1000);
      expect(limiter.tryAcquire()).toBe(2000);
    });

    it('never goes ahead of a caller already waiting', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, clock });
      expect(limiter.tryAcquire()).toBe(0);
      const waiting = releases(limiter, clock, 2);
      await clock.advance(150);
      expect(waiting).toEqual([100]);
      // A slot is free in time, but one caller still waits for the one after it.
      expect(limiter.tryAcquire()).toBeUndefined();
      await clock.advance(100);
      expect(waiting).toEqual([100, 200]);
    });

    it('respects a Retry-After pause', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, burst: 5, clock });
      expect(limiter.tryAcquire()).toBe(0);
      limiter.onRateLimited(0, 1000);
      await clock.advance(999);
      expect(limiter.tryAcquire()).toBeUndefined();
      await clock.advance(1);
      expect(limiter.tryAcquire()).toBe(1000);
    });

    it('keeps the rate whatever the mix of tryAcquire and acquire', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 20, burst: 3, clock });
      const times: number[] = [];
      for (let step = 0; step < 200; step++) {
        const taken = limiter.tryAcquire();
        if (taken !== undefined) times.push(taken);
        else if (step % 3 === 0) void limiter.acquire().then((at) => times.push(at));
        await clock.advance(7);
      }
      await clock.advance(5000);
      // In any window of w ms at most burst + w / interval calls go (GCRA), and none twice at once beyond the burst.
      const sorted = [...times].sort((a, b) => a - b);
      for (let i = 0; i < sorted.length; i++) {
        for (let j = i; j < sorted.length && sorted[j]! - sorted[i]! <= 1000; j++) {
          expect(j - i + 1).toBeLessThanOrEqual(3 + Math.floor((sorted[j]! - sorted[i]!) / 50));
        }
      }
      expect(sorted.length).toBeGreaterThan(60);
    });
  });

  describe('share of a group', () => {
    it('spaces releases at the share of the configured rate', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      limiter.setShare(1, 4);
      expect(limiter.currentCeiling()).toBe(10);
      expect(limiter.currentRate()).toBe(10);
      const times = releases(limiter, clock, 4);
      await clock.advance(1000);
      expect(times).toEqual([0, 100, 200, 300]);
    });

    it('adds up to the configured rate across the members of a group', () => {
      const clock = new FakeClock();
      const shares = [
        [2, 4],
        [1, 4],
        [1, 4],
      ] as const;
      const ceilings = shares.map(([owned, total]) => {
        const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
        limiter.setShare(owned, total);
        return limiter.currentCeiling();
      });
      expect(ceilings).toEqual([20, 10, 10]);
    });

    it('keeps a rate lowered by 429s as far below the new ceiling as it was below the old one', () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      limiter.onRateLimited(0);
      expect(limiter.currentRate()).toBe(20);
      limiter.setShare(1, 2);
      expect(limiter.currentCeiling()).toBe(20);
      expect(limiter.currentRate()).toBe(10);
      limiter.setShare(2, 2);
      expect(limiter.currentRate()).toBe(20);
    });

    it('still halves on a 429 and recovers only up to the shared ceiling', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      limiter.setShare(1, 2);
      limiter.onRateLimited(0);
      expect(limiter.currentRate()).toBe(10);
      // Recovery follows the share too: 40/20 per second for the whole rate, half of it here.
      await clock.advance(1000);
      limiter.onSuccess();
      expect(limiter.currentRate()).toBeCloseTo(11);
      await clock.advance(60_000);
      limiter.onSuccess();
      expect(limiter.currentRate()).toBe(20);
    });

    it('gives an instance without partitions the floor, and the whole rate back with 1 of 1', () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, minRatePerSecond: 2, clock });
      limiter.setShare(0, 4);
      expect(limiter.currentCeiling()).toBe(2);
      expect(limiter.currentRate()).toBe(2);
      limiter.setShare(1, 1);
      expect(limiter.currentCeiling()).toBe(40);
      expect(limiter.currentRate()).toBe(40);
      expect(limiter.share()).toEqual({ owned: 1, total: 1 });
    });

    it('applies a smaller share to callers already waiting', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10, clock });
      const times = releases(limiter, clock, 4);
      await clock.advance(50);
      expect(times).toEqual([0]);
      limiter.setShare(1, 2);
      await clock.advance(1000);
      // The slot at 100 was scheduled before the change; after it, spacing is 1/5 s.
      expect(times).toEqual([0, 100, 300, 500]);
    });

    it('rejects a share that is not a part of a whole', () => {
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 10 });
      expect(() => limiter.setShare(3, 2)).toThrow(RangeError);
      expect(() => limiter.setShare(1, 0)).toThrow(RangeError);
      expect(() => limiter.setShare(-1, 2)).toThrow(RangeError);
      expect(() => limiter.setShare(0.5, 2)).toThrow(RangeError);
    });
  });
});
