import { setTimeout as sleep } from 'node:timers/promises';
import { fixIdleRequestQueues, requestQueueClass } from './request-queue.js';

interface Queue {
  pending: Array<{ send: () => void; expectResponse: boolean; correlationId: number }>;
  inflight: Map<number, unknown>;
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  maxInFlightRequests: number;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  scheduleCheckPendingRequests(): void;
  destroy(): void;
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** A real kafkajs RequestQueue, as a broker connection holds it. */
function queue(): Queue {
  const RequestQueue = requestQueueClass() as unknown as new (options: object) => Queue;
  return new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'localhost:9092',
    logger: quiet,
  });
}

describe("kafkajs's request queue with fixIdleRequestQueues", () => {
  beforeAll(() => fixIdleRequestQueues());

  it('schedules nothing after a response when nothing waits and no throttle is on (no 1 ms loop)', async () => {
    const q = queue();
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(q.throttleCheckTimeoutId).toBeNull();
    await sleep(20);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('checks a throttled queue once, when the throttle ends, and then stops', async () => {
    const q = queue();
    q.maybeThrottle(30);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    await sleep(80);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('sends a request waiting for a slot once the slot is free, and a throttled one after the throttle', async () => {
    const q = queue();
    const sent: number[] = [];
    const request = (correlationId: number) => ({
      correlationId,
      expectResponse: true,
      send: () => {
        sent.push(correlationId);
        q.inflight.set(correlationId, { completed: () => {} });
      },
    });
    // One slot, taken: the waiting request stays until a response frees it.
    q.inflight.set(1, { completed: () => {} });
    q.pending.push(request(2));
    q.scheduleCheckPendingRequests();
    await sleep(30);
    expect(sent).toEqual([]);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(sent).toEqual([2]);
    // Throttled with a request waiting: it goes when the throttle ends, without another response.
    q.inflight.clear();
    q.maybeThrottle(40);
    q.pending.push(request(3));
    q.scheduleCheckPendingRequests();
    expect(sent).toEqual([2]);
    await sleep(120);
    expect(sent).toEqual([2, 3]);
    expect(q.throttleCheckTimeoutId).toBeNull();
    q.destroy();
  });
});
