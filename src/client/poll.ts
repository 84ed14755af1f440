/**
 * Waiting for an asynchronous result: poll with exponential back-off (the spec's recommended
 * practice) while the endpoint answers 404 (results and the decision verdict are 404 until
 * ready). Other errors end the wait at once; the sender has already retried what it may. The
 * waits come from `util/backoff.ts`, without jitter: one caller waits for its own result.
 */
import { NotFoundError } from './errors.js';
import { type Clock, systemClock } from './limiter.js';
import { backoffDelay } from '../util/backoff.js';

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

export async function pollUntilReady<T>(fetch: () => Promise<T>, options: PollOptions): Promise<T> {
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + options.timeoutMs;
  const backoff = {
    initialMs: options.initialDelayMs ?? 250,
    maxMs: options.maxDelayMs ?? 5_000,
    factor: 1.6,
    jitter: false,
  };
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await fetch();
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const remaining = deadline - clock.now();
      if (remaining <= 0) throw error;
      const wait = Math.min(backoffDelay(attempt - 1, backoff), remaining);
      options.onWait?.(attempt, wait);
      await clock.sleep(wait);
    }
  }
}
