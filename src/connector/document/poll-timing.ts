import { backoffDelay } from '../../util/backoff.js';
import type { Awaitable } from '../types.js';

/**
 * Learns how long each kind of result takes to become final, so that the first poll lands just after
 * it is ready instead of spending calls on early 404s. The estimate tracks a high quantile of the
 * processing time: a first poll that finds the result not ready moves it up a lot, one that finds it
 * ready moves it down a little, and at equilibrium about `quantile` of first polls succeed.
 *
 * Documents admitted together are polled together, so their outcomes say the same thing: updates are
 * spaced by a quarter of the estimate, or a burst of simultaneous misses would compound the estimate
 * straight to its maximum (and a burst of hits to its minimum).
 */
export class ReadinessEstimator {
  private estimateMs: number;
  private lastUpdateAt = Number.NEGATIVE_INFINITY;

  constructor(
    initialMs: number,
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly quantile = 0.9,
    private readonly gain = 0.2,
  ) {
    this.estimateMs = Math.min(maxMs, Math.max(minMs, initialMs));
  }

  get value(): number {
    return this.estimateMs;
  }

  /** Records the outcome of a first poll made at `now` (epoch ms). */
  observe(ready: boolean, now: number): void {
    if (now - this.lastUpdateAt < this.estimateMs / 4) return;
    this.lastUpdateAt = now;
    const factor = ready ? 1 - this.gain * (1 - this.quantile) : 1 + this.gain * this.quantile;
    this.estimateMs = Math.min(this.maxMs, Math.max(this.minMs, this.estimateMs * factor));
  }
}

/**
 * When to poll a result: the first poll when this kind of result is usually ready (counted from the
 * upload, one estimator per kind), then retries backing off from a quarter of that estimate. A poll
 * prompted by a webhook delivery or a replay (the result is final already) goes at once, then backs
 * off from `pollInitialMs`.
 */
export class PollTiming {
  private readonly estimators = new Map<Awaitable, ReadinessEstimator>();

  constructor(
    private readonly options: { pollInitialMs: number; pollMaxMs: number },
    private readonly random: () => number,
  ) {}

  /** Delay before poll `attempt` (0 = the first) of a `kind` result uploaded at `uploadedAt`. */
  delay(kind: Awaitable, attempt: number, prompted: boolean, uploadedAt: number, now: number): number {
    const { pollInitialMs } = this.options;
    if (prompted) return attempt === 0 ? 0 : this.backoff(attempt - 1, pollInitialMs);
    const estimate = this.estimator(kind).value;
    if (attempt === 0) return Math.max(0, uploadedAt + estimate - now);
    return this.backoff(attempt - 1, Math.max(pollInitialMs, estimate / 4));
  }

  /** What a timed first poll found (ready or not) at `now`. */
  observe(kind: Awaitable, ready: boolean, now: number): void {
    this.estimator(kind).observe(ready, now);
  }

  /** Exponential back-off with jitter, capped at `pollMaxMs`. */
  backoff(attempt: number, initialMs: number): number {
    return backoffDelay(attempt, { initialMs, maxMs: this.options.pollMaxMs }, this.random);
  }

  private estimator(kind: Awaitable): ReadinessEstimator {
    let e = this.estimators.get(kind);
    if (!e) {
      e = new ReadinessEstimator(this.options.pollInitialMs, 10, this.options.pollMaxMs);
      this.estimators.set(kind, e);
    }
    return e;
  }
}
