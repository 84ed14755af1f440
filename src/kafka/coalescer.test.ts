import { jest } from '@jest/globals';
import { CoalescingSender } from './coalescer.js';
import { KafkaError, MessageTooLargeError } from './errors.js';
import { messageSize, RECORD_BATCH_OVERHEAD } from './message-size.js';
import type { OutgoingMessage } from './producer.js';

describe('CoalescingSender', () => {
  it('sends what one turn of the event loop sends in one request, and gathers the rest while it is out', async () => {
    const requests: Array<Array<{ topic: string; messages: OutgoingMessage[] }>> = [];
    let release: () => void = () => undefined;
    const producer = {
      sendBatch: (batches: Array<{ topic: string; messages: OutgoingMessage[] }>) => {
        requests.push(batches);
        return new Promise<[]>((resolve) => (release = () => resolve([])));
      },
    };
    const tick = () => new Promise((r) => setImmediate(r));
    const sender = new CoalescingSender(producer);
    const first = [sender.send('a', { key: '1', value: 'x' })];
    // A later microtask of the same turn still joins the first request.
    await Promise.resolve();
    first.push(sender.send('c', { key: '0', value: 'x' }));
    expect(requests).toHaveLength(0);
    await tick();
    expect(requests).toHaveLength(1);
    expect(requests[0]!.map((b) => [b.topic, b.messages.length])).toEqual([
      ['a', 1],
      ['c', 1],
    ]);
    const rest = [sender.send('a', { key: '2', value: 'x' }), sender.send('b', { key: '3', value: 'x' })];
    await tick();
    expect(requests).toHaveLength(1);
    release();
    await Promise.all(first);
    await tick();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.map((b) => [b.topic, b.messages.length])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    release();
    await Promise.all(rest);
  });

  it('rejects every message of a failed request and keeps going', async () => {
    let fail = true;
    const producer = {
      sendBatch: async () => {
        if (fail) throw new Error('broker down');
        return [];
      },
    };
    const sender = new CoalescingSender(producer);
    await expect(sender.send('a', { key: '1', value: 'x' })).rejects.toThrow('broker down');
    fail = false;
    await expect(sender.send('a', { key: '2', value: 'x' })).resolves.toBeUndefined();
  });
});

