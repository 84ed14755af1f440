import { backoffDelay } from '../../util/backoff.js';
import type { Awaitable } from '../types.js';

/**
 * When to poll each result, from what polls have taught about how long that kind of result takes,
 * and from how much of the API's capacity is free.
 *
 * The distribution (`ReadyTimes`): each result fetched says it became ready after the last poll that
 * found it not ready and before the poll that found it (an interval, counted from the upload). The
 * intervals are folded into a histogram the way Turnbull's self-consistent estimator does it, one EM
 * step per observation: a result's weight goes to the bins of its interval in proportion to what the
 * histogram already holds there. Wide intervals (one economical poll late in the distribution) then
 * keep the shape that narrow ones taught; older observations fade, so a kind that grows slower is
 * followed.
 *
 * What is learned per key (`LearnedTimes`): a distribution per result kind, one per kind and
 * pipeline, and one per kind, pipeline and size class of the uploaded file (a factor of four wide).
 * Every result teaches each level it belongs to. A result is scheduled by the finest level that has
 * seen `TRUSTED_RESULTS` results and whose distribution differs from the coarser one in use by more
 * than sampling noise; else by the coarser one. So a rare pipeline or size is polled as its kind is,
 * and a finer level that says nothing new does not trade the coarser one's larger sample for a
 * noisier one. A finer level splits each interval by the coarser level's shape as much as by its own
 * (a finer level in use places few polls where it holds little, and would otherwise go on holding
 * little there). The number of finer levels is capped (`MAX_FINER_KEYS`); a key past the cap is
 * learned and scheduled by the coarser levels only.
 *
 * The schedule: polls of a result are placed with a density of sqrt(h(t) / 2c) per millisecond, where
 * h is the hazard (how likely a result still pending at t becomes ready in the next millisecond) and c
 * the price of one poll in milliseconds of delay. That density minimises expected delay after ready
 * plus c times expected polls (for a density n, the delay costs f/2n and the polls c·n·S per unit of
 * time; pointwise optimum n = sqrt(f / 2cS)). Where the distribution is flat polls are even; near its
 * end they crowd; a poll is never later than the point where 98 % of the results still pending are
 * ready, so a cheap schedule still catches the slow end of the usual spread with its first poll.
 * Beyond what was ever seen (a result slower than usual) the hazard is taken as 1/t, so gaps grow with
 * the square root of the time waited and stay within half of it.
 *
 * The price (`PollPrice`) follows the limiter: while the API has spare capacity (calls used well below the
 * capacity found) it falls to `CHEAPEST_MS`, the freshest schedule; as the calls near the capacity it
 * doubles, up to `ECONOMY_MS`, where a result costs little more than one GET. A poll placed earlier
 * than the economy schedule would place it is spare: it goes only if the limiter's queue is short at
 * that moment (else it is placed again, a gap later), and then waits behind creates (priority
 * `spare`), so the creates' share of the limit does not fall. The first results of a kind are polled
 * at the price too, none spare, until the distribution has been learned: those polls go before
 * creates at the limiter, and at the cheapest price they would take the capacity the creates need
 * (the creates then go in one burst once the kind is learned, and their polls fall due together).
 */

/** What the poll schedule needs of the API's rate limiter. */
export interface PollBudget {
  /**
   * Calls per second the API is believed to grant this instance, calls released over the last second,
   * calls waiting for a slot now, and the rate they are released at.
   */
  headroom(): { capacityPerSecond: number; usedPerSecond: number; waiting: number; ratePerSecond: number };
}

/** The price of a poll, in milliseconds of expected delay, when the API has capacity to spare. */
export const CHEAPEST_MS = 20;
/** The price at the limit: little more than one GET per result, first poll late in the distribution. */
export const ECONOMY_MS = 1000;
/** Calls used, as a share of the capacity, above which polls get dearer. */
const BUSY_SHARE = 0.8;
/** Calls used, as a share of the capacity, below which polls get cheaper. */
const ROOMY_SHARE = 0.6;
/** A spare poll goes only while the calls used stay below this share of the capacity. */
const SPARE_SHARE = 0.9;
/** ... and while the calls waiting at the limiter are fewer than this many seconds of its rate. */
const SPARE_QUEUE_S = 1;
/**
 * Results of a kind seen before its distribution is trusted: until then no poll is spare (the
 * economy schedule, which tells spare polls apart, still follows the prior's long tail).
 */
