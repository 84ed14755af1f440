import { FakeClock } from './test-helpers.js';
import { AdaptiveRateLimiter } from './limiter.js';

function releases(limiter: AdaptiveRateLimiter, clock: FakeClock, count: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < count; i++) void limiter.acquire().then(() => times.push(clock.now()));
  return times;
}

/** A limiter that starts at its ceiling (no slow start), for the spacing tests. */
function fixed(ratePerSecond: number, clock: FakeClock, burst?: number): AdaptiveRateLimiter {
  return new AdaptiveRateLimiter({
    ratePerSecond,
    initialRatePerSecond: ratePerSecond,
    clock,
    ...(burst === undefined ? {} : { burst }),
  });
}

/** A clock whose timers all fire `lateMs` after they were due (a busy event loop). */
class LateClock extends FakeClock {
  constructor(private readonly lateMs: number) {
    super();
  }
  override sleep(ms: number): Promise<void> {
    return super.sleep(ms + this.lateMs);
  }
}

/** The API's side: a token bucket of `ratePerSecond` (changeable) holding `burst` tokens. */
class Bucket {
  private tokens: number;
  private at = 0;
  constructor(
    public ratePerSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  take(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.ratePerSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

interface Outcome {
  accepted: number[];
  refused: number;
}

/** Small seeded generator of numbers in [0, 1), so a jittered run is the same every time. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/** A clock whose timers fire up to `lateMs` late, a random amount each time (a busy event loop). */
class JitteryClock extends FakeClock {
  constructor(
    private readonly lateMs: number,
    private readonly random: () => number,
  ) {
    super();
  }
  override sleep(ms: number): Promise<void> {
    return super.sleep(ms + this.random() * this.lateMs);
  }
}

/**
 * Callers that always have work (`workers` of them per limiter), each call answered by `bucket` 20 ms
 * after its release; a refused call goes again. Runs `ms` of fake time. With `arrival`, each call
 * reaches the bucket that many ms after its release (a network that does not keep the spacing).
 */
async function drive(
  limiters: AdaptiveRateLimiter[],
  bucket: Bucket,
  clock: FakeClock,
  ms: number,
  workers = 50,
  onTick?: (now: number) => void,
  arrival?: () => number,
): Promise<Outcome> {
  const outcome: Outcome = { accepted: [], refused: 0 };
  let running = true;
  const worker = async (limiter: AdaptiveRateLimiter) => {
    while (running) {
      const releasedAt = await limiter.acquire();
      const delay = arrival?.() ?? 0;
      await clock.sleep(delay);
      const taken = bucket.take(arrival ? clock.now() : releasedAt);
      await clock.sleep(20);
      if (taken) {
        limiter.onSuccess();
        outcome.accepted.push(releasedAt);
      } else {
        outcome.refused += 1;
        limiter.onRateLimited(releasedAt);
      }
    }
  };
  for (const limiter of limiters) for (let i = 0; i < workers; i++) void worker(limiter);
  for (let t = 0; t < ms; t += 1000) {
    onTick?.(t);
    await clock.advance(1000);
  }
  running = false;
  return outcome;
}

function acceptedBetween(outcome: Outcome, from: number, to: number): number {
  return outcome.accepted.filter((t) => t >= from && t < to).length;
}

/** The longest stretch without an accepted call between `from` and `to`. */
function longestGap(outcome: Outcome, from: number, to: number): number {
  const times = outcome.accepted.filter((t) => t >= from && t < to).sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
  return gap;
}

describe('AdaptiveRateLimiter', () => {
  it('spaces releases at the current rate', async () => {
    const clock = new FakeClock();
    const limiter = fixed(10, clock);
    const times = releases(limiter, clock, 5);
    await clock.advance(1000);
    expect(times).toEqual([0, 100, 200, 300, 400]);
  });

  it('allows a configured burst back to back, then spaces', async () => {
    const clock = new FakeClock();
    const limiter = fixed(10, clock, 3);
    const times = releases(limiter, clock, 5);
    await clock.advance(1000);
    expect(times).toEqual([0, 0, 0, 100, 200]);
  });

  it('starts slowly (10/s) and grows with accepted calls to a ceiling of tens within a second of use', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 5000, clock });
    expect(limiter.currentRate()).toBe(10);
    const small = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
    expect(small.currentRate()).toBe(10);
    const rates: number[] = [];
    const outcome = await drive([small], new Bucket(1000, 1000), clock, 2000, 20, () =>
      rates.push(small.currentRate()),
    );
    // 10 → 40 (the ceiling) within the first second of use; never above the ceiling.
    expect(rates).toEqual([10, 40]);
    expect(acceptedBetween(outcome, 0, 1000)).toBeLessThanOrEqual(40);
    expect(acceptedBetween(outcome, 1000, 2000)).toBeGreaterThanOrEqual(39);
    expect(acceptedBetween(outcome, 1000, 2000)).toBeLessThanOrEqual(41);
  });

  it('grows from the first calls after a quiet spell while calls wait for the rate', async () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
    // One call (the API's health probe), answered, then ten quiet seconds: no longer a young limiter,
    // its last second holds nothing.
    await limiter.acquire();
    await clock.advance(10_000);
    const start = clock.now();
    const rates: number[] = [];
    const outcome = await drive([limiter], new Bucket(1000, 1000), clock, 2000, 20, () =>
      rates.push(limiter.currentRate()),
    );
    // 10 → 40 within the first second, as from a fresh start. Counting only the calls released over
    // the last second, the rate stood still until five had gone (half a second at 10/s).
    expect(rates[1]).toBe(40);
    expect(acceptedBetween(outcome, start, start + 1000)).toBeGreaterThanOrEqual(24);
  });

