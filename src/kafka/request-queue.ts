/**
 * Stops the busy loop of kafkajs 2.2.4's request queue (unmaintained; tulios/kafkajs#1556 and
 * tulios/kafkajs#1704): after every response, each broker connection re-checks its pending requests
 * after `throttledUntil - Date.now()` ms, which is about minus the epoch when the broker never
 * throttled; Node clamps that to 1 ms (and Node 23 and later print a TimeoutNegativeWarning), the check
 * schedules the next one the same way, and so every connection of every client runs a timer each
 * millisecond for as long as it lives: most of an idle `docstream run`'s CPU (docs/performance.md).
 * The replacement keeps each case the library meant: a request waiting for a slot or for a throttle
 * to end is checked again (every 10 ms, or when the throttle ends), and a queue throttled with
 * nothing waiting is checked once at the throttle's end; a queue with nothing waiting and no
 * throttle schedules nothing (a response frees a slot and checks the queue by itself).
 *
 * The request-timeout check is replaced too (see `scheduleRequestTimeoutCheck`).
 */
import { internalsPatchable, kafkajsInternal } from './kafkajs-internals.js';
import { optimisationOn } from '../util/optimisations.js';

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

/** What the request-timeout check reads of kafkajs's SocketRequest. */
interface InflightRequest {
  sentAt: number | null;
  requestTimeout: number;
  timeoutRequest(): void;
}

/** The fields of kafkajs's RequestQueue that its request-timeout check uses, and the two it adds. */
export interface TimeoutCheckedQueue {
  enforceRequestTimeout: boolean;
  inflight: Map<number, InflightRequest>;
  /** kafkajs's field, so that its `destroy` clears the timer; here a timeout, not an interval. */
  requestTimeoutIntervalId: NodeJS.Timeout | null;
  /** Set from the connection's open (kafkajs's `scheduleRequestTimeoutCheck`) to `destroy`. */
  timeoutChecked?: boolean;
  /** The deadline the timer is set for. */
  timeoutCheckAt?: number;
}

function clearTimeoutCheck(q: TimeoutCheckedQueue): void {
  if (q.requestTimeoutIntervalId) clearTimeout(q.requestTimeoutIntervalId);
  q.requestTimeoutIntervalId = null;
}

function armTimeoutCheck(q: TimeoutCheckedQueue, at: number): void {
  clearTimeoutCheck(q);
  q.timeoutCheckAt = at;
  // kafkajs times a request out once more than its timeout has passed: one millisecond after.
  q.requestTimeoutIntervalId = setTimeout(() => checkRequestTimeouts(q), Math.max(0, at - Date.now()) + 1);
}

/** Times out what is past its deadline, then sets the timer for the earliest deadline left, if any. */
export function checkRequestTimeouts(q: TimeoutCheckedQueue): void {
  q.requestTimeoutIntervalId = null;
  if (!q.timeoutChecked) return;
  const now = Date.now();
  let earliest = Number.POSITIVE_INFINITY;
  for (const request of q.inflight.values()) {
    if (request.sentAt === null) continue;
    const deadline = request.sentAt + request.requestTimeout;
    if (now > deadline) request.timeoutRequest();
    else earliest = Math.min(earliest, deadline);
  }
  if (earliest !== Number.POSITIVE_INFINITY) armTimeoutCheck(q, earliest);
}

/**
 * kafkajs calls this when its connection opens. kafkajs's own checks the queue's requests for a
 * timeout every 100 ms from the moment its connection opens until it closes, whether anything is in
 * flight or not: an idle `docstream run` (several connections) woke for it many times a second. This
 * one sets one timer at the earliest deadline of what is in flight (sent at + its timeout, as kafkajs
 * computes it) and none while nothing is: a request is timed out at its deadline, as before (then
 * within 100 ms of it), and an idle connection wakes nobody.
 */
export function scheduleRequestTimeoutCheck(this: TimeoutCheckedQueue & { destroy(): void }): void {
  this.destroy();
  if (!this.enforceRequestTimeout) return;
  this.timeoutChecked = true;
  checkRequestTimeouts(this);
}

interface RequestQueuePrototype extends RequestQueueLike {
  scheduleRequestTimeoutCheck(this: TimeoutCheckedQueue & { destroy(): void }): void;
  sendSocketRequest(this: TimeoutCheckedQueue, request: InflightRequest & { correlationId: number }): void;
  destroy(this: TimeoutCheckedQueue): void;
}

/** kafkajs's RequestQueue class (the module its connections load: same path, same module). */
export function requestQueueClass(): { prototype: RequestQueuePrototype } {
  return kafkajsInternal('network/requestQueue/index.js');
}

let fixed = false;

/** Puts the replacements on kafkajs's RequestQueue, once per process (on kafkajs 2.2.4 only). */
export function fixIdleRequestQueues(): void {
  if (fixed) return;
  fixed = true;
  if (!internalsPatchable() || !optimisationOn('kafkajs-idle-request-queues')) return;
  const proto = requestQueueClass().prototype;
  proto.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  proto.scheduleRequestTimeoutCheck = scheduleRequestTimeoutCheck;
  const send = proto.sendSocketRequest;
  proto.sendSocketRequest = function (this: TimeoutCheckedQueue, request) {
    send.call(this, request);
    if (!this.timeoutChecked || request.sentAt === null || !this.inflight.has(request.correlationId)) return;
    // A deadline later than the one the timer is set for is found when the timer fires.
    const deadline = request.sentAt + request.requestTimeout;
    if (!this.requestTimeoutIntervalId || deadline < (this.timeoutCheckAt ?? Number.POSITIVE_INFINITY)) {
      armTimeoutCheck(this, deadline);
    }
  };
  const destroy = proto.destroy;
  proto.destroy = function (this: TimeoutCheckedQueue) {
    destroy.call(this);
    this.timeoutChecked = false;
    this.requestTimeoutIntervalId = null;
  };
}