const LEARNING_RESULTS = 20;
/** How often the price follows the limiter. */
const PRICE_EVERY_MS = 250;
/** The longest a poll waits: where this share of the results still pending are ready. */
const CATCH_SHARE = 0.98;
/** A result still pending where fewer than this share are is slower than usual (`beyond`). */
const BEYOND_SHARE = 0.005;
/** The shortest gap between two polls of one result. */
const MIN_GAP_MS = 20;

/** Bin edges in ms from the upload: 20 ms wide up to 400 ms, then 5 % wider each, up to 30 minutes. */
function binEdges(): Float64Array {
  const edges = [0];
  while (edges[edges.length - 1]! < 1_800_000) {
    const last = edges[edges.length - 1]!;
    edges.push(last + Math.max(20, Math.round(last * 0.05)));
  }
  return Float64Array.from(edges);
}

const EDGES = binEdges();
const BINS = EDGES.length - 1;

/** The bin holding `t` (ms), the last bin for anything beyond. */
function binOf(t: number): number {
  let lo = 0;
  let hi = BINS - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (EDGES[mid]! <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * A learned distribution of the time from upload to ready, for one kind of result: a histogram over
 * `EDGES` fed with censoring intervals (see the header).
 */
export class ReadyTimes {
  private readonly mass = new Float64Array(BINS);
  /** The sum of `mass`. */
  private massTotal = 0;
  /** Weight of a new observation; grows so that older ones fade (rescaled before it overflows). */
  private weight = 1;
  private readonly fade: number;
  /** survival[i]: share of the mass at EDGES[i] and beyond; recomputed when stale. */
  private readonly survival = new Float64Array(BINS + 1);
  private stale = true;
  private observations = 0;
  /**
   * What is assumed before anything is known: even in log time between two bounds, worth one
   * observation at first and half as much after each one (gone after a dozen, so that its long tail
   * does not hold the economy schedule's first poll back).
   */
  private readonly prior = new Float64Array(BINS);
  private priorFactor = 1;

  /** `memory`: about how many recent observations the shape stands for. */
  constructor(
    priorFromMs: number,
    priorToMs: number,
    private readonly memory = 400,
  ) {
    this.fade = 1 / (1 - 1 / memory);
    const a = binOf(Math.max(1, priorFromMs));
    const b = Math.max(a, binOf(Math.max(priorFromMs, priorToMs)));
    for (let i = a; i <= b; i++) this.prior[i] = 1 / (b - a + 1);
  }

  /** What bin `i` holds, the prior's part included. */
  private held(i: number): number {
    return this.mass[i]! + this.prior[i]! * this.weight * this.priorFactor;
  }

  /** The share of all that is held in bin `i`. */
  private shareOf(i: number): number {
    const total = this.massTotal + this.weight * this.priorFactor;
    return total > 0 ? this.held(i) / total : 0;
  }

  /** Observations folded in so far. */
  get count(): number {
    return this.observations;
  }

  /** About how many observations the shape stands for now: older ones have faded. */
  get sample(): number {
    return Math.min(this.observations, this.memory);
  }

  /**
   * The largest difference between this distribution's share of results not ready and `other`'s, at
   * any time (both fall linearly within a bin over the same edges, so the largest is at an edge).
   */
  distanceFrom(other: ReadyTimes): number {
    this.refresh();
    other.refresh();
    let d = 0;
    for (let i = 0; i <= BINS; i++) {
      const gap = Math.abs(this.survival[i]! - other.survival[i]!);
      if (gap > d) d = gap;
    }
    return d;
  }

  /**
   * A result was not ready at `afterMs` and ready at `byMs` (both from its upload). `guide`: a
   * coarser distribution the result belongs to as well; the interval is split by its shape as much
   * as by this one's. A finer distribution's results are polled by its own schedule once it is
   * used, sparsely where it holds little: without the guide, wide intervals there would keep it
   * holding little (its results found late, and put where it already held more).
   */
  observe(afterMs: number, byMs: number, guide?: ReadyTimes): void {
    const a = Math.max(0, afterMs);
    const b = Math.max(a + 1, byMs);
    const first = binOf(a);
    const last = binOf(b);
    // Where this result likely was: the overlap of each bin with (a, b], times what the bin holds.
    const likely = (i: number) =>
      this.overlap(i, a, b) * (guide ? this.shareOf(i) + guide.shareOf(i) : this.held(i));
    let held = 0;
    for (let i = first; i <= last; i++) held += likely(i);
    let width = 0;
    for (let i = first; i <= last; i++) width += this.overlap(i, a, b) * (EDGES[i + 1]! - EDGES[i]!);
    for (let i = first; i <= last; i++) {
      const o = this.overlap(i, a, b);
      if (o === 0) continue;
      // Nothing known there yet: spread by width (evenly over the interval).
      const share = held > 1e-12 ? likely(i) / held : (o * (EDGES[i + 1]! - EDGES[i]!)) / width;
      this.mass[i] = this.mass[i]! + this.weight * share;
    }
    this.massTotal += this.weight;
    this.weight *= this.fade;
    this.priorFactor /= 2;
    if (this.weight > 1e9) {
      for (let i = 0; i < BINS; i++) this.mass[i] = this.mass[i]! / this.weight;
      this.massTotal /= this.weight;
      this.weight = 1;
    }
    this.observations += 1;
    this.stale = true;
  }

  /** The share of bin `i` that lies within (a, b]. */
  private overlap(i: number, a: number, b: number): number {
    const lo = EDGES[i]!;
    const hi = EDGES[i + 1]!;
    const covered = Math.min(hi, b) - Math.max(lo, a);
    return covered <= 0 ? 0 : covered / (hi - lo);
  }

  /** Share of results not ready at `t` (ms from upload). */
  survivalAt(t: number): number {
    this.refresh();
    if (t >= EDGES[BINS]!) return 0;
    const i = binOf(t);
    const lo = EDGES[i]!;
    const hi = EDGES[i + 1]!;
    const s0 = this.survival[i]!;
    const s1 = this.survival[i + 1]!;
    return s0 - ((s0 - s1) * (Math.max(lo, t) - lo)) / (hi - lo);
  }

  /** The time (ms from upload) by which share `q` of the results are ready. */
  quantile(q: number): number {
    this.refresh();
    const target = 1 - q;
    for (let i = 0; i < BINS; i++) {
      const s1 = this.survival[i + 1]!;
      if (s1 <= target) {
        const s0 = this.survival[i]!;
        const lo = EDGES[i]!;
        return s0 === s1 ? lo : lo + ((s0 - target) / (s0 - s1)) * (EDGES[i + 1]! - lo);
      }
    }
    return EDGES[BINS]!;
  }

  /**
   * The time (ms from upload) of the next poll of a result still pending at `fromMs`, at a price of
   * `priceMs` per poll (see the header), within `minGapMs`..`maxGapMs` after `fromMs`.
   */
  nextPoll(fromMs: number, priceMs: number, minGapMs: number, maxGapMs: number): number {
    this.refresh();
    const from = Math.max(0, fromMs);
    const earliest = from + minGapMs;
    const latest = from + Math.max(minGapMs, maxGapMs);
    const pending = this.survivalAt(from);
    // Beyond what was ever seen: hazard 1/t, so a gap of sqrt(2ct), at most half the time waited.
    const beyond = () => {
      const gap = Math.min(Math.sqrt(2 * priceMs * Math.max(from, 1)), Math.max(from / 2, minGapMs));
      return Math.min(latest, Math.max(earliest, from + gap));
    };
    if (pending < BEYOND_SHARE) return beyond();
    const catchAt = pending * (1 - CATCH_SHARE);
    let need = 1;
    let t = from;
    for (let i = binOf(from); i < BINS; i++) {
      const lo = EDGES[i]!;
      const hi = EDGES[i + 1]!;
      const s0 = this.survival[i]!;
      const s1 = this.survival[i + 1]!;
      const width = hi - lo;
      const start = Math.max(t, lo);
      // The survival falls linearly within a bin; the poll that catches 98 % of what is pending is due there.
      if (s1 <= catchAt) {
        const at = s0 === s1 ? start : lo + ((s0 - catchAt) / (s0 - s1)) * width;
        const hazard = s0 > 0 ? (s0 - s1) / (s0 * width) : 0;
        const density = Math.sqrt(hazard / (2 * priceMs));
        const byDensity = start + need / Math.max(density, 1e-12);
        return Math.min(latest, Math.max(earliest, Math.min(Math.max(at, start), byDensity)));
      }
      const hazard = s0 > 0 ? (s0 - s1) / (s0 * width) : 0;
      const density = Math.sqrt(hazard / (2 * priceMs));
      const span = hi - start;
      if (density * span >= need) return Math.min(latest, Math.max(earliest, start + need / density));
      need -= density * span;
      t = hi;
      if (t >= latest) return latest;
    }
    return beyond();
  }

  private refresh(): void {
    if (!this.stale) return;
    this.stale = false;
    let total = 0;
    for (let i = 0; i < BINS; i++) total += this.held(i);
    let left = total;
    for (let i = 0; i < BINS; i++) {
      this.survival[i] = total > 0 ? left / total : 0;
      left -= this.held(i);
    }
    this.survival[BINS] = 0;
  }
}

/** What is known of a result before it is polled, besides its kind: what its time is learned by. */
export interface ResultTraits {
  /** The submission's pipeline (`pipeline_configuration`), when known. */
  pipeline?: string | undefined;
  /** The uploaded file's size in bytes, when known. */
  bytes?: number | undefined;
}

/**
 * Finer distributions kept at most (per kind and pipeline, and per kind, pipeline and size class,
 * together). Pipelines are an enum and size classes few: every key the API can produce fits.
 */
export const MAX_FINER_KEYS = 128;
/** Results a finer distribution has seen before a result may be scheduled by it. */
export const TRUSTED_RESULTS = 50;
/**
 * A finer distribution "differs" only by more than this share of results, however large its sample:
 * two levels fed the same results still differ by a few hundredths (each fades at its own pace and
 * splits wide intervals partly by its own shape).
 */
const MIN_DIFFERENCE = 0.1;
/** Kolmogorov–Smirnov's factor at 5 %: samples of one distribution differ by less than this / sqrt(n). */
const KS_FACTOR = 1.36;

/** Size class of a file: a factor of four wide, from below 16 KiB to 64 MiB and above. */
export function sizeClass(bytes: number): number {
  return Math.min(13, Math.max(6, Math.floor(Math.log2(Math.max(1, bytes)) / 2)));
}

/** The finer keys of one kind and pipeline: its own, and its size classes' (made on first use). */
interface FinerKeys {
  pipeline: string;
  sized: string[];
}

/** The key of the size class of `bytes` within `keys`' pipeline; undefined without a known size. */
function sizedKey(keys: FinerKeys, bytes: number | undefined): string | undefined {
  if (bytes === undefined || !Number.isFinite(bytes)) return undefined;
  const cls = sizeClass(bytes);
  return (keys.sized[cls] ??= `${keys.pipeline}\u0000${cls}`);
}

/**
 * The learned distributions of the results' processing times by key (see the header): per kind,
 * per kind and pipeline, per kind, pipeline and size class. Past `MAX_FINER_KEYS` a new finer key
 * gets no distribution of its own: its results are scheduled by, and teach, the levels that exist
 * (its kind's, and its pipeline's when that one exists); nothing held is dropped, so a schedule
 * learned never falls back.
 */
export class LearnedTimes {
  private readonly byKind = new Map<Awaitable, ReadyTimes>();
  private readonly finer = new Map<string, ReadyTimes>();
  /** The finer keys by kind and pipeline (`keysOf`). */
  private readonly keys = new Map<Awaitable, Map<string, FinerKeys>>();

  constructor(private readonly create: () => ReadyTimes) {}

  /** Finer distributions held (at most `MAX_FINER_KEYS`). */
  get finerKeys(): number {
    return this.finer.size;
  }

  /** The distribution a `kind` result with `traits` is scheduled by. */
  of(kind: Awaitable, traits: ResultTraits): ReadyTimes {
    const base = this.kindTimes(kind);
    const keys = this.keysOf(kind, traits);
    const byPipeline = keys === undefined ? undefined : this.finer.get(keys.pipeline);
    if (!byPipeline) return base;
    const sized = sizedKey(keys!, traits.bytes);
    const bySize = sized === undefined ? undefined : this.finer.get(sized);
    let chosen = base;
    if (byPipeline.count >= TRUSTED_RESULTS && differs(byPipeline, chosen)) chosen = byPipeline;
    if (bySize && bySize.count >= TRUSTED_RESULTS && differs(bySize, chosen)) chosen = bySize;
    return chosen;
  }

  /** A `kind` result with `traits` was not ready `afterMs` after its upload and ready `byMs` after it. */
  observe(kind: Awaitable, traits: ResultTraits, afterMs: number, byMs: number): void {
    const base = this.kindTimes(kind);
    base.observe(afterMs, byMs);
    const keys = this.keysOf(kind, traits);
    const byPipeline = keys === undefined ? undefined : this.finerTimes(keys.pipeline);
    byPipeline?.observe(afterMs, byMs, base);
    // A size class is learned within its pipeline only: the keys nest.
    const sized = byPipeline ? sizedKey(keys!, traits.bytes) : undefined;
    if (byPipeline && sized !== undefined) this.finerTimes(sized)?.observe(afterMs, byMs, byPipeline);
  }

  /**
   * The finer keys of a kind and pipeline, made once: every poll planned asks, and new strings each
   * time were a good part of what the connector allocated per document.
   */
  private keysOf(kind: Awaitable, traits: ResultTraits): FinerKeys | undefined {
    const pipeline = traits.pipeline;
    if (pipeline === undefined) return undefined;
    let ofKind = this.keys.get(kind);
    if (!ofKind) {
      ofKind = new Map();
      this.keys.set(kind, ofKind);
    }
    let keys = ofKind.get(pipeline);
    if (!keys) {
      keys = { pipeline: `${kind}\u0000${pipeline}`, sized: [] };
      ofKind.set(pipeline, keys);
    }
    return keys;
  }

  private kindTimes(kind: Awaitable): ReadyTimes {
    let t = this.byKind.get(kind);
    if (!t) {
      t = this.create();
      this.byKind.set(kind, t);
    }
    return t;
  }

  /** The finer distribution of `key`, made if the cap allows. */
  private finerTimes(key: string): ReadyTimes | undefined {
    let t = this.finer.get(key);
    if (!t && this.finer.size < MAX_FINER_KEYS) {
      t = this.create();
      this.finer.set(key, t);
    }
    return t;
  }
}

/**
 * `finer` says something `coarser` does not: their shares of results not ready differ somewhere by
 * more than two samples of one distribution would (the finer one's sample is the smaller).
 */
function differs(finer: ReadyTimes, coarser: ReadyTimes): boolean {
  return (
    finer.distanceFrom(coarser) > Math.max(MIN_DIFFERENCE, KS_FACTOR / Math.sqrt(Math.max(1, finer.sample)))
  );
}

/**
 * The price of one poll in milliseconds of delay, following the limiter every `PRICE_EVERY_MS`:
 * doubled while calls use more than `BUSY_SHARE` of the capacity, lowered by a fifth while they use
 * less than `ROOMY_SHARE`, within `CHEAPEST_MS`..`ECONOMY_MS`. Calls queued at the limiter do not
 * raise it by themselves: in slow start they wait for the rate, not for the API's capacity; spare
 * polls then wait for their turn behind creates, or are placed again (`hasSpareCapacity`).
 */
export class PollPrice {
  private price = CHEAPEST_MS;
  private updatedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly budget: PollBudget | undefined) {}

  at(now: number): number {
    if (!this.budget || now - this.updatedAt < PRICE_EVERY_MS) return this.price;
    this.updatedAt = now;
    const { capacityPerSecond, usedPerSecond } = this.budget.headroom();
    const used = usedPerSecond / Math.max(capacityPerSecond, 1e-9);
    if (used > BUSY_SHARE) this.price = Math.min(ECONOMY_MS, this.price * 2);
    else if (used < ROOMY_SHARE) this.price = Math.max(CHEAPEST_MS, this.price * 0.8);
    return this.price;
  }

  /**
   * The limiter has capacity for a spare poll now: calls stay below `SPARE_SHARE` of the capacity and the
   * queue is short (in slow start calls queue for the rate, not for the API; spare ones wait behind
   * creates there, and their use makes the rate grow).
   */
  hasSpareCapacity(): boolean {
    if (!this.budget) return true;
    const { capacityPerSecond, usedPerSecond, waiting, ratePerSecond } = this.budget.headroom();
    return (
      waiting <= Math.max(1, ratePerSecond * SPARE_QUEUE_S) && usedPerSecond < SPARE_SHARE * capacityPerSecond
    );
  }
}

/** When a result's next poll goes, and whether it is spare (earlier than the economy schedule's). */
export interface PollPlan {
  delayMs: number;
  spare: boolean;
}

/**
 * When to poll a result: by the learned distribution of its kind (and pipeline and file size, where
 * those are learned and differ: `LearnedTimes`) at the current price (see the header). A
 * poll prompted by a webhook delivery, by another result that says this one is final, or by a replay
 * (the result is final already) goes at once, then backs off from `pollInitialMs`. Every gap is at
 * most `pollMaxMs`.
 */
export class PollTiming {
  private readonly times: LearnedTimes;
  private readonly price: PollPrice;

  constructor(
    private readonly options: { pollInitialMs: number; pollMaxMs: number },
    private readonly random: () => number,
    budget?: PollBudget,
  ) {
    this.price = new PollPrice(budget);
    // Before anything is known: results ready somewhere between a tenth of the first delay and the
    // longest gap, evenly in log time.
    this.times = new LearnedTimes(() => new ReadyTimes(options.pollInitialMs / 10, options.pollMaxMs));
  }

  /**
   * The next poll of a `kind` result uploaded at `uploadedAt`: poll number `attempt` (0 = the first),
   * at `now` (epoch ms). `skipped`: a spare poll found no spare capacity and is placed again.
   * `traits`: what else is known of the result (pipeline, file size) that its time is learned by.
   */
  plan(
    kind: Awaitable,
    attempt: number,
    prompted: boolean,
    uploadedAt: number,
    now: number,
    skipped = false,
    traits: ResultTraits = {},
  ): PollPlan {
    const { pollInitialMs, pollMaxMs } = this.options;
    if (prompted)
      return { delayMs: attempt === 0 ? 0 : this.backoff(attempt - 1, pollInitialMs), spare: false };
    const times = this.times.of(kind, traits);
    const waited = Math.max(0, now - uploadedAt);
    const learning = times.count < LEARNING_RESULTS;
    const price = this.price.at(now);
    const minGap = attempt === 0 && !skipped ? 0 : Math.min(MIN_GAP_MS, pollMaxMs);
    const at = times.nextPoll(waited, price, minGap, pollMaxMs);
    const spare =
      !learning && price < ECONOMY_MS && at < times.nextPoll(waited, ECONOMY_MS, minGap, pollMaxMs);
    // A little jitter, later only (an earlier poll than placed would find more results not ready):
    // documents uploaded together do not poll in the same millisecond.
    const gap = at - waited;
    return { delayMs: Math.max(0, Math.round(gap * (1 + 0.05 * this.random()))), spare };
  }

  /** A spare poll may go now (the limiter has spare capacity). */
  hasSpareCapacity(): boolean {
    return this.price.hasSpareCapacity();
  }

  /** A `kind` result (with `traits`) was not ready `afterMs` after its upload and ready `byMs` after it. */
  observe(kind: Awaitable, afterMs: number, byMs: number, traits: ResultTraits = {}): void {
    this.times.observe(kind, traits, afterMs, byMs);
  }

  /** Exponential back-off with jitter, capped at `pollMaxMs`. */
  backoff(attempt: number, initialMs: number): number {
    return backoffDelay(attempt, { initialMs, maxMs: this.options.pollMaxMs }, this.random);
  }
}
