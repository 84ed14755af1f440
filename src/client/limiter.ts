/**
 * One adaptive rate limiter shared by every call of a client: it finds the API's rate limit, which the
 * spec does not publish and other clients of the account share, and keeps just under it.
 *
 * Spacing: a queue released by a single pump at the current rate (GCRA / virtual scheduling: each
 * release moves the theoretical arrival time `tat` by 1/rate; `burst` releases, 20 ms worth of the
 * current rate, may go back to back). When the rate changes, the schedule already promised is rescaled
 * to the new rate, so a rise is felt at once and a fall does not release a burst sized for the old rate.
 * Calls for documents already submitted (`priority: 'submitted'`) go before new creates, and creates
 * before spare calls (`'spare'`: polls placed early for freshness, see `headroom`).
 *
 * How it finds the limit, and its share of it in a group, is told at `AdaptiveRateLimiter`.
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
  /** Releases allowed back to back (default: 20 ms worth of the current rate, at least 1). */
  burst?: number;
  /**
   * The rate slow start begins at (default 10/s, at most the ceiling): the rate is not clocked by the
   * answers, so a high start would release a wave of calls before the first 429 comes back.
   */
  initialRatePerSecond?: number;
  /** The rate after a 429, as a fraction of what the API accepted over the last second. */
  decreaseFactor?: number;
  clock?: Clock;
}

/**
 * Who waits for a slot: calls of documents already submitted go before new creates, and both before
 * spare calls (polls placed early for freshness, which only use what nobody else wants).
 */
export type CallPriority = 'submitted' | 'new' | 'spare';

interface Waiter {
  resolve: (releasedAt: number) => void;
}

/** Events counted per 100 ms over the last second. */
class LastSecond {
  private readonly counts = new Array<number>(10).fill(0);
  private slot = 0;
  private slotStart = 0;

  add(now: number): void {
    this.roll(now);
    this.counts[this.slot]! += 1;
  }

  /** Events in the last second. */
  total(now: number): number {
    this.roll(now);
    let sum = 0;
    for (const c of this.counts) sum += c;
    return sum;
  }

  private roll(now: number): void {
    const steps = Math.floor((now - this.slotStart) / 100);
    if (steps <= 0) return;
    for (let i = 0; i < Math.min(steps, 10); i++) {
      this.slot = (this.slot + 1) % 10;
      this.counts[this.slot] = 0;
    }
    this.slotStart += steps * 100;
  }
}

/** The times of the last accepted calls' answers, newest last (a ring of `capacity`). */
class RecentTimes {
  private readonly times: number[];
  private next = 0;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.times = new Array<number>(capacity).fill(0);
  }

  add(now: number): void {
    this.times[this.next] = now;
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /**
   * Calls per second from the oldest time kept that is after `since` up to `now`: a refused call
   * answered now came an interval after the newest, so at a steady pace this is that pace.
   */
  perSecond(now: number, since: number): number {
    let count = 0;
    let oldest = now;
    for (let i = 1; i <= this.size; i++) {
      const at = this.times[(this.next - i + this.capacity) % this.capacity]!;
      if (at <= since) break;
      count += 1;
      oldest = at;
    }
    return count === 0 ? 0 : count / (Math.max(1, now - oldest) / 1000);
  }
}

/**
 * Below this rate a 429 measures what the API accepted from the last MEASURED_CALLS answers, not the
 * last second: at 5/s a second holds one call more or less, a fifth of the limit, and a longer window
 * would average in the climb back after the last 429, so each 429 would lower the limit found.
 */
const MEASURED_CALLS = 10;
/** How far back those answers may be, in ms (a limit that fell is still followed within seconds). */
const MEASURE_MAX_MS = 5000;
/** Rates from which the last second holds enough calls for the measure. */
const MEASURE_BY_SECOND_FROM = 20;

/** Share of the gap to the remembered limit closed per second of use. */
const RECOVERY = 0.5;
/** Smallest step per second of use, as a fraction of the limit (the last part of the way back). */
const MIN_STEP = 0.02;
/** First probing step above the limit per second of use, as a fraction of it (at least 1/s); it grows each second. */
const PROBE_STEP = 0.06;
/** Slow start: calls per second added per accepted call (the rate grows e^2 ≈ 7× per second of use). */
const SLOW_START_GAIN = 2;
/**
 * A release this late after its slot (a late timer, a busy event loop) keeps the schedule's place, so
 * lateness does not lower the rate actually sent; a longer gap (nothing was waiting) starts afresh.
 */
