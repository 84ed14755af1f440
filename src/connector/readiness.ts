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
