import { jest } from '@jest/globals';
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
  // Fake time: the queue's throttle checks and request deadlines are timers, passed by the tests.
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('schedules nothing after a response when nothing waits and no throttle is on (no 1 ms loop)', async () => {
    const q = queue();
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(q.throttleCheckTimeoutId).toBeNull();
    await jest.advanceTimersByTimeAsync(20);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('checks a throttled queue once, when the throttle ends, and then stops', async () => {
    const q = queue();
    q.maybeThrottle(30);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    await jest.advanceTimersByTimeAsync(80);
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
    await jest.advanceTimersByTimeAsync(30);
    expect(sent).toEqual([]);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(sent).toEqual([2]);
    // Throttled with a request waiting: it goes when the throttle ends, without another response.
    q.inflight.clear();
    q.maybeThrottle(40);
    q.pending.push(request(3));
    q.scheduleCheckPendingRequests();
    expect(sent).toEqual([2]);
    await jest.advanceTimersByTimeAsync(120);
    expect(sent).toEqual([2, 3]);
    expect(q.throttleCheckTimeoutId).toBeNull();
    q.destroy();
  });

  describe('request timeouts', () => {
    interface TimedQueue {
      inflight: Map<number, unknown>;
      requestTimeoutIntervalId: NodeJS.Timeout | null;
      push(request: object): void;
      fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
      scheduleRequestTimeoutCheck(): void;
      destroy(): void;
    }

    /** A real queue enforcing a 40 ms request timeout, its connection open. */
    function timedQueue(): TimedQueue {
      const RequestQueue = requestQueueClass() as unknown as new (options: object) => TimedQueue;
      const q = new RequestQueue({
        maxInFlightRequests: 10,
        requestTimeout: 40,
        enforceRequestTimeout: true,
        clientId: 'test',
        broker: 'localhost:9092',
        logger: quiet,
      });
      q.scheduleRequestTimeoutCheck();
      return q;
    }

    function send(q: TimedQueue, correlationId: number): { outcome: string } {
      const seen = { outcome: 'pending' };
      q.push({
        entry: {
          correlationId,
          apiKey: 1,
          apiName: 'Fetch',
          apiVersion: 11,
          resolve: () => (seen.outcome = 'completed'),
          reject: (e: Error) => (seen.outcome = e.name),
        },
        expectResponse: true,
        sendRequest: () => {},
      });
      return seen;
    }

    it('sets no timer while nothing is in flight (an idle connection wakes nobody)', () => {
      const q = timedQueue();
      expect(q.requestTimeoutIntervalId).toBeNull();
      const seen = send(q, 1);
      expect(q.requestTimeoutIntervalId).not.toBeNull();
      q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
      expect(seen.outcome).toBe('completed');
      q.destroy();
      expect(q.requestTimeoutIntervalId).toBeNull();
    });

    it('times out a request at its deadline, and then sets nothing', async () => {
      const q = timedQueue();
      const seen = send(q, 1);
      await jest.advanceTimersByTimeAsync(15);
      expect(seen.outcome).toBe('pending');
      await jest.advanceTimersByTimeAsync(60);
      expect(seen.outcome).toBe('KafkaJSRequestTimeoutError');
      expect(q.inflight.size).toBe(0);
      expect(q.requestTimeoutIntervalId).toBeNull();
    });

    it('after an answered request, still times out the one sent after it', async () => {
      const q = timedQueue();
      const first = send(q, 1);
      await jest.advanceTimersByTimeAsync(20);
      const second = send(q, 2);
      q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
      expect(first.outcome).toBe('completed');
      // The timer set for the first request's deadline finds the second in time and waits for it.
      await jest.advanceTimersByTimeAsync(35);
      expect(second.outcome).toBe('pending');
      await jest.advanceTimersByTimeAsync(60);
      expect(second.outcome).toBe('KafkaJSRequestTimeoutError');
      expect(q.requestTimeoutIntervalId).toBeNull();
    });

    it('checks nothing after the connection closed (destroy)', async () => {
      const q = timedQueue();
      const seen = send(q, 1);
      q.destroy();
      await jest.advanceTimersByTimeAsync(80);
      expect(seen.outcome).toBe('pending');
      expect(q.requestTimeoutIntervalId).toBeNull();
    });
  });
});
