import { jest } from '@jest/globals';
import type { Assignment, BatchControl, IncomingBatch, TopicPartitionOffset } from '../../kafka/consumer.js';
import { silentLogger } from '../../observability/logger.js';
import { ConsumerLoop } from './consumer-loop.js';
import type { LoopConsumer } from './loop-interfaces.js';

class Outage extends Error {}

class FakeConsumer implements LoopConsumer {
  calls: string[] = [];
  pause(topic: string, partitions: number[]): void {
    this.calls.push(`pause ${topic} ${partitions.join(',')}`);
  }
  resume(topic: string, partitions: number[]): void {
    this.calls.push(`resume ${topic} ${partitions.join(',')}`);
  }
  currentAssignment(): Assignment {
    return { in: [0], fb: [0] };
  }
  commits: TopicPartitionOffset[][] = [];
  async commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    this.commits.push(offsets);
  }
}

class FakeControl implements BatchControl {
  resolved: string[] = [];
  resolveOffset(offset: string): void {
    this.resolved.push(offset);
  }
  async heartbeat(): Promise<void> {}
  isRunning(): boolean {
    return true;
  }
  isStale(): boolean {
    return false;
  }
}

function batch(topic: string, offsets: number[]): IncomingBatch {
  return {
    topic,
    partition: 0,
    highWatermark: '100',
    messages: offsets.map((o) => ({
      topic,
      partition: 0,
      offset: String(o),
      timestamp: '0',
      key: null,
      value: Buffer.from('{}'),
      headers: {},
    })),
  };
}

function setup() {
  const consumer = new FakeConsumer();
  let down = true;
  let probes = 0;
  const changes: boolean[] = [];
  const handled: string[] = [];
  const loop = new ConsumerLoop({
    topics: { arrived: 'in', feedback: 'fb' },
    maxInFlight: 10,
    engine: { inFlight: 0, unfinishedOn: () => 0, resume: async () => undefined, revoke: () => undefined },
    state: { assign: async () => undefined, revoke: () => undefined, unfinished: () => [] },
    arrivals: async (m) => {
      handled.push(m.offset);
      if (down && m.offset === '3') throw new Outage('registry answered 503');
    },
    feedback: async (m) => {
      handled.push(`fb${m.offset}`);
      if (down) throw new Outage('registry refused the connection');
    },
    logger: silentLogger,
    outage: {
      isOutage: (err) => err instanceof Outage,
      probe: async () => {
        probes += 1;
        if (probes < 3) throw new Error('still down');
        down = false;
      },
      onChange: (paused) => changes.push(paused),
      initialDelayMs: 50,
      maxDelayMs: 100,
    },
    admissionWaitMs: 20,
  });
  loop.attach(consumer);
  return { loop, consumer, handled, changes, probes: () => probes };
}

/** Moves jest's fake clock on 5 ms at a time until `condition` holds, at most 2.5 s of it. */
const until = async (condition: () => boolean) => {
  for (let i = 0; i < 500 && !condition(); i++) await jest.advanceTimersByTimeAsync(5);
};

/** Moves the fake clock on 5 ms at a time until `p` settles (at most 5 s of it); then its outcome. */
async function settle<T>(p: Promise<T>): Promise<T> {
  let done = false;
  const watched = p.finally(() => (done = true));
  for (let i = 0; i < 1000 && !done; i++) await jest.advanceTimersByTimeAsync(5);
  if (!done) throw new Error('still pending after 5 s of fake time');
  return watched;
}

