import type { Assignment, BatchControl, IncomingBatch, TopicPartitionOffset } from '../kafka/consumer.js';
import { silentLogger } from '../observability/logger.js';
import { ConsumerLoop, type LoopConsumer } from './consumer-loop.js';

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
  async commitOffsets(_offsets: TopicPartitionOffset[]): Promise<void> {}
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
      initialDelayMs: 1,
      maxDelayMs: 5,
    },
  });
  loop.attach(consumer);
  return { loop, consumer, handled, changes, probes: () => probes };
}

const until = async (condition: () => boolean) => {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('ConsumerLoop during a registry outage', () => {
  it('pauses both inputs without crashing, resolves only before the failed record, probes, then resumes', async () => {
    const { loop, consumer, handled, changes, probes } = setup();
    const control = new FakeControl();
    await expect(loop.onBatch(batch('in', [1, 2, 3, 4]), control)).resolves.toBeUndefined();
    expect(control.resolved).toEqual(['2']);
    expect(loop.pausedForOutage).toBe(true);
    expect(consumer.calls).toEqual(['pause in 0', 'pause fb 0']);

    // A batch fetched before the pause is left alone (fetched again after it).
    const stale = new FakeControl();
    handled.length = 0;
    await loop.onBatch(batch('in', [3, 4]), stale);
    expect([handled, stale.resolved]).toEqual([[], []]);

    await until(() => !loop.pausedForOutage);
    expect(probes()).toBe(3);
    expect(changes).toEqual([true, false]);
    expect(consumer.calls.slice(2)).toEqual(['resume fb 0', 'resume in 0']);

    const again = new FakeControl();
    await loop.onBatch(batch('in', [3, 4]), again);
    expect(again.resolved).toEqual(['4']);
  });

  it('treats a feedback record alike: no crash, no offset resolved, input paused', async () => {
    const { loop, consumer } = setup();
    const control = new FakeControl();
    await expect(loop.onBatch(batch('fb', [7]), control)).resolves.toBeUndefined();
    expect(control.resolved).toEqual([]);
    expect(consumer.calls).toEqual(['pause in 0', 'pause fb 0']);
    await until(() => !loop.pausedForOutage);
  });

  it('still throws a failure that is not an outage (the record is fetched again)', async () => {
    const loop = new ConsumerLoop({
      topics: { arrived: 'in', feedback: 'fb' },
      maxInFlight: 10,
      engine: { inFlight: 0, unfinishedOn: () => 0, resume: async () => undefined, revoke: () => undefined },
      state: { assign: async () => undefined, revoke: () => undefined, unfinished: () => [] },
      arrivals: async () => {
        throw new Error('state topic unavailable');
      },
      feedback: async () => undefined,
      logger: silentLogger,
      outage: { isOutage: (err) => err instanceof Outage, probe: async () => undefined },
    });
    loop.attach(new FakeConsumer());
    await expect(loop.onBatch(batch('in', [1]), new FakeControl())).rejects.toThrow(
      'state topic unavailable',
    );
    expect(loop.pausedForOutage).toBe(false);
  });
});
