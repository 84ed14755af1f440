/**
 * The one back-off formula: exponential from `initialMs` by `factor` (default 2), capped at `maxMs`,
 * with "equal jitter" (half fixed, half random) unless `jitter` is false, so callers that failed
 * together spread out, yet none comes back sooner than half the nominal delay. Used by the API
 * client's retries, the CLI's waits for results, and the connector's polls, state writes and deletes.
 */
interface Backoff {
  initialMs: number;
  maxMs: number;
  factor?: number;
  /** False for a deterministic wait (one caller alone, e.g. the CLI waiting for its own result). */
  jitter?: boolean;
}

/** Delay before retry number `attempt` (0-based), in whole milliseconds. */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const growth = (backoff.factor ?? 2) ** Math.min(attempt, 30);
  const nominal = Math.min(backoff.maxMs, backoff.initialMs * growth);
  if (backoff.jitter === false) return Math.round(nominal);
  return Math.round(nominal / 2 + random() * (nominal / 2));
}