describe('CoalescingSender with lazy messages', () => {
  type Batches = Array<{ topic: string; messages: OutgoingMessage[] }>;
  const tick = () => new Promise((r) => setImmediate(r));
  /** Lets fake time pass: the lazy linger is a timer. */
  const sleep = (ms: number) => jest.advanceTimersByTimeAsync(ms);
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());
  function recording() {
    const requests: Batches[] = [];
    const releases: Array<() => void> = [];
    const producer = {
      sendBatch: (batches: Batches) => {
        requests.push(batches);
        return new Promise<[]>((resolve) => releases.push(() => resolve([])));
      },
    };
    const keys = (i: number) =>
      requests[i]!.flatMap((b) => b.messages.map((m) => `${b.topic}:${String(m.key)}`));
    return { producer, requests, releases, keys };
  }

  it('starts no request of its own before its linger ends, then starts one', async () => {
    const r = recording();
    const sender = new CoalescingSender(r.producer, 500, { lazyLingerMs: 40 });
    const done = sender.send('s', { key: '1', value: 'x' }, { lazy: true });
    await tick();
    await sleep(10);
    expect(r.requests).toHaveLength(0);
    await sleep(60);
    expect(r.requests).toHaveLength(1);
    expect(r.keys(0)).toEqual(['s:1']);
    r.releases[0]!();
    await done;
  });

  it('goes with the next request another send starts, and resolves when that one is acknowledged', async () => {
    const r = recording();
    const sender = new CoalescingSender(r.producer, 500, { lazyLingerMs: 60_000 });
    let lazyDone = false;
    const lazy = sender.send('s', { key: '1', value: 'x' }, { lazy: true }).then(() => (lazyDone = true));
    await tick();
    expect(r.requests).toHaveLength(0);
    const eager = sender.send('r', { key: '2', value: 'x' });
    await tick();
    expect(r.requests).toHaveLength(1);
    expect(r.keys(0)).toEqual(['s:1', 'r:2']);
    await tick();
    expect(lazyDone).toBe(false);
    r.releases[0]!();
    await Promise.all([lazy, eager]);
    expect(lazyDone).toBe(true);
  });

  it('waits after a request for its linger or the next send, instead of a request of its own at once', async () => {
    const r = recording();
    const sender = new CoalescingSender(r.producer, 500, { lazyLingerMs: 60_000 });
    const first = sender.send('r', { key: '1', value: 'x' });
    await tick();
    expect(r.requests).toHaveLength(1);
    // Queued while the first request is out: lazy alone, it does not follow it at once.
    const lazy = sender.send('s', { key: '2', value: 'x' }, { lazy: true });
    r.releases[0]!();
    await first;
    await tick();
    await tick();
    expect(r.requests).toHaveLength(1);
    const next = sender.send('r', { key: '3', value: 'x' });
    await tick();
    expect(r.requests).toHaveLength(2);
    expect(r.keys(1)).toEqual(['s:2', 'r:3']);
    r.releases[1]!();
    await Promise.all([lazy, next]);
  });

  it('becomes urgent when an eager send replaces it, and stays so when a lazy one replaces that', async () => {
    const r = recording();
    const sender = new CoalescingSender(r.producer, 500, { lazyLingerMs: 60_000 });
    const a = sender.send('s', { key: '1', value: 'old' }, { lazy: true, replace: true });
    await tick();
    expect(r.requests).toHaveLength(0);
    const b = sender.send('s', { key: '1', value: 'mid' }, { replace: true });
    const c = sender.send('s', { key: '1', value: 'new' }, { lazy: true, replace: true });
    await tick();
    expect(r.requests).toHaveLength(1);
    expect(r.requests[0]![0]!.messages.map((m) => m.value)).toEqual(['new']);
    r.releases[0]!();
    await Promise.all([a, b, c]);
  });

  it('is sent at once when asked to send what lingers now', async () => {
    const r = recording();
    const sender = new CoalescingSender(r.producer, 500, { lazyLingerMs: 60_000 });
    const lazy = sender.send('s', { key: '1', value: 'x' }, { lazy: true });
    await tick();
    expect(r.requests).toHaveLength(0);
    sender.sendLingeringNow();
    await tick();
    expect(r.requests).toHaveLength(1);
    r.releases[0]!();
    await lazy;
    // Nothing queued: sending what lingers starts no request.
    sender.sendLingeringNow();
    await tick();
    expect(r.requests).toHaveLength(1);
  });

  it('when asked to send what lingers now while a request is out, follows that request as soon as it is acknowledged', async () => {
    const r = recording();
    const sender = new CoalescingSender(r.producer, 500, { lazyLingerMs: 60_000 });
    const first = sender.send('r', { key: '1', value: 'x' });
    await tick();
    expect(r.requests).toHaveLength(1);
    const lazy = sender.send('s', { key: '2', value: 'x' }, { lazy: true });
    sender.sendLingeringNow();
    await tick();
    // One request at a time: the message sent at once waits for the first one's answer, not its linger.
    expect(r.requests).toHaveLength(1);
    r.releases[0]!();
    await first;
    await tick();
    expect(r.requests).toHaveLength(2);
    expect(r.keys(1)).toEqual(['s:2']);
    // Queued after the sendLingeringNow: lazy again, it waits for its linger or the next request.
    const later = sender.send('s', { key: '3', value: 'x' }, { lazy: true });
    r.releases[1]!();
    await lazy;
    await tick();
    await tick();
    expect(r.requests).toHaveLength(2);
    sender.sendLingeringNow();
    await tick();
    expect(r.requests).toHaveLength(3);
    r.releases[2]!();
    await later;
  });
});

