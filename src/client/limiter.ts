/**
 * One adaptive rate limiter shared by every call of a client.
 *
 * Spacing: a queue released by a single pump at the current rate (GCRA / virtual scheduling:
 * each release moves the theoretical arrival time by 1/rate; `burst` releases may be back to
 * back after an idle period). A queue rather than per-caller timers, so that a rate change or
 * a pause applies at once to everyone already waiting.
 *
 * Adaptation (AIMD, as in TCP congestion control): a 429 multiplies the rate by
 * `decreaseFactor` (never below `minRatePerSecond`), at most once per "round" - a 429 for a
 * request released before the last decrease is the same congestion signal and is ignored, so a
 * burst of in-flight 429s halves the rate once, not ten times. A Retry-After pauses every
 * caller until it has passed. Each success adds `increasePerSecond` per elapsed second back,
 * up to the configured ceiling. Several clients against one server therefore settle a little
 * below the server's limit instead of oscillating around it.
 *
 * Share of a group (`setShare`): instances of one consumer group spend one API limit, and
 * AIMD alone lets each of them overshoot until its own 429s teach it. An instance that knows
 * it holds `owned` of the group's `total` input partitions lowers its ceiling to that share of
 * the configured rate, so the group's ceilings add up to the limit; the adaptive part works
 * below that ceiling, unchanged, for what nobody knows (other clients of the same account, a
 * limit lower than configured). Burst and recovery speed follow the share by default, so N
 * instances together behave like one. See docs/performance.md, "A group shares one limit".
 */

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface RateLimiterOptions {
  /** The ceiling, in requests per second. */
  ratePerSecond: number;
  /** The floor the rate never drops below. */
  minRatePerSecond?: number;
  /** Releases allowed back to back after idling (default: 20 ms worth of the ceiling, at least 1). */
  burst?: number;
  /** Multiplier applied on a 429. */
  decreaseFactor?: number;
  /** Requests/second regained per second of successes. */
  increasePerSecond?: number;
  clock?: Clock;
}

interface Waiter {
  resolve: (releasedAt: number) => void;
}

export class AdaptiveRateLimiter {
  /** The configured rate: the ceiling of an instance that holds the whole share. */
  private readonly configured: number;
  private readonly configuredBurst?: number;
  private readonly configuredIncrease?: number;
  private ceiling: number;
  private readonly floor: number;
  private burst: number;
  private readonly decreaseFactor: number;
  private increasePerSecond: number;
  private readonly clock: Clock;
  private shareOwned = 1;
  private shareTotal = 1;

  private rate: number;
  private tat = Number.NEGATIVE_INFINITY;
  private pausedUntil = Number.NEGATIVE_INFINITY;
  private lastDecreaseAt = Number.NEGATIVE_INFINITY;
  private lastIncreaseAt: number;
  private readonly queue: Waiter[] = [];
  private pumping = false;

  constructor(options: RateLimiterOptions) {
    if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be > 0');
    this.configured = options.ratePerSecond;
    this.ceiling = this.configured;
    this.floor = Math.min(options.minRatePerSecond ?? Math.min(1, this.ceiling), this.ceiling);
    if (!(this.floor > 0)) throw new RangeError('minRatePerSecond must be > 0');
    this.configuredBurst = options.burst;
    this.configuredIncrease = options.increasePerSecond;
    this.burst = this.burstFor(this.ceiling);
    this.increasePerSecond = this.increaseFor(this.ceiling);
    this.decreaseFactor = options.decreaseFactor ?? 0.5;
    if (!(this.decreaseFactor > 0 && this.decreaseFactor < 1)) {
      throw new RangeError('decreaseFactor must be between 0 and 1');
    }
    this.clock = options.clock ?? systemClock;
    this.rate = this.ceiling;
    this.lastIncreaseAt = this.clock.now();
  }

  /** The rate currently applied, in requests per second (for metrics). */
  currentRate(): number {
    return this.rate;
  }

  /** The ceiling the adaptive rate climbs back to: the configured rate times the share. */
  currentCeiling(): number {
    return this.ceiling;
  }

  /** The share last set: `owned` of `total` (1 of 1 until `setShare` is called). */
  share(): { owned: number; total: number } {
    return { owned: this.shareOwned, total: this.shareTotal };
  }