const LATE_KEPT_MS = 20;

/**
 * Discovery (a rate with a memory, in the manner of TCP CUBIC and the AWS SDK's adaptive mode):
 * - slow start: from 10/s, each accepted call adds two calls per second (the rate grows about
 *   sevenfold per second of use) until the first 429, so a limit far below the ceiling costs a few
 *   429s, not a wave of them, and a ceiling of tens per second is reached within half a second of use
 *   (a limit of thousands per second within a few seconds);
 * - a 429 (once per round: a 429 for a call released before the last decrease is the same signal)
 *   remembers the rate the API actually accepted over the last second (below 20/s, the pace of its
 *   last ten answers) as `limit` (lowering it by a tenth at most per round), and sets the rate to
 *   `decreaseFactor` (0.9) of it;
 * - below `limit` each accepted call closes part of the gap (half of it per second of use): back
 *   near the limit within a few seconds; above it, probing is slow at first and speeds up the longer
 *   no 429 comes (a limit that rose is followed within seconds);
 * - the rate grows only with accepted calls, and only while the calls use at least half of it or
 *   wait for it (an idle hour regains nothing, and the rate never races ahead of the demand);
 * - a Retry-After is not applied here: it is the earliest time for the refused call to go again
 *   (the sender waits it, with jitter); everyone else keeps the lowered rate.
 *
 * Share of a group (`setShare`): instances of one consumer group spend one API limit. An instance that
 * holds `owned` of the group's `total` input partitions lowers its ceiling to that share of the
 * configured rate, so the group's ceilings add up to the configured rate; discovery works below that
 * ceiling, unchanged, for what nobody knows (other clients of the account, a limit lower than
 * configured). See docs/performance.md, "A group shares one API limit".
 */
export class AdaptiveRateLimiter {
  /** The configured rate: the ceiling of an instance that holds the whole share. */
  private readonly configured: number;
  private readonly configuredBurst?: number;
  private ceiling: number;
  private readonly floor: number;
  private readonly decreaseFactor: number;
  private readonly clock: Clock;
  /** The rate slow start begins at in every member of a group (at most its ceiling). */
  private readonly initial: number;
  private shareOwned = 1;
  private shareTotal = 1;
  /**
   * The rate and the limit found for the whole group's share, kept while this instance's share is 0
   * (its rate is the floor then): a share given back starts from them, not from the floor scaled up.
   */
  private wholeRate: number;
  private wholeLimit: number | undefined;

  private rate: number;
  /** The rate the API accepted when it last refused (the limit found); undefined in slow start. */
  private limit: number | undefined;
  /** Accepted calls since the rate last reached the limit: how long probing has gone on. */
  private probed = 0;
  private tat = Number.NEGATIVE_INFINITY;
  private lastDecreaseAt = Number.NEGATIVE_INFINITY;
  private readonly accepted = new LastSecond();
  /** When the last accepted calls were answered, for the measure at low rates. */
  private readonly recentAccepted = new RecentTimes(MEASURED_CALLS);
  private readonly released = new LastSecond();
  private readonly urgent: Waiter[] = [];
  private readonly later: Waiter[] = [];
  private readonly spare: Waiter[] = [];
  private pumping = false;
  /** Ends the pump's current sleep early: a rate that rose must not wait out a slot of the old rate. */
  private wakePump: (() => void) | undefined;
  /** When the first call was released: a young limiter's last second is shorter than a second. */
  private firstReleaseAt: number | undefined;

  constructor(options: RateLimiterOptions) {
    if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be > 0');
    this.configured = options.ratePerSecond;
    this.ceiling = this.configured;
    this.floor = Math.min(options.minRatePerSecond ?? Math.min(1, this.ceiling), this.ceiling);
    if (!(this.floor > 0)) throw new RangeError('minRatePerSecond must be > 0');
    this.configuredBurst = options.burst;
    this.decreaseFactor = options.decreaseFactor ?? 0.9;
    if (!(this.decreaseFactor > 0 && this.decreaseFactor < 1)) {
      throw new RangeError('decreaseFactor must be between 0 and 1');
    }
    this.clock = options.clock ?? systemClock;
    const initial = options.initialRatePerSecond ?? 10;
    if (!(initial > 0)) throw new RangeError('initialRatePerSecond must be > 0');
    this.initial = initial;
    this.rate = Math.min(this.ceiling, Math.max(this.floor, initial));
    this.wholeRate = this.rate;
  }

