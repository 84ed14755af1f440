/**
 * Waiting for an asynchronous result: poll with exponential back-off (the spec's recommended
 * practice) while the endpoint answers 404 (results and the decision verdict are 404 until
 * ready). Other errors end the wait at once; the sender has already retried what it may. The
 * loop is `util/retry.ts`, without jitter: one caller waits for its own result.
 */
import { NotFoundError } from './errors.js';
import { type Clock, systemClock } from './limiter.js';
import { retry } from '../util/retry.js';

export interface PollOptions {
  /** Give up after this long (the last NotFoundError is rethrown). */
  timeoutMs: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  clock?: Clock;
  signal?: AbortSignal;
  /** Called before each wait, e.g. to advance a progress indicator. */
  onWait?: (attempt: number, delayMs: number) => void;
}

export function pollUntilReady<T>(fetch: () => Promise<T>, options: PollOptions): Promise<T> {
  return retry(
    () => {
      options.signal?.throwIfAborted();
      return fetch();
    },
    {
      budgetMs: options.timeoutMs,
      lastTryAtBudget: true,
      backoff: {
        initialMs: options.initialDelayMs ?? 250,
        maxMs: options.maxDelayMs ?? 5_000,
        factor: 1.6,
        jitter: false,
      },
      classify: (error) => (error instanceof NotFoundError ? { retry: true } : { retry: false }),
      onRetry: (_error, tries, delayMs) => options.onWait?.(tries, delayMs),
      clock: options.clock ?? systemClock,
    },
  );
}