describe('CoalescingSender with replace', () => {
  type Batches = Array<{ topic: string; messages: OutgoingMessage[] }>;

  function gated() {
    const requests: Batches[] = [];
    let release: () => void = () => undefined;
    let fail: Error | null = null;
    const producer = {
      sendBatch: (batches: Batches) => {
        requests.push(batches);
        return new Promise<[]>((resolve, reject) => {
          release = () => (fail ? reject(fail) : resolve([]));
        });
      },
    };
    return {
      sender: new CoalescingSender(producer),
      requests,
      release: () => release(),
      failNext: (err: Error) => (fail = err),
    };
  }
  const values = (b: Batches) =>
    b.flatMap((t) => t.messages.map((m) => `${t.topic}/${String(m.key)}=${String(m.value)}`));
  const tick = () => new Promise((r) => setImmediate(r));

  it('sends only the latest value of a key queued meanwhile, and resolves every caller with it', async () => {
    const g = gated();
    const first = g.sender.send('s', { key: 'k', value: 'v1', partition: 0 }, { replace: true });
    await tick();
    const second = g.sender.send('s', { key: 'k', value: 'v2', partition: 0 }, { replace: true });
    const other = g.sender.send('s', { key: 'j', value: 'w1', partition: 0 }, { replace: true });
    const third = g.sender.send('s', { key: 'k', value: 'v3', partition: 0 }, { replace: true });
    let secondDone = false;
    void second.then(() => (secondDone = true));
    g.release();
    await first;
    await tick();
    expect(secondDone).toBe(false);
    expect(g.requests.map(values)).toEqual([['s/k=v1'], ['s/k=v3', 's/j=w1']]);
    g.release();
    await Promise.all([second, third, other]);
  });

  it('never replaces across topics, partitions or without the option, nor a message already sent', async () => {
    const g = gated();
    const inFlight = g.sender.send('s', { key: 'k', value: 'a', partition: 0 }, { replace: true });
    await tick();
    const queued = [
      g.sender.send('s', { key: 'k', value: 'b', partition: 0 }, { replace: true }),
      g.sender.send('t', { key: 'k', value: 'c', partition: 0 }, { replace: true }),
      g.sender.send('s', { key: 'k', value: 'd', partition: 1 }, { replace: true }),
      g.sender.send('s', { key: 'k', value: 'e', partition: 0 }),
      g.sender.send('s', { key: 'k', value: 'f', partition: 0 }, { replace: true }),
    ];
    g.release();
    await inFlight;
    await tick();
    // 'e' does not replace, and 'f' may not jump ahead of it: both are sent after 'b'.
    expect(g.requests.map(values)).toEqual([['s/k=a'], ['s/k=b', 's/k=d', 's/k=e', 's/k=f', 't/k=c']]);
    g.release();
    await Promise.all(queued);
  });

  it('rejects every caller of a replaced entry when its request fails', async () => {
    const g = gated();
    const first = g.sender.send('s', { key: 'k', value: 'v1' }, { replace: true });
    await tick();
    const later = [
      g.sender.send('s', { key: 'k', value: 'v2' }, { replace: true }),
      g.sender.send('s', { key: 'k', value: 'v3' }, { replace: true }),
    ];
    g.release();
    await first;
    await tick();
    g.failNext(new Error('broker down'));
    g.release();
    const settled = await Promise.allSettled(later);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
  });
});