  /** The rate currently applied, in requests per second (for metrics). */
  currentRate(): number {
    return this.rate;
  }

  /** The ceiling the adaptive rate climbs to at most: the configured rate times the share. */
  currentCeiling(): number {
    return this.ceiling;
  }

  /** The API's limit as found by the last 429 (calls per second accepted then); undefined before one. */
  limitFound(): number | undefined {
    return this.limit;
  }

  /**
   * What is free for calls that may wait or be skipped (spare polls): the calls per second the API is
   * believed to grant (the limit found, else the ceiling), those released over the last second, the
   * calls waiting for a slot now, and the current rate.
   */
  headroom(): { capacityPerSecond: number; usedPerSecond: number; waiting: number; ratePerSecond: number } {
    const now = this.clock.now();
    return {
      capacityPerSecond: Math.min(this.ceiling, this.limit ?? this.ceiling),
      usedPerSecond: this.releasedPerSecond(now),
      waiting: this.urgent.length + this.later.length + this.spare.length,
      ratePerSecond: this.rate,
    };
  }

  /** The share last set: `owned` of `total` (1 of 1 until `setShare` is called). */
  share(): { owned: number; total: number } {
    return { owned: this.shareOwned, total: this.shareTotal };
  }

  /**
   * This instance holds `owned` of the `total` units (input partitions) its group divides: its
   * ceiling becomes that share of the configured rate, never below the floor. The current rate and
   * the limit found scale by the same factor (the group's members share what the API grants). Call it
   * on every assignment, including the first; `setShare(1, 1)` gives the whole rate back.
   */
  setShare(owned: number, total: number): void {
    if (!Number.isInteger(total) || total < 1) throw new RangeError('total must be an integer >= 1');
    if (!Number.isInteger(owned) || owned < 0 || owned > total) {
      throw new RangeError('owned must be an integer within 0..total');
    }
    const before = this.shareOwned / this.shareTotal;
    if (before > 0) {
      this.wholeRate = this.rate / before;
      this.wholeLimit = this.limit === undefined ? undefined : this.limit / before;
    }
    const fraction = owned / total;
    this.ceiling = Math.max(this.floor, this.configured * fraction);
    this.shareOwned = owned;
    this.shareTotal = total;
    this.limit = this.wholeLimit === undefined ? undefined : this.wholeLimit * fraction;
    // In slow start (no limit found yet) a member keeps at least the initial rate, at most its
    // ceiling: the initial rate bounds what one limiter sends before its first answer, and divided
    // among the members it made the group's start that many times slower. The ceilings still add up
    // to the configured rate.
    const scaled = this.wholeRate * fraction;
    this.setRate(this.limit === undefined ? Math.max(scaled, Math.min(this.initial, this.ceiling)) : scaled);
  }

  /**
   * Takes a slot at once if one is free and nobody is waiting: returns its release time (as
   * `acquire` resolves with), or undefined (then `acquire` and wait). Most calls under the rate take
   * this path, without a promise or a turn of the pump.
   */
  tryAcquire(): number | undefined {
    if (this.pumping || this.urgent.length > 0 || this.later.length > 0 || this.spare.length > 0)
      return undefined;
    const now = this.clock.now();
    if (this.slotAt() > now) return undefined;
    return this.take(now);
  }

  /** Waits for a slot. Resolves with the release time, to hand back to `onRateLimited`. */
  acquire(priority: CallPriority = 'submitted'): Promise<number> {
    return new Promise<number>((resolve) => {
      (priority === 'new' ? this.later : priority === 'spare' ? this.spare : this.urgent).push({ resolve });
      // The pump awaits only its clock's sleep, which does not reject: nothing to handle.
      this.pump().catch(() => undefined);
    });
  }