  it('does not lose rate to timers that fire late', async () => {
    const clock = new LateClock(6);
    const limiter = fixed(40, clock);
    const times: number[] = [];
    let running = true;
    const worker = async () => {
      while (running) times.push(await limiter.acquire());
    };
    for (let i = 0; i < 5; i++) void worker();
    await clock.advance(3000);
    running = false;
    // Every wake-up of the pump is 6 ms late: spacing from the wake-up would send 40 / (1 + 6/25) = 32/s.
    const inSecond = times.filter((t) => t >= 1000 && t < 2000).length;
    expect(inSecond).toBeGreaterThanOrEqual(39);
    expect(inSecond).toBeLessThanOrEqual(41);
  });

  it('starts afresh after a gap: a call after an idle spell gets no extra burst', async () => {
    const clock = new FakeClock();
    const limiter = fixed(10, clock);
    expect(limiter.tryAcquire()).toBe(0);
    await clock.advance(150);
    // 50 ms after its slot (100): longer than a late timer; the next slot is an interval from now.
    expect(limiter.tryAcquire()).toBe(150);
    expect(limiter.tryAcquire()).toBeUndefined();
    const times = releases(limiter, clock, 1);
    await clock.advance(200);
    expect(times).toEqual([250]);
  });

  it('lets calls of submitted documents go before new creates', async () => {
    const clock = new FakeClock();
    const limiter = fixed(10, clock);
    const order: string[] = [];
    void limiter.acquire('new').then(() => order.push('new 1'));
    void limiter.acquire('new').then(() => order.push('new 2'));
    void limiter.acquire('submitted').then(() => order.push('poll'));
    await clock.advance(1000);
    expect(order).toEqual(['new 1', 'poll', 'new 2']);
  });

  it('lets spare calls go only after creates and calls of submitted documents', async () => {
    const clock = new FakeClock();
    const limiter = fixed(10, clock);
    const order: string[] = [];
    void limiter.acquire('spare').then(() => order.push('spare 1'));
    void limiter.acquire('spare').then(() => order.push('spare 2'));
    void limiter.acquire('new').then(() => order.push('new'));
    void limiter.acquire('submitted').then(() => order.push('poll'));
    await clock.advance(1000);
    expect(order).toEqual(['spare 1', 'poll', 'new', 'spare 2']);
  });

