/**
 * Learns how long each kind of result takes to become final, so that the first poll lands just after
 * it is ready instead of spending calls on early 404s. The estimate tracks a high quantile of the
 * processing time: a poll that finds the result not ready moves it up a lot, a poll that finds it ready
 * moves it down a little, and at equilibrium about `quantile` of first polls succeed.
 */
export class ReadinessEstimator {
  private estimateMs: number;

  constructor(
    initialMs: number,
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly quantile = 0.9,
    private readonly gain = 0.1,
  ) {
    this.estimateMs = Math.min(maxMs, Math.max(minMs, initialMs));
  }

  get value(): number {
    return this.estimateMs;
  }

  /** Records the outcome of a first poll. */
  observe(ready: boolean): void {
    const factor = ready ? 1 - this.gain * (1 - this.quantile) : 1 + this.gain * this.quantile;
    this.estimateMs = Math.min(this.maxMs, Math.max(this.minMs, this.estimateMs * factor));
  }
}
