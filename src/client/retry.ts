/**
 * The one retry loop of the client (p-retry underneath): exponential back-off with jitter,
 * the server's Retry-After honoured, bounded by an attempt count and a total time.
 * Whether a failure may be retried at all is the caller's decision (`shouldRetry`); this
 * module only decides when.
 */
import pRetry, { AbortError } from 'p-retry';
import { ApiError } from './errors.js';
import { type Clock, systemClock } from './limiter.js';
import { backoffDelay as jitteredBackoff } from '../util/backoff.js';

export interface RetryPolicy {
  /** Attempts in all, the first one included. */
  attempts: number;
  /** Bound on the whole call, waits included. */
  maxTotalMs: number;
  minDelayMs: number;
  maxDelayMs: number;
  /**
   * Attempts of a create whose outcome is unknown (5xx, or no answer once the request was sent),
   * within `attempts`. 1: never resent (the safe default: a resend may create a second submission).
   * More: each resend may leave an empty submission behind, one nobody has the upload URL of.
   */
  ambiguousCreateAttempts: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 6,
  maxTotalMs: 60_000,
  minDelayMs: 200,
  maxDelayMs: 10_000,
  ambiguousCreateAttempts: 1,
};

export interface RetryDecision {
  retry: boolean;
  /** A delay the server asked for (Retry-After); replaces the computed back-off. */
  retryAfterMs?: number;
}

/**
 * Back-off before retry number `retry` (0-based): "equal jitter" - half the capped exponential
 * delay fixed, half random - so clients that failed together do not retry together, and no
 * retry is immediate.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  return jitteredBackoff(retry, { initialMs: policy.minDelayMs, maxMs: policy.maxDelayMs }, random);
}

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

/** Awaits `promise`; a failure ends the surrounding `withRetries` at once, unretried. */
export async function finalOnFailure<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw new AbortError(error instanceof Error ? error : String(error));
  }
}

export async function withRetries<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  policy: RetryPolicy,
  decide: (error: Error) => RetryDecision,
  clock: Clock = systemClock,
): Promise<T> {
  const start = clock.now();
  // Most calls succeed at once: the first attempt runs outside p-retry (whose setup per call was
  // about 1.5 % of the connector's CPU), and only a failure enters it, as its first attempt.
  let firstError: unknown;
  try {
    return await attempt(1);
  } catch (error) {
    firstError = error;
  }
  let sent = 1;
  try {
    return await pRetry(
      async (attemptNumber) => {
        sent = attemptNumber;
        try {
          if (attemptNumber === 1) throw firstError;
          return await attempt(attemptNumber);
        } catch (error) {
          // p-retry never retries a TypeError it does not recognise as a network error; all our
          // failures are Error subclasses, so wrap anything odd to keep the decision ours.
          if (error instanceof Error) throw error;
          throw new AbortError(String(error));
        }
      },
      {
        retries: Math.max(0, policy.attempts - 1),
        maxRetryTime: policy.maxTotalMs,
        // The delay is ours (Retry-After, jitter), slept in shouldRetry; p-retry adds none.
        minTimeout: 0,
        shouldRetry: async ({ error, retriesConsumed }) => {
          const decision = decide(error);
          if (!decision.retry) return false;
          const remaining = policy.maxTotalMs - (clock.now() - start);
          const delay = decision.retryAfterMs ?? backoffDelay(retriesConsumed, policy);
          if (delay >= remaining) return false;
          await clock.sleep(delay);
          return true;
        },
      },
    );
  } catch (error) {
    // The dead letter of a call that failed after retries says how often it was tried.
    if (error instanceof ApiError) error.attempts = sent;
    throw error;
  }
}