describe('CoalescingSender and message size', () => {
  type Batches = Array<{ topic: string; messages: OutgoingMessage[] }>;
  const value = (bytes: number) => Buffer.alloc(bytes, 1);

  it('rejects only an oversized message, before sending, and sends the others', async () => {
    const requests: Batches[] = [];
    const producer = {
      sendBatch: async (batches: Batches) => {
        requests.push(batches);
        return [];
      },
      limitFor: () => 1000,
    };
    const sender = new CoalescingSender(producer);
    const results = await Promise.allSettled([
      sender.send('a', { key: '1', value: value(10) }),
      sender.send('a', { key: '2', value: value(5000) }),
      sender.send('b', { key: '3', value: value(10) }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (results[1] as PromiseRejectedResult).reason as MessageTooLargeError;
    expect(error).toBeInstanceOf(MessageTooLargeError);
    expect(error).toMatchObject({ topic: 'a', limit: 1000, retriable: false, fromBroker: false });
    expect(error.size).toBeGreaterThan(5000);
    const sentKeys = requests.flatMap((batches) => batches.flatMap((b) => b.messages.map((m) => m.key)));
    expect(sentKeys).toEqual(['1', '3']);
  });

  it('bounds a gathered request in bytes, so gathering alone never builds a batch too large', async () => {
    const requests: Batches[] = [];
    let release: () => void = () => undefined;
    const producer = {
      sendBatch: (batches: Batches) => {
        requests.push(batches);
        return new Promise<[]>((resolve) => (release = () => resolve([])));
      },
    };
    const sender = new CoalescingSender(producer, 500, { maxBatchBytes: 1000 });
    const first = sender.send('a', { key: '0', value: value(10) });
    await new Promise((r) => setImmediate(r));
    // Five messages of ~400 bytes each: at most two fit in 1000 bytes.
    const rest = Array.from({ length: 5 }, (_, i) =>
      sender.send('a', { key: String(i + 1), value: value(400) }),
    );
    for (let round = 0; round < 4; round++) {
      release();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all([first, ...rest]);
    expect(requests.map((batches) => batches[0]!.messages.length)).toEqual([1, 2, 2, 1]);
  });

  it('when the broker refuses a gathered request as too large, resends one by one and fails only the culprit', async () => {
    const requests: string[][] = [];
    const tooLarge = Object.assign(
      new Error('The request included a message larger than the max message size'),
      {
        type: 'MESSAGE_TOO_LARGE',
      },
    );
    let release: () => void = () => undefined;
    const producer = {
      sendBatch: async (batches: Batches) => {
        const keys = batches.flatMap((b) => b.messages.map((m) => String(m.key)));
        requests.push(keys);
        if (keys.length === 1 && keys[0] === 'first') await new Promise<void>((r) => (release = r));
        if (keys.includes('big'))
          throw new KafkaError('producing to a: too large', { retriable: false, cause: tooLarge });
        return [];
      },
    };
    const sender = new CoalescingSender(producer);
    const first = sender.send('a', { key: 'first', value: 'x' });
    await new Promise((r) => setImmediate(r));
    const gathered = ['x', 'big', 'y'].map((key) => sender.send('a', { key, value: 'v' }));
    release();
    await first;
    const results = await Promise.allSettled(gathered);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(requests).toEqual([['first'], ['x', 'big', 'y'], ['x'], ['big'], ['y']]);
  });

  it('still fails every message of a request refused for another reason', async () => {
    const producer = {
      sendBatch: async () => {
        throw new KafkaError('broker down', { retriable: true });
      },
    };
    const sender = new CoalescingSender(producer);
    const results = await Promise.allSettled([
      sender.send('a', { key: '1', value: 'x' }),
      sender.send('a', { key: '2', value: 'x' }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});

describe('messageSize', () => {
  it('counts key, value, headers and the batch header as an upper bound', () => {
    const bare = messageSize({ key: null, value: null });
    expect(bare).toBeGreaterThanOrEqual(RECORD_BATCH_OVERHEAD);
    const full = messageSize({ key: 'kk', value: Buffer.alloc(100), headers: { event_id: 'é' } });
    expect(full - bare).toBeGreaterThanOrEqual(2 + 100 + 'event_id'.length + 2);
  });
  it('never lets a lazy message’s linger hold the process, and sends it at once when asked', async () => {
    const requests: number[] = [];
    const producer = {
      sendBatch: async (batches: Array<{ topic: string; messages: OutgoingMessage[] }>) => {
        requests.push(batches.length);
        return [];
      },
    };
    const sender = new CoalescingSender(producer, 500, { lazyLingerMs: 60_000 });
    const lazy = sender.send('s', { key: 'k', value: 'x' }, { lazy: true });
    const timer = (sender as unknown as { lingering: NodeJS.Timeout }).lingering;
    expect(timer.hasRef()).toBe(false);
    // A stop asks for what lingers: it goes now, not a minute later.
    sender.sendLingeringNow();
    await lazy;
    expect(requests).toEqual([1]);
  });

  it('refuses what is queued when a flush throws, instead of leaving it waiting for good', async () => {
    let calls = 0;
    const producer = {
      sendBatch: async () => {
        calls += 1;
        return [];
      },
    };
    const sender = new CoalescingSender(producer);
    // A defect inside the flush (here: taking a batch) is all that can make it throw.
    (sender as unknown as { takeBatch: () => never }).takeBatch = () => {
      throw new TypeError('a bug');
    };
    await expect(sender.send('a', { key: '1', value: 'x' })).rejects.toThrow('a bug');
    expect(calls).toBe(0);
  });
});