  it('tells how much of the capacity is used and who waits (the poll schedule spends the rest)', async () => {
    const clock = new FakeClock();
    const limiter = fixed(20, clock);
    expect(limiter.headroom()).toEqual({
      capacityPerSecond: 20,
      usedPerSecond: 0,
      waiting: 0,
      ratePerSecond: 20,
    });
    for (let i = 0; i < 15; i++) void limiter.acquire();
    expect(limiter.headroom().waiting).toBeGreaterThan(0);
    await clock.advance(1000);
    const h = limiter.headroom();
    expect(h.waiting).toBe(0);
    // 15 released over the last second, counted in 100 ms slots (the oldest may have rolled off).
    expect(h.usedPerSecond).toBeGreaterThanOrEqual(12);
    expect(h.usedPerSecond).toBeLessThanOrEqual(15);
    // A 429 found the limit: the capacity is what the API accepted, not the ceiling.
    for (let i = 0; i < 10; i++) limiter.onSuccess();
    limiter.onRateLimited(clock.now());
    expect(limiter.headroom().capacityPerSecond).toBeLessThan(20);
  });

  it('remembers what the API accepted when it refused, and drops just below it, once per round', async () => {
    const clock = new FakeClock();
    const limiter = fixed(100, clock);
    // 30 calls accepted over 1.2 s (25 of them in the last second), then a round of 429s.
    for (let i = 0; i < 30; i++) {
      const at = limiter.tryAcquire() ?? (await limiter.acquire());
      expect(at).toBeGreaterThanOrEqual(0);
      limiter.onSuccess();
      await clock.advance(40);
    }
    limiter.onRateLimited(clock.now() - 10);
    limiter.onRateLimited(clock.now() - 5);
    // Counted in 100 ms slots: about 25.
    const found = limiter.limitFound() ?? 0;
    expect(found).toBeGreaterThanOrEqual(21);
    expect(found).toBeLessThanOrEqual(26);
    expect(limiter.currentRate()).toBeCloseTo(found * 0.9);
    // A 429 of a call released after the decrease is a new signal.
    limiter.onRateLimited(clock.now());
    expect(limiter.currentRate()).toBeLessThan(found * 0.9);
  });

  it('never drops below the floor', () => {
    const clock = new FakeClock();
    const limiter = new AdaptiveRateLimiter({ ratePerSecond: 8, minRatePerSecond: 3, clock });
    for (let i = 0; i < 20; i++) limiter.onRateLimited(Number.POSITIVE_INFINITY);
    expect(limiter.currentRate()).toBe(3);
  });

  it('rejects nonsense settings', () => {
    expect(() => new AdaptiveRateLimiter({ ratePerSecond: 0 })).toThrow(RangeError);
    expect(() => new AdaptiveRateLimiter({ ratePerSecond: 10, decreaseFactor: 1 })).toThrow(RangeError);
    expect(() => new AdaptiveRateLimiter({ ratePerSecond: 10, minRatePerSecond: 0 })).toThrow(RangeError);
    expect(() => new AdaptiveRateLimiter({ ratePerSecond: 10, initialRatePerSecond: 0 })).toThrow(RangeError);
  });

  // Four causes of bursts and waves found in an earlier limiter; each test fails on it.
  describe('what the old limiter got wrong', () => {
    it('sizes the burst from the current rate, not the ceiling: no wave after a decrease', async () => {
      const clock = new FakeClock();
      const limiter = fixed(5000, clock);
      // 40 calls accepted over a second, then refused: the API grants about 40/s.
      for (let i = 0; i < 40; i++) {
        await limiter.acquire();
        limiter.onSuccess();
        await clock.advance(25);
      }
      limiter.onRateLimited(clock.now());
      expect(limiter.currentRate()).toBeLessThan(100);
      await clock.advance(10_000);
      const times = releases(limiter, clock, 40);
      await clock.advance(100);
      // The old limiter let 100 calls (20 ms of 5000/s) go at once after a pause.
      expect(times.filter((t) => t === clock.now() - 100).length).toBeLessThanOrEqual(2);
    });

    it('rescales the schedule when the rate rises: no stall after many releases at a low rate', async () => {
      const clock = new FakeClock();
      const limiter = fixed(40, clock, 100);
      limiter.setShare(1, 4);
      const times = releases(limiter, clock, 200);
      await clock.advance(100);
      // 100 released at once (the configured burst) put the next slot 10 s ahead at 10/s.
      const before = times.length;
      limiter.setShare(4, 4);
      await clock.advance(200);
      // At 40/s the promise of 10 s at 10/s is 2.5 s; the old limiter waited for the old slot ~7 s.
      await clock.advance(2500);
      expect(times.length).toBeGreaterThan(before);
    });

    it('regains rate only with accepted calls, not over idle time', async () => {
      const clock = new FakeClock();
      const limiter = fixed(1000, clock);
      limiter.onRateLimited(0);
      const lowered = limiter.currentRate();
      await clock.advance(60_000);
      limiter.onSuccess();
      // The old limiter added ceiling/20 for each idle second: 20.8 → 747/s after one success.
      expect(limiter.currentRate()).toBeLessThan(lowered * 1.1);
    });

    it('does not hold every caller until one instant after a 429 with Retry-After', async () => {
      const clock = new FakeClock();
      const limiter = fixed(10, clock);
      expect(limiter.tryAcquire()).toBe(0);
      limiter.onRateLimited(0);
      const times = releases(limiter, clock, 3);
      await clock.advance(2000);
      // Spaced at the lowered rate from now on, none of them released together at a pause's end.
      expect(new Set(times).size).toBe(3);
      expect(times[0]).toBeLessThan(1000);
    });
  });