  /** A request was answered without a 429: the rate grows by what that call proved (see the header). */
  onSuccess(): void {
    const now = this.clock.now();
    this.accepted.add(now);
    this.recentAccepted.add(now);
    // Only while the calls use the rate: an app-limited rate proves nothing about the API. Calls
    // waiting for a slot show the rate is what holds them, even when the last second was idle (the
    // first calls after a quiet spell, whose last second counts the quiet).
    if (this.rate >= this.ceiling) return;
    if (this.releasedPerSecond(now) < this.rate / 2 && !this.callsWaiting()) return;
    let perSecond: number;
    if (this.limit === undefined) {
      perSecond = this.rate * SLOW_START_GAIN;
    } else if (this.rate < this.limit) {
      perSecond = Math.max((this.limit - this.rate) * RECOVERY, this.limit * MIN_STEP);
    } else {
      this.probed += 1;
      perSecond = Math.max(1, this.limit * PROBE_STEP) * (1 + (2 * this.probed) / this.rate);
    }
    this.setRate(this.rate + perSecond / this.rate);
  }

  /** A request released at `releasedAt` was answered 429: remember the limit and decrease, once per round. */
  onRateLimited(releasedAt: number): void {
    const now = this.clock.now();
    if (releasedAt < this.lastDecreaseAt) return;
    // What the API accepted per second lately; with nothing accepted, only that the rate was too high.
    const accepted = this.acceptedPerSecond(now);
    const found = accepted > 0 ? Math.min(this.rate, accepted) : this.rate / 2;
    // One 429 can come from calls bunched on their way below the limit: the memory falls by a tenth
    // at most per round (a limit that really fell is followed within a few rounds).
    this.limit = Math.max(this.floor, found, (this.limit ?? 0) * 0.9);
    this.probed = 0;
    this.lastDecreaseAt = now;
    this.setRate(this.limit * this.decreaseFactor);
  }

  /**
   * What the API accepted per second lately: the calls answered over the last second, or below
   * MEASURE_BY_SECOND_FROM the pace of the last MEASURED_CALLS answers (at most MEASURE_MAX_MS old).
   */
  private acceptedPerSecond(now: number): number {
    if (this.rate < MEASURE_BY_SECOND_FROM) return this.recentAccepted.perSecond(now, now - MEASURE_MAX_MS);
    const span = Math.min(1000, Math.max(100, now - (this.firstReleaseAt ?? now))) / 1000;
    return this.accepted.total(now) / span;
  }

  private callsWaiting(): boolean {
    return this.urgent.length > 0 || this.later.length > 0 || this.spare.length > 0;
  }

  /** Calls released per second over the last second (a young limiter's shorter life counts as it is). */
  private releasedPerSecond(now: number): number {
    const span = Math.min(1000, Math.max(100, now - (this.firstReleaseAt ?? now))) / 1000;
    return this.released.total(now) / span;
  }

  /** Sets the rate within floor and ceiling; the schedule already promised follows it. */
  private setRate(next: number): void {
    const rate = Math.min(this.ceiling, Math.max(this.floor, next));
    const now = this.clock.now();
    if (this.tat > now) this.tat = now + ((this.tat - now) * this.rate) / rate;
    const rose = rate > this.rate;
    this.rate = rate;
    if (rose) this.wakePump?.();
  }

  /** Releases allowed back to back: by default 20 ms worth of the current rate, so a late timer catches up. */
  private burst(): number {
    return Math.max(1, Math.floor(this.configuredBurst ?? this.rate / 50));
  }

  /** The earliest time the next call may go (GCRA: up to `burst` calls back to back). */
  private slotAt(): number {
    return this.tat - (this.burst() - 1) * (1000 / this.rate);
  }

  /**
   * Takes the slot at `now`: the next one is an interval after this one's place in the schedule (its
   * slot when released at most LATE_KEPT_MS late, else now). Returns the release time.
   */
  private take(now: number): number {
    const late = now - this.tat;
    this.tat = (late > 0 && late <= LATE_KEPT_MS ? this.tat : Math.max(this.tat, now)) + 1000 / this.rate;
    this.released.add(now);
    this.firstReleaseAt ??= now;
    return now;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.urgent.length > 0 || this.later.length > 0 || this.spare.length > 0) {
        const now = this.clock.now();
        const at = this.slotAt();
        if (at > now) {
          // Re-evaluated after the sleep, which a rise of the rate ends early (a share given after
          // the floor's one call a second, a recovery after a 429).
          await Promise.race([
            this.clock.sleep(at - now),
            new Promise<void>((resolve) => (this.wakePump = resolve)),
          ]);
          this.wakePump = undefined;
          continue;
        }
        const waiter = this.urgent.shift() ?? this.later.shift() ?? this.spare.shift();
        waiter?.resolve(this.take(now));
      }
    } finally {
      this.pumping = false;
    }
  }
}
