/**
 * The client's retry policy and the reading of Retry-After. The loop itself is `util/retry.ts`; what
 * is retried, and what counts, is the sender's rule (http.ts).
 */

export interface RetryPolicy {
  /**
   * Bound on one call, waits included: a transient API failure (429, 5xx, no answer) is retried until then.
   * The connector sets it to a document's deadline.
   */
  maxTotalMs: number;
  /** First and largest pause between two tries of one call. */
  minDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxTotalMs: 60_000,
  minDelayMs: 200,
  maxDelayMs: 10_000,
};

/**
 * Parses Retry-After: delta-seconds or an HTTP date. Returns milliseconds from `nowMs`
 * (wall clock), or undefined when absent or malformed.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP date always has a day or month name; without this, Date.parse reads "-1" as a year.
  if (!/[A-Za-z]/.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