  describe('finding a limit the client is not told (a token bucket answering 429)', () => {
    it('keeps over 90 % of a limit of 40/s told 5000, with under 5 % of calls refused', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 5000, clock });
      const outcome = await drive([limiter], new Bucket(40, 8), clock, 40_000);
      const steady = acceptedBetween(outcome, 10_000, 40_000) / 30;
      expect(steady).toBeGreaterThanOrEqual(36);
      expect(outcome.refused / (outcome.refused + outcome.accepted.length)).toBeLessThanOrEqual(0.05);
      expect(longestGap(outcome, 10_000, 40_000)).toBeLessThan(1000);
    });

    it('keeps over 90 % of a limit of 10/s told 20', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 20, clock });
      const outcome = await drive([limiter], new Bucket(10, 2), clock, 40_000);
      expect(acceptedBetween(outcome, 10_000, 40_000) / 30).toBeGreaterThanOrEqual(9);
      expect(outcome.refused / (outcome.refused + outcome.accepted.length)).toBeLessThanOrEqual(0.05);
    });

    it('keeps over 85 % of a limit of 5/s told 5 that allows no burst, with jittery timers and arrivals', async () => {
      // At 5/s the last second holds 4 or 5 answers: measured so, each 429 lowered the limit found
      // until it stayed at 4/s (76 % of the limit here).
      const random = seeded(7);
      const clock = new JitteryClock(5, random);
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 5, clock });
      const outcome = await drive(
        [limiter],
        new Bucket(5, 1),
        clock,
        120_000,
        50,
        undefined,
        () => random() * 5,
      );
      expect(acceptedBetween(outcome, 10_000, 120_000) / 110).toBeGreaterThanOrEqual(4.25);
      expect(limiter.limitFound()).toBeGreaterThanOrEqual(4.5);
      expect(outcome.refused / (outcome.refused + outcome.accepted.length)).toBeLessThanOrEqual(0.06);
    });

    it('follows a limit that changes (40 → 20 → 60/s) within 10 s', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 5000, clock });
      const bucket = new Bucket(40, 8);
      const outcome = await drive([limiter], bucket, clock, 60_000, 80, (t) => {
        if (t === 20_000) bucket.ratePerSecond = 20;
        if (t === 40_000) bucket.ratePerSecond = 60;
      });
      expect(acceptedBetween(outcome, 30_000, 40_000) / 10).toBeGreaterThanOrEqual(18);
      expect(acceptedBetween(outcome, 50_000, 60_000) / 10).toBeGreaterThanOrEqual(54);
      expect(outcome.refused / (outcome.refused + outcome.accepted.length)).toBeLessThanOrEqual(0.05);
    });

    it('lets two members of a group, each told 5000, share one limit of 40/s', async () => {
      const clock = new FakeClock();
      const members = [0, 1].map(() => new AdaptiveRateLimiter({ ratePerSecond: 5000, clock }));
      for (const m of members) m.setShare(1, 2);
      const outcome = await drive(members, new Bucket(40, 8), clock, 40_000, 30);
      expect(acceptedBetween(outcome, 10_000, 40_000) / 30).toBeGreaterThanOrEqual(36);
      expect(outcome.refused / (outcome.refused + outcome.accepted.length)).toBeLessThanOrEqual(0.05);
    });
  });

  describe('tryAcquire (a free slot without waiting)', () => {
    it('takes a free slot at once and spaces like acquire', async () => {
      const clock = new FakeClock();
      const limiter = fixed(10, clock, 2);
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
      const limiter = fixed(10, clock);
      expect(limiter.tryAcquire()).toBe(0);
      const waiting = releases(limiter, clock, 2);
      await clock.advance(150);
      expect(waiting).toEqual([100]);
      // A slot is free in time, but one caller still waits for the one after it.
      expect(limiter.tryAcquire()).toBeUndefined();
      await clock.advance(100);
      expect(waiting).toEqual([100, 200]);
    });

    it('keeps the rate whatever the mix of tryAcquire and acquire', async () => {
      const clock = new FakeClock();
      const limiter = fixed(20, clock, 3);
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
      const limiter = fixed(40, clock);
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

    it('scales the rate and the limit found with the share', () => {
      const clock = new FakeClock();
      const limiter = fixed(40, clock);
      limiter.onRateLimited(0);
      const rate = limiter.currentRate();
      const found = limiter.limitFound() ?? 0;
      limiter.setShare(1, 2);
      expect(limiter.currentCeiling()).toBe(20);
      expect(limiter.currentRate()).toBeCloseTo(rate / 2);
      expect(limiter.limitFound()).toBeCloseTo(found / 2);
      limiter.setShare(2, 2);
      expect(limiter.currentRate()).toBeCloseTo(rate);
    });

    it('gives an instance without partitions the floor, and the whole rate back with 1 of 1', () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({
        ratePerSecond: 40,
        initialRatePerSecond: 40,
        minRatePerSecond: 2,
        clock,
      });
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
      const limiter = fixed(10, clock);
      const times = releases(limiter, clock, 4);
      await clock.advance(50);
      expect(times).toEqual([0]);
      limiter.setShare(1, 2);
      await clock.advance(1000);
      // The slot promised at 100 is rescaled to 5/s: 50 ms left become 100; then spacing is 1/5 s.
      expect(times).toEqual([0, 150, 350, 550]);
    });

    it('gives a share back at the rate it had, not the floor scaled up (a wave of calls)', () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 5000, clock });
      expect(limiter.currentRate()).toBe(10);
      limiter.setShare(0, 4);
      expect(limiter.currentRate()).toBe(1);
      limiter.setShare(4, 4);
      // The old scaling multiplied the floor by 5000 / 1: a rate of 5000/s before any answer.
      expect(limiter.currentRate()).toBe(10);
      // In slow start a member keeps the initial rate whatever its share (see the next test).
      limiter.setShare(2, 4);
      expect(limiter.currentRate()).toBe(10);
    });

    it('starts every member of a group at the initial rate (at most its ceiling), not the initial rate divided', () => {
      const clock = new FakeClock();
      const half = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      half.setShare(2, 4);
      // Divided, two members began at 5/s each: a slow start twice as long, about a fifth of a
      // second of the group's work lost at every start.
      expect(half.currentRate()).toBe(10);
      const eighth = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      eighth.setShare(1, 8);
      expect(eighth.currentRate()).toBe(5);
      // Once a limit was found, the rate follows the share: the group's members share what the API grants.
      const found = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      found.onRateLimited(0);
      const rate = found.currentRate();
      found.setShare(1, 4);
      expect(found.currentRate()).toBeCloseTo(rate / 4);
    });

    it('releases calls waiting at the floor as soon as a share is given, not a floor interval later', async () => {
      const clock = new FakeClock();
      const limiter = new AdaptiveRateLimiter({ ratePerSecond: 40, clock });
      limiter.setShare(0, 2);
      const times = releases(limiter, clock, 4);
      await clock.advance(100);
      // At the floor (1/s): one call, the next a second later.
      expect(times).toEqual([0]);
      limiter.setShare(1, 2);
      await clock.advance(600);
      // At 10/s (slow start's initial rate, half the share's ceiling of 20/s) from 100 ms (the rest
      // of the floor's interval rescaled to the new rate: 900 → 90 ms), then 100 ms apart: not at
      // 1000 ms, where the floor had put the next slot.
      expect(times).toEqual([0, 190, 290, 390]);
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
