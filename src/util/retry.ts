/**
 * The one retry loop. A caller says what one try is and what a failure means (`classify`): give up,
 * or try again — counting the failure as an attempt or not, after the back-off or not before a time
 * the other side named. The loop ends on success, on a failure classified final, when the counted
 * attempts are spent, or when the next wait would pass the time budget; it then throws the last error.
 *
 * Why "counts": a transient API failure (429, 5xx, a refused connection) is nobody's fault and must not use
 * up a budget of attempts meant for real failures; only time bounds it. p-retry cannot carry that
 * policy (an uncounted failure is retried without a wait and still ends the loop once the counted
 * retries are spent; no failure can name its delay): docs/decisions/0013-retries-without-p-retry.md.
 */
import { backoffDelay } from './backoff.js';

export interface RetryClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: RetryClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export type RetryVerdict =
  | { retry: false }
  | {
      retry: true;
      /** False: the failure is transient and uses no attempt (default true). */
      counts?: boolean;
      /** The other side's earliest time for the next try (Retry-After); spread with jitter. */
      notBeforeMs?: number;
      /** Try again at once: the caller already waited (e.g. for an outage to end) or changed the try. */
      immediately?: boolean;
    };

export interface RetryOptions {
  /** Counted attempts in all, the first included (default: unbounded, the budget alone bounds). */
  attempts?: number;
  /** Bound on the whole, waits included (default: unbounded). */
  budgetMs?: number;
  /** Back-off between tries (equal jitter unless `jitter` is false; see backoff.ts). */
  backoff: { initialMs: number; maxMs: number; factor?: number; jitter?: boolean };
  /** Wait the first back-off before the first try too (probing something just found down). */
  waitFirst?: boolean;
  /**
   * True: a wait that would pass the budget is cut to what is left of it, and one last try is made at
   * the budget (a wait for a result: the caller's timeout is the last moment worth asking). Default:
   * the loop gives up instead of a wait that would pass it.
   */
  lastTryAtBudget?: boolean;
  classify(error: unknown, tries: number): RetryVerdict;
  /** Before each wait: the failure, the tries so far and the wait (for a log line). */
  onRetry?(error: unknown, tries: number, delayMs: number): void;
  /** When the loop ends on a failure: why, and the tries made. */
  onGiveUp?(error: unknown, tries: number, why: 'final' | 'attempts' | 'budget'): void;
  clock?: RetryClock;
  random?: () => number;
}

/** Runs `attempt` (called with the try number, from 1) until it succeeds or the loop gives up. */
export async function retry<T>(attempt: (tries: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const clock = options.clock ?? realClock;
  const random = options.random ?? Math.random;
  const start = clock.now();
  const attempts = options.attempts ?? Number.POSITIVE_INFINITY;
  const budget = options.budgetMs ?? Number.POSITIVE_INFINITY;
  let counted = 0;
  const shift = options.waitFirst ? 1 : 0;
  if (options.waitFirst) await clock.sleep(backoffDelay(0, options.backoff, random));
  for (let tries = 1; ; tries++) {
    try {
      return await attempt(tries);
    } catch (error) {
      const verdict = options.classify(error, tries);
      if (!verdict.retry) {
        options.onGiveUp?.(error, tries, 'final');
        throw error;
      }
      if (verdict.counts !== false && ++counted >= attempts) {
        options.onGiveUp?.(error, tries, 'attempts');
        throw error;
      }
      let delay = verdict.immediately
        ? 0
        : verdict.notBeforeMs === undefined
          ? backoffDelay(tries - 1 + shift, options.backoff, random)
          : // A named time is the earliest: callers told the same instant are spread over up to half of it more.
            Math.round(verdict.notBeforeMs + random() * Math.min(verdict.notBeforeMs / 2, 2000));
      const left = budget - (clock.now() - start);
      if (options.lastTryAtBudget ? left <= 0 : delay >= left) {
        options.onGiveUp?.(error, tries, 'budget');
        throw error;
      }
      delay = Math.min(delay, left);
      options.onRetry?.(error, tries, delay);
      if (delay > 0) await clock.sleep(delay);
    }
  }
}
