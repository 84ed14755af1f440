/**
 * The one back-off formula: exponential from `initialMs`, capped at `maxMs`, with "equal jitter"
 * (half fixed, half random) so callers that failed together spread out, yet none comes back sooner
 * than half the nominal delay. Used by the API client's retries, the CLI's waits, and the
 * connector's polls, state writes and deletes.
 */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** Delay before retry number `attempt` (0-based), in whole milliseconds. */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const nominal = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(nominal / 2 + random() * (nominal / 2));
}
