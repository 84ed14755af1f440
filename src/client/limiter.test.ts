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
});
