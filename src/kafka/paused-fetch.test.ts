import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { fullGc } from '../util/full-gc.js';
import { consumerGroupClass, fixPausedFetchLoops, runnerClass } from './paused-fetch.js';

interface TopicPartitions {
  topic: string;
  partitions: number[];
}

interface Group {
  memberId: string | null;
  coordinator: object;
  offsetManager: object;
  subscriptionState: { assign(topicPartitions: TopicPartitions[]): void };
  pause(topicPartitions: TopicPartitions[]): void;
  resume(topicPartitions: TopicPartitions[]): void;
  joinAndSync(): Promise<void>;
}

interface Runner {
  running: boolean;
  scheduleFetchManager(): void;
  stop(): Promise<void>;
}

const quietLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  namespace: () => quietLogger,
};

const TOPIC = 't';

/** Every Runner a test started, stopped after it even when it failed. */
const running: Runner[] = [];

/** What a fetch of partition 0 returns: one record, decoded as kafkajs's broker decodes it. */
function oneRecord() {
  return {
    responses: [
      {
        topicName: TOPIC,
        partitions: [
          {
            partition: 0,
            errorCode: 0,
            highWatermark: '1',
            abortedTransactions: [],
            messages: [
              { offset: '0', timestamp: '0', key: Buffer.from('k'), value: Buffer.from('v'), headers: {} },
            ],
          },
        ],
      },
    ],
  };
}

/**
 * A real kafkajs ConsumerGroup and Runner, joined (member `m`) and holding partition 0 of `t`, paused;
 * the cluster, the group's coordinator and the broker are stand-ins that count what the loop asks.
 * `eachBatch` is given each batch fetched (the broker answers with `oneRecord` when `records` is set).
 */
function pausedConsumer(options: {
  maxWaitTime: number;
  heartbeatInterval: number;
  records?: boolean;
  eachBatch?: (payload: { batch: object; pause(): void }) => void;
}) {
  const seen = { loops: 0, heartbeats: 0, fetches: 0, left: 0, rejoins: 0 };
  /** While set, the next metadata refresh (the start of every loop) waits for it to resolve. */
  let gate: Promise<void> | null = null;
  let entered: () => void = () => {};
  const broker = {
    fetch: async () => {
      seen.fetches += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return options.records ? oneRecord() : { responses: [] };
    },
  };
  const cluster = {
    refreshMetadataIfNecessary: async () => {
      seen.loops += 1;
      if (gate) {
        const wait = gate;
        gate = null;
        entered();
        await wait;
      }
    },
    findTopicPartitionMetadata: () => [{ partitionId: 0, leader: 0 }],
    getNodeIds: () => [0],
    findBroker: async () => broker,
  };
  const ConsumerGroup = consumerGroupClass() as unknown as new (o: object) => Group;
  const group = new ConsumerGroup({
    cluster,
    groupId: 'g',
    topics: [TOPIC],
    topicConfigurations: {},
    logger: quietLogger,
    instrumentationEmitter: new EventEmitter(),
    retry: { retries: 0 },
    assigners: [],
    maxWaitTimeInMs: options.maxWaitTime,
    maxBytesPerPartition: 1024,
    autoCommit: false,
  });
  group.memberId = 'm';
  group.coordinator = {
    heartbeat: async () => {
      seen.heartbeats += 1;
    },
    leaveGroup: async () => {
      seen.left += 1;
    },
  };
  group.offsetManager = {
    seek: async () => {},
    resolveOffsets: async () => {},
    resolveOffset: () => {},
    committedOffsets: () => ({ [TOPIC]: { 0: '0' } }),
    nextOffset: () => ({ toString: () => '0' }),
  };
  group.subscriptionState.assign([{ topic: TOPIC, partitions: [0] }]);
  group.pause([{ topic: TOPIC, partitions: [0] }]);
  const Runner = runnerClass() as unknown as new (o: object) => Runner;
  const runner = new Runner({
    logger: quietLogger,
    consumerGroup: group,
    instrumentationEmitter: new EventEmitter(),
    heartbeatInterval: options.heartbeatInterval,
    retry: { retries: 0 },
    autoCommit: false,
    eachBatch: async (payload: { batch: object; pause(): void }) => options.eachBatch?.(payload),
    onCrash: () => {},
    concurrency: 1,
  });
  running.push(runner);
  return {
    group,
    runner,
    seen,
    /** Starts kafkajs's fetch loop as `Runner.start` does once the member joined. */
    start: () => {
      runner.running = true;
      runner.scheduleFetchManager();
    },
    /** Holds the next loop in its metadata refresh; resolves once it is there, with the release. */
    holdNextLoop: () =>
      new Promise<() => void>((there) => {
        let release: () => void = () => {};
        gate = new Promise<void>((resolve) => (release = resolve));
        entered = () => there(release);
      }),
  };
}

/**
 * kafkajs's loop, its heartbeats and the idle wait run on jest's fake clock (Date.now and the timers),
 * moved on by the tests; promise jobs, nextTick and setImmediate stay real.
 */
const sleep = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** Moves fake time on 1 ms at a time until `done()` holds, for at most `ms`; returns whether it held. */
async function until(done: () => boolean, ms = 2000): Promise<boolean> {
  for (let t = 0; t < ms && !done(); t++) await jest.advanceTimersByTimeAsync(1);
  return done();
}