  /**
   * This instance holds `owned` of the `total` units (input partitions) its group divides: its
   * ceiling becomes that share of the configured rate, never below the floor. The current rate
   * scales by the same factor, so a rate already lowered by 429s stays as far below the new
   * ceiling as it was below the old one; a pause (Retry-After) in force is kept. Call it on every
   * assignment, including the first; `setShare(1, 1)` gives the whole rate back.
   */
  setShare(owned: number, total: number): void {
    if (!Number.isInteger(total) || total < 1) throw new RangeError('total must be an integer >= 1');
    if (!Number.isInteger(owned) || owned < 0 || owned > total) {
      throw new RangeError('owned must be an integer within 0..total');
    }
    const ceiling = Math.max(this.floor, (this.configured * owned) / total);
    const scaled = this.rate * (ceiling / this.ceiling);
    this.ceiling = ceiling;
    this.rate = Math.min(ceiling, Math.max(this.floor, scaled));
    this.burst = this.burstFor(ceiling);
    this.increasePerSecond = this.increaseFor(ceiling);
    this.shareOwned = owned;
    this.shareTotal = total;
  }

  /**
   * Takes a slot at once if one is free and nobody is waiting: returns its release time (as
   * `acquire` resolves with), or undefined (then `acquire` and wait). Most calls under the rate take
   * this path, without a promise or a turn of the pump.
   */
  tryAcquire(): number | undefined {
    if (this.queue.length > 0 || this.pumping) return undefined;
    const now = this.clock.now();
    const interval = 1000 / this.rate;
    if (this.slotAt(interval) > now) return undefined;
    return this.take(now, interval);
  }

  /** The earliest time the next call may go (GCRA: up to `burst` calls back to back), or a pause's end. */
  private slotAt(interval: number): number {
    return Math.max(this.tat - (this.burst - 1) * interval, this.pausedUntil);
  }

  /** Takes the slot at `now`: the next one is an interval later. Returns the release time. */
  private take(now: number, interval: number): number {
    this.tat = Math.max(this.tat, now) + interval;
    return now;
  }

  /** Waits for a slot. Resolves with the release time, to hand back to `onRateLimited`. */
  acquire(): Promise<number> {
    return new Promise<number>((resolve) => {
      this.queue.push({ resolve });
      void this.pump();
    });
  }

  /** A request was answered without a 429: regain rate additively over time. */
  onSuccess(): void {
    const now = this.clock.now();
    const start = Math.max(this.lastIncreaseAt, this.pausedUntil);
    if (now > start && this.rate < this.ceiling) {
      this.rate = Math.min(this.ceiling, this.rate + ((now - start) / 1000) * this.increasePerSecond);
    }
    this.lastIncreaseAt = Math.max(now, this.lastIncreaseAt);
  }

  /**
   * A request released at `releasedAt` was answered 429. Decrease the rate once per round and
   * pause everyone for `retryAfterMs`, when the server gave one.
   */
  onRateLimited(releasedAt: number, retryAfterMs?: number): void {
    const now = this.clock.now();
    if (releasedAt >= this.lastDecreaseAt) {
      this.rate = Math.max(this.floor, this.rate * this.decreaseFactor);
      this.lastDecreaseAt = now;
      this.lastIncreaseAt = now;
    }
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      this.pausedUntil = Math.max(this.pausedUntil, now + retryAfterMs);
    }
  }

  // By default 20 ms worth of calls may go back to back: a timer that wakes late (they do, on a busy
  // event loop) is caught up instead of its lost time lowering the rate below the ceiling.
  private burstFor(ceiling: number): number {
    return Math.max(1, Math.floor(this.configuredBurst ?? ceiling / 50));
  }

  private increaseFor(ceiling: number): number {
    if (this.configuredIncrease === undefined) return Math.max(0.5, ceiling / 20);
    return this.configuredIncrease * (ceiling / this.configured);
  }

  /** Callers waiting for a slot (for metrics and tests). */
  pending(): number {
    return this.queue.length;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const now = this.clock.now();
        const interval = 1000 / this.rate;
        const at = this.slotAt(interval);
        if (at > now) {
          // Re-evaluated after the sleep: a pause or a rate change may have arrived meanwhile.
          await this.clock.sleep(at - now);
          continue;
        }
        this.queue.shift()?.resolve(this.take(now, interval));
      }
    } finally {
      this.pumping = false;
    }
  }
}