describe('ConsumerLoop during a registry outage', () => {
  // The probes' back-off runs on the fake clock; promise jobs, nextTick and setImmediate stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('pauses both inputs without crashing, probes, resumes, then handles the failed record again', async () => {
    const { loop, consumer, handled, changes, probes } = setup();
    const control = new FakeControl();
    await expect(settle(loop.onBatch(batch('in', [1, 2, 3, 4]), control))).resolves.toBeUndefined();
    // Every record taken is the loop's: the one that met the outage is handled again once it is over.
    expect(control.resolved).toEqual(['4']);
    expect(loop.pausedForOutage).toBe(true);
    expect(consumer.calls).toEqual(['pause in 0', 'pause fb 0']);
    await settle(loop.commit('interval'));
    expect(consumer.commits).toEqual([
      [{ topic: 'in', partition: 0, offset: '3', metadata: 'docstream:done' }],
    ]);

    // A batch fetched before the pause is left alone (fetched again after it).
    const stale = new FakeControl();
    handled.length = 0;
    await settle(loop.onBatch(batch('in', [5, 6]), stale));
    expect([handled, stale.resolved]).toEqual([[], []]);

    await until(() => !loop.pausedForOutage);
    expect(probes()).toBe(3);
    expect(changes).toEqual([true, false]);
    expect(consumer.calls.slice(2)).toEqual(['resume fb 0', 'resume in 0']);
    await settle(loop.idle());
    expect(handled).toEqual(['3']);
    await settle(loop.commit('interval'));
    expect(consumer.commits.at(-1)).toEqual([
      { topic: 'in', partition: 0, offset: '5', metadata: 'docstream:done' },
    ]);
  });

  it('treats a feedback record alike: no crash, input paused, the record handled again after', async () => {
    const { loop, consumer, handled } = setup();
    const control = new FakeControl();
    await expect(settle(loop.onBatch(batch('fb', [7]), control))).resolves.toBeUndefined();
    expect(consumer.calls).toEqual(['pause in 0', 'pause fb 0']);
    await until(() => !loop.pausedForOutage);
    await settle(loop.idle());
    expect(handled).toEqual(['fb7', 'fb7']);
    await settle(loop.commit('interval'));
    expect(consumer.commits).toEqual([[{ topic: 'fb', partition: 0, offset: '8' }]]);
  });

  it('ends a record whose handler throws something else with a dead letter, and goes on', async () => {
    const deadLetters: string[] = [];
    const handled: string[] = [];
    const consumer = new FakeConsumer();
    const loop = new ConsumerLoop({
      topics: { arrived: 'in', feedback: 'fb' },
      maxInFlight: 10,
      engine: { inFlight: 0, unfinishedOn: () => 0, resume: async () => undefined, revoke: () => undefined },
      state: { assign: async () => undefined, revoke: () => undefined, unfinished: () => [] },
      arrivals: async (m) => {
        handled.push(m.offset);
        if (m.offset === '1') throw new RangeError('Maximum call stack size exceeded');
      },
      feedback: async () => {
        throw new TypeError('a bug');
      },
      logger: silentLogger,
      outage: { isOutage: (err) => err instanceof Outage, probe: async () => undefined },
      retriable: (err) => !(err instanceof RangeError || err instanceof TypeError),
      endRecord: async (m, err) => {
        deadLetters.push(`${m.topic}:${m.offset} ${(err as Error).message}`);
      },
      admissionWaitMs: 50,
    });
    loop.attach(consumer);
    const control = new FakeControl();
    await expect(loop.onBatch(batch('in', [1, 2]), control)).resolves.toBeUndefined();
    await expect(loop.onBatch(batch('fb', [3]), new FakeControl())).resolves.toBeUndefined();
    expect(control.resolved).toEqual(['2']);
    expect(handled).toEqual(['1', '2']);
    expect(deadLetters).toEqual(['in:1 Maximum call stack size exceeded', 'fb:3 a bug']);
    expect(loop.pausedForOutage).toBe(false);
    await loop.commit('interval');
    expect(consumer.commits).toEqual([
      [{ topic: 'in', partition: 0, offset: '3', metadata: 'docstream:done' }],
      [{ topic: 'fb', partition: 0, offset: '4' }],
    ]);
  });
  it("ends the outage probe's back-off at stop: no timer left waiting, no probe sent after it", async () => {
    const { loop } = setup();
    let probes = 0;
    loop.pauseFor(new Outage('the API is unavailable'), {
      isOutage: () => true,
      probe: async () => {
        probes += 1;
        throw new Error('still down');
      },
      initialDelayMs: 20_000,
      maxDelayMs: 30_000,
    });
    expect(loop.pausedForOutage).toBe(true);
    await jest.advanceTimersByTimeAsync(5);
    loop.stop();
    await jest.advanceTimersByTimeAsync(5);
    expect(loop.pausedForOutage).toBe(false);
    expect(probes).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });
});