/** Resolves 'done' when `promise` settles within `ms` of fake time, 'waiting' otherwise. */
async function within(promise: Promise<unknown>, ms = 2000): Promise<'done' | 'waiting'> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return (await until(() => settled, ms)) ? 'done' : 'waiting';
}

describe("kafkajs's fetch loop with fixPausedFetchLoops", () => {
  beforeAll(() => fixPausedFetchLoops());
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(async () => {
    await within(Promise.all(running.splice(0).map((runner) => runner.stop())));
    jest.useRealTimers();
  });

  it('wakes once per heartbeat while every partition is paused (not every maxWaitTime), heartbeats on time', async () => {
    const c = pausedConsumer({ maxWaitTime: 5, heartbeatInterval: 50 });
    c.start();
    expect(await until(() => c.seen.heartbeats >= 4)).toBe(true);
    const { loops, heartbeats } = c.seen;
    expect(await within(c.runner.stop())).toBe('done');
    // kafkajs alone: one loop per maxWaitTime, about ten per heartbeat here.
    expect(loops).toBeLessThanOrEqual(heartbeats + 2);
    expect(c.seen.fetches).toBe(0);
  });

  it('fetches a resumed partition at once, not after the idle wait', async () => {
    const c = pausedConsumer({ maxWaitTime: 60_000, heartbeatInterval: 60_000 });
    c.start();
    expect(await until(() => c.seen.loops === 1)).toBe(true);
    await sleep(20);
    c.group.resume([{ topic: TOPIC, partitions: [0] }]);
    expect(await until(() => c.seen.fetches > 0)).toBe(true);
    expect(await within(c.runner.stop())).toBe('done');
  });

  it('stops at once while waiting idle, and leaves the group', async () => {
    const c = pausedConsumer({ maxWaitTime: 60_000, heartbeatInterval: 60_000 });
    c.start();
    expect(await until(() => c.seen.loops === 1)).toBe(true);
    await sleep(20);
    expect(await within(c.runner.stop())).toBe('done');
    expect(c.seen.left).toBe(1);
    expect(c.seen.loops).toBe(1);
  });

  it('does not idle wait when stopped while getting ready to (the wake came first)', async () => {
    const c = pausedConsumer({ maxWaitTime: 60_000, heartbeatInterval: 60_000 });
    const held = c.holdNextLoop();
    c.start();
    const release = await held;
    const stopped = c.runner.stop();
    release();
    expect(await within(stopped)).toBe('done');
  });

  it('fetches a partition resumed while getting ready to idle wait', async () => {
    const c = pausedConsumer({ maxWaitTime: 60_000, heartbeatInterval: 60_000 });
    const held = c.holdNextLoop();
    c.start();
    const release = await held;
    c.group.resume([{ topic: TOPIC, partitions: [0] }]);
    release();
    expect(await until(() => c.seen.fetches > 0)).toBe(true);
    expect(await within(c.runner.stop())).toBe('done');
  });

  it('holds nothing of its last fetch while it waits idle: the fetcher lets go of it first (one empty round)', async () => {
    let fetched: WeakRef<object> | undefined;
    const c = pausedConsumer({
      maxWaitTime: 60_000,
      heartbeatInterval: 60_000,
      records: true,
      // As the state reader at a restore's end: the last records taken, the partition paused.
      eachBatch: ({ batch, pause }) => {
        fetched = new WeakRef(batch);
        pause();
      },
    });
    c.start();
    expect(await until(() => c.seen.loops === 1)).toBe(true);
    c.group.resume([{ topic: TOPIC, partitions: [0] }]);
    expect(await until(() => fetched !== undefined)).toBe(true);
    // kafkajs's fetcher kept the batch in its frame for as long as the idle wait that followed it (60 s).
    let collected = false;
    for (let i = 0; i < 50 && !collected; i++) {
      await sleep(10);
      await fullGc();
      collected = fetched!.deref() === undefined;
    }
    expect(collected).toBe(true);
    // And it waits idle after that round, up to its next heartbeat: nothing more is fetched, nor looped for.
    const loops = c.seen.loops;
    await sleep(50_000);
    expect(c.seen.loops).toBe(loops);
    expect(c.seen.fetches).toBe(1);
    expect(await within(c.runner.stop())).toBe('done');
  });

  it('still learns of a rebalance from the next heartbeat while every partition is paused', async () => {
    const c = pausedConsumer({ maxWaitTime: 5, heartbeatInterval: 50 });
    c.group.coordinator = {
      heartbeat: async () => {
        c.seen.heartbeats += 1;
        const error = new Error('The group is rebalancing, so a rejoin is needed') as Error & {
          type: string;
        };
        error.name = 'KafkaJSProtocolError';
        error.type = 'REBALANCE_IN_PROGRESS';
        throw error;
      },
      leaveGroup: async () => {},
    };
    c.group.joinAndSync = async () => {
      c.seen.rejoins += 1;
    };
    c.start();
    expect(await until(() => c.seen.rejoins > 0)).toBe(true);
    expect(await within(c.runner.stop())).toBe('done');
    expect(c.seen.heartbeats).toBeGreaterThan(0);
  });
});
