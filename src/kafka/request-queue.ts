/**
 * Stops the busy loop of kafkajs 2.2.4's request queue (unmaintained; tulios/kafkajs#1556, #1704):
 * after every response, each broker connection re-checks its pending requests after
 * `throttledUntil - Date.now()` ms, which is about minus the epoch when the broker never throttled;
 * Node clamps that to 1 ms (Node ≥ 23 also prints a TimeoutNegativeWarning), the check schedules the
 * next one the same way, and so every connection of every client runs a timer each millisecond for
 * as long as it lives. Measured on an idle `docstream run`: half of its CPU (docs/performance.md).
 *
 * The replacement keeps each case the library meant: a request waiting for a slot or for a throttle
 * to end is checked again (every 10 ms, or when the throttle ends), and a queue throttled with
 * nothing waiting is checked once at the throttle's end; a queue with nothing waiting and no
 * throttle schedules nothing (a response frees a slot and checks the queue by itself).
 */
import { createRequire } from 'node:module';

/** The fields of kafkajs's RequestQueue that its scheduler uses. */
export interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** kafkajs's CHECK_PENDING_REQUESTS_INTERVAL. */
const CHECK_PENDING_MS = 10;

export function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId) return;
  const throttledFor = this.throttledUntil - Date.now();
  let delay: number;
  if (this.pending.length > 0) delay = throttledFor > 0 ? throttledFor : CHECK_PENDING_MS;
  else if (throttledFor > 0) delay = throttledFor;
  else return;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delay);
}

const require = createRequire(import.meta.url);

/** kafkajs's RequestQueue class (the module its connections load: same path, same module). */
export function requestQueueClass(): { prototype: RequestQueueLike } {
  return require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueLike };
}

/** Puts the replacement on kafkajs's RequestQueue, once per process. */
export function fixIdleRequestQueues(): void {
  requestQueueClass().prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
}
