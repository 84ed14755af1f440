import { jest } from '@jest/globals';
import type {
  Assignment,
  BatchControl,
  GroupJoin,
  IncomingBatch,
  IncomingMessage,
  TopicPartitionOffset,
} from '../../kafka/consumer.js';
import { silentLogger } from '../../observability/logger.js';
import { ConsumerLoop } from './consumer-loop.js';
import type { LoopConsumer, LoopEngine, LoopState } from './loop-interfaces.js';
import { GroupShare, unfinishedMetadata } from './group-share.js';
import type { UnfinishedState } from '../state/document-state.js';

const topics = { arrived: 'in', feedback: 'fb' };

class FakeConsumer implements LoopConsumer {
  assignment: Assignment = { in: [0, 1], fb: [0] };
  calls: string[] = [];
  commits: TopicPartitionOffset[][] = [];
  failCommit = false;
  pause(topic: string, partitions: number[]): void {
    this.calls.push(`pause ${topic} ${partitions.join(',')}`);
  }
  resume(topic: string, partitions: number[]): void {
    this.calls.push(`resume ${topic} ${partitions.join(',')}`);
  }
  currentAssignment(): Assignment {
    return this.assignment;
  }
  async commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    if (this.failCommit) throw new Error('rebalance in progress');
    this.commits.push(offsets);
  }
}

class FakeEngine implements LoopEngine {
  inFlight = 0;
  /** Admissions the engine says hold no slot (waiting for their tenant's share). */
  uncounted = 0;
  /** Documents running by input partition, as the test sets them. */
  running = new Map<number, number>();
  unfinishedOn(partition: number): number {
    return this.running.get(partition) ?? 0;
  }
  resumed: string[] = [];
  revoked: number[][] = [];
  async resume(states: UnfinishedState[]): Promise<void> {
    for (const s of states) this.resumed.push(s.event_id);
  }
  revoke(partitions: Iterable<number>): void {
    this.revoked.push([...partitions]);
  }
  /** How often the loop said it waits for a slot. */
  capacityWanted = 0;
  wantCapacity(): void {
    this.capacityWanted += 1;
  }
  /** What the loop told the engine about the group's moves, in order. */
  moves: string[] = [];
  /** While set, recording before a revocation waits for it. */
  recording: Promise<void> | null = null;
  async recordBeforeRevocation(timeoutMs: number): Promise<number> {
    this.moves.push(`record within ${timeoutMs}`);
    if (this.recording) await this.recording;
    this.moves.push('recorded');
    return 0;
  }
  assigned(partitions: number[]): void {
    this.moves.push(`assigned ${partitions.join(',')}`);
  }
  holdCreates(): void {
    this.moves.push('hold creates');
  }
}

class FakeState implements LoopState {
  reads: number[][] = [];
  revoked: number[][] = [];
  byPartition = new Map<number, UnfinishedState[]>();
  /** Set by a test: a state whose records' writer may outlive a crash (exactly-once). */
  leave?: (partitions: number[]) => () => void;
  async assign(partitions: number[]): Promise<void> {
    this.reads.push(partitions);
  }
  revoke(partitions: number[]): void {
    this.revoked.push(partitions);
  }
  unfinished(partition: number): UnfinishedState[] {
    return this.byPartition.get(partition) ?? [];
  }
}

class FakeControl implements BatchControl {
  resolved: string[] = [];
  running = true;
  resolveOffset(offset: string): void {
    this.resolved.push(offset);
  }
  async heartbeat(): Promise<void> {}
  isRunning(): boolean {
    return this.running;
  }
  isStale(): boolean {
    return false;
  }
}

function message(topic: string, partition: number, offset: number): IncomingMessage {
  return {
    topic,
    partition,
    offset: String(offset),
    timestamp: '0',
    key: null,
    value: Buffer.from('{}'),
    headers: {},
  };
}

function batch(topic: string, partition: number, offsets: number[]): IncomingBatch {
  return {
    topic,
    partition,
    highWatermark: '100',
    messages: offsets.map((o) => message(topic, partition, o)),
  };
}

const DONE = unfinishedMetadata(false);
const UNFINISHED = unfinishedMetadata(true);

class FakeLimiter {
  shares: Array<[number, number]> = [];
  setShare(owned: number, total: number): void {
    this.shares.push([owned, total]);
  }
}

function setup(maxInFlight = 3, totalPartitions = 4, capacityWaitMs = 30) {
  const consumer = new FakeConsumer();
  const limiter = new FakeLimiter();
  const engine = new FakeEngine();
  const state = new FakeState();
  const handled: string[] = [];
  const feedback: string[] = [];
  /** Each arrival is admitted (its admission counts against the limit while it runs) unless `reject` names its offset. */
  const reject = new Set<string>();
  const inFlightSeen: number[] = [];
  /** The group's committed offsets of input partitions, as a member reads them when it gets one. */
  const committed = new Map<number, string>();
  /** While set, every admission waits for it. */
  const gate: { admissions: Promise<void> | null } = { admissions: null };
  /** The admission of the record at this offset waits for its promise. */
  const hold = new Map<string, Promise<void>>();
  const loop = new ConsumerLoop({
    topics,
    maxInFlight,
    engine,
    state,
    arrivals: async (m) => {
      handled.push(`${m.partition}:${m.offset}`);
      if (gate.admissions) await gate.admissions;
      await hold.get(m.offset);
      if (reject.has(m.offset)) throw new Error('state topic unavailable');
      // Admitted: the document runs (counts against the limit) until the test ends it.
      engine.inFlight += 1;
    },
    feedback: async (m) => {
      feedback.push(m.offset);
    },
    logger: silentLogger,
    onInFlight: (n) => inFlightSeen.push(n),
    groupShare: new GroupShare(limiter, () => totalPartitions),
    committedOffsets: async () => committed,
    capacityWaitMs,
    admissionWaitMs: 50,
  });
  loop.attach(consumer);
  return {
    loop,
    consumer,
    engine,
    state,
    handled,
    feedback,
    reject,
    inFlightSeen,
    limiter,
    committed,
    gate,
    hold,
  };
}

/**
 * Awaits `p` while fake time passes in 10 ms steps (the loop's own waits run on timers), up to a
 * minute of it: a promise that never settles fails the test instead of hanging it.
 */
async function settle<T>(p: Promise<T>): Promise<T> {
  let done = false;
  const watched = p.finally(() => (done = true));
  for (let i = 0; i < 6000 && !done; i++) await jest.advanceTimersByTimeAsync(10);
  if (!done) throw new Error('still pending after a minute of fake time');
  return watched;
}

/** Moves the fake clock on 10 ms at a time until `condition` holds, at most 5 s of it. */
const until = async (condition: () => boolean) => {
  for (let i = 0; i < 500 && !condition(); i++) await jest.advanceTimersByTimeAsync(10);
};

function join(added: Assignment, removed: Assignment, assignment: Assignment): GroupJoin {
  return { memberId: 'm', isLeader: true, assignment, added, removed };
}

describe('ConsumerLoop', () => {
  afterEach(() => jest.useRealTimers());

  it('admits records until maxInFlight documents run, then pauses the input and resolves what it took', async () => {
    const { loop, consumer, handled, engine } = setup(3);
    const control = new FakeControl();
    await loop.onBatch(batch('in', 0, [10, 11, 12, 13, 14]), control);
    expect(handled).toEqual(['0:10', '0:11', '0:12']);
    // While full it told the engine so (documents ending then record their end at once).
    expect(engine.capacityWanted).toBeGreaterThan(0);
    expect(control.resolved).toEqual(['12']);
    expect(consumer.calls).toEqual(['pause in 0,1']);
    expect(loop.paused).toBe(true);
  });

  it("does not count admissions waiting for their tenant's share against maxInFlight", async () => {
    const { loop, consumer, handled, engine, gate } = setup(2);
    gate.admissions = new Promise<void>(() => undefined);
    // Two of the admissions under way wait for their tenant's share: two more records fit.
    engine.uncounted = 2;
    await loop.onBatch(batch('in', 0, [10, 11, 12, 13, 14, 15]), new FakeControl());
    expect(handled).toEqual(['0:10', '0:11', '0:12', '0:13']);
    expect(consumer.calls).toEqual(['pause in 0,1']);
  });

  it("does not hold a batch for admissions waiting for their tenant's share or rate limit", async () => {
    const { engine, state, consumer } = setup(10);
    const handled: string[] = [];
    const loop = new ConsumerLoop({
      topics,
      maxInFlight: 10,
      engine,
      state,
      // Offsets 1 and 3 wait for another tenant's limit (for good here); 2 is admitted at once.
      arrivals: async (m, hooks) => {
        handled.push(m.offset);
        if (m.offset === '2') return;
        hooks?.waiting();
        await new Promise<void>(() => undefined);
      },
      feedback: async () => undefined,
      logger: silentLogger,
      admissionWaitMs: 60_000,
    });
    loop.attach(consumer);
    const control = new FakeControl();
    const started = Date.now();
    await loop.onBatch(batch('in', 0, [1, 2, 3]), control);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(handled).toEqual(['1', '2', '3']);
    expect(control.resolved).toEqual(['3']);
  });

  it('takes no record of a batch whose partition left while it was being prepared', async () => {
    const { loop, state, handled } = setup(3);
    let restored!: () => void;
    state.assign = async (partitions) => {
      state.reads.push(partitions);
      await new Promise<void>((resolve) => (restored = resolve));
    };
    loop.onGroupJoin(join({ in: [2] }, {}, { in: [2] }));
    const control = new FakeControl();
    const handling = loop.onBatch(batch('in', 2, [5, 6]), control);
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.reads).toEqual([[2]]);
    loop.onGroupJoin(join({}, { in: [2] }, { in: [] }));
    restored();
    await handling;
    expect(handled).toEqual([]);
    expect(control.resolved).toEqual([]);
  });

  it('stops waiting for a partition still being prepared when a heartbeat fails: takes nothing, resolves nothing', async () => {
    jest.useFakeTimers();
    const { engine, state, consumer } = setup(3);
    // The restore never ends (its reader is away): only the failed heartbeat can end the batch.
    state.assign = async (partitions) => {
      state.reads.push(partitions);
      await new Promise<void>(() => undefined);
    };
    const handled: string[] = [];
    const loop = new ConsumerLoop({
      topics,
      maxInFlight: 3,
      engine,
      state,
      arrivals: async (m) => {
        handled.push(m.offset);
      },
      feedback: async () => undefined,
      logger: silentLogger,
      heartbeatMs: 10,
    });
    loop.attach(consumer);
    loop.onGroupJoin(join({ in: [2] }, {}, { in: [2] }));
    const control = new FakeControl();
    let beats = 0;
    control.heartbeat = async () => {
      beats += 1;
      if (beats >= 3) throw new Error('The coordinator is not aware of this member');
    };
    await settle(loop.onBatch(batch('in', 2, [5, 6]), control));
    expect(beats).toBe(3);
    expect(state.reads).toEqual([[2]]);
    expect(handled).toEqual([]);
    expect(control.resolved).toEqual([]);
  });

  it('when full, waits for a slot and keeps admitting as documents finish, without pausing', async () => {
    const { loop, consumer, engine, handled } = setup(2, 4, 5000);
    const control = new FakeControl();
    const finishOne = setInterval(() => {
      if (engine.inFlight === 0) return;
      engine.inFlight -= 1;
      loop.onCapacityFreed();
    }, 20);
    try {
      await loop.onBatch(batch('in', 0, [1, 2, 3, 4, 5]), control);
    } finally {
      clearInterval(finishOne);
    }
    expect(handled).toEqual(['0:1', '0:2', '0:3', '0:4', '0:5']);
    expect(control.resolved).toEqual(['5']);
    expect(consumer.calls).toEqual([]);
    expect(loop.paused).toBe(false);
  });

  it('stops waiting for a slot when a heartbeat fails (a rebalance): returns what it took, unpaused', async () => {
    const consumerLoop = setup(2, 4, 60_000);
    const control = new FakeControl();
    control.heartbeat = async () => {
      throw new Error('The group is rebalancing, so a rejoin is needed');
    };
    const loop = new ConsumerLoop({
      topics,
      maxInFlight: 2,
      engine: consumerLoop.engine,
      state: consumerLoop.state,
      arrivals: async () => {
        consumerLoop.engine.inFlight += 1;
      },
      feedback: async () => undefined,
      logger: silentLogger,
      heartbeatMs: 10,
      capacityWaitMs: 60_000,
    });
    loop.attach(consumerLoop.consumer);
    const started = Date.now();
    await loop.onBatch(batch('in', 0, [1, 2, 3]), control);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(control.resolved).toEqual(['2']);
    expect(loop.paused).toBe(false);
  });

  it('resumes the input only once a tenth of the slots are free (hysteresis)', async () => {
    const { loop, consumer, engine } = setup(20);
    engine.inFlight = 20;
    await loop.onBatch(batch('in', 0, [1]), new FakeControl());
    expect(consumer.calls).toEqual(['pause in 0,1']);
    engine.inFlight = 19;
    loop.onCapacityFreed();
    expect(loop.paused).toBe(true);
    engine.inFlight = 18;
    loop.onCapacityFreed();
    expect(consumer.calls).toEqual(['pause in 0,1', 'resume in 0,1']);
    expect(loop.paused).toBe(false);
  });

  it('does not resume after stop', async () => {
    const { loop, consumer, engine } = setup(2);
    engine.inFlight = 2;
    await loop.onBatch(batch('in', 0, [1]), new FakeControl());
    loop.stop();
    engine.inFlight = 0;
    loop.onCapacityFreed();
    expect(consumer.calls).toEqual(['pause in 0,1']);
  });

  it('on stop, idle resolves once the admissions under way are durable', async () => {
    jest.useFakeTimers();
    const { loop, gate } = setup(10);
    let release: () => void = () => undefined;
    gate.admissions = new Promise<void>((r) => (release = r));
    const control = new FakeControl();
    const handling = loop.onBatch(batch('in', 0, [1, 2]), control);
    await jest.advanceTimersByTimeAsync(5);
    loop.stop();
    let idle = false;
    const idled = loop.idle().then(() => (idle = true));
    await jest.advanceTimersByTimeAsync(20);
    expect(idle).toBe(false);
    release();
    await settle(handling);
    await settle(idled);
    // Both were taken before the stop: their offsets are resolved, so the final commit includes them.
    expect(control.resolved).toEqual(['2']);
  });

  it('after stop holds a fetched batch, heartbeating, until released; a failed heartbeat ends the hold', async () => {
    jest.useFakeTimers();
    const { loop, handled } = setup();
    loop.stop();
    let beats = 0;
    const control = new FakeControl();
    control.heartbeat = async () => {
      beats += 1;
    };
    let returned = false;
    const held = loop.onBatch(batch('in', 0, [1, 2]), control).then(() => (returned = true));
    await jest.advanceTimersByTimeAsync(2300);
    expect(returned).toBe(false);
    expect(beats).toBeGreaterThanOrEqual(2);
    await settle(loop.idle()); // a held batch is not one being handled
    loop.release();
    await settle(held);
    expect(handled).toEqual([]);
    expect(control.resolved).toEqual([]);

    const rebalancing = new FakeControl();
    rebalancing.heartbeat = async () => {
      throw new Error('REBALANCE_IN_PROGRESS');
    };
    const { loop: other } = setup();
    other.stop();
    await settle(other.onBatch(batch('in', 0, [3]), rebalancing)); // returns at the first failed heartbeat
  });

  it('takes no record after stop', async () => {
    const { loop, handled } = setup();
    loop.stop();
    const control = new FakeControl();
    const held = loop.onBatch(batch('in', 0, [1, 2]), control);
    loop.release();
    await held;
    expect(handled).toEqual([]);
    expect(control.resolved).toEqual([]);
  });

  it('tries a record that could not be recorded again in the background; the commit waits for it', async () => {
    jest.useFakeTimers();
    const { loop, reject, consumer, handled } = setup(10);
    reject.add('2');
    const control = new FakeControl();
    await settle(loop.onBatch(batch('in', 0, [1, 2, 3]), control));
    // The fetch moves past every record taken.
    expect(control.resolved).toEqual(['3']);
    // Offset 1 is durable, 2 is not: the commit stops before 2 even though 3 completed.
    await settle(loop.commit('interval'));
    expect(consumer.commits).toEqual([[{ topic: 'in', partition: 0, offset: '2', metadata: DONE }]]);
    reject.delete('2');
    await until(() => handled.filter((h) => h === '0:2').length >= 2);
    await settle(loop.idle());
    await settle(loop.commit('interval'));
    expect(consumer.commits.at(-1)).toEqual([{ topic: 'in', partition: 0, offset: '4', metadata: DONE }]);
  });

  it('returns from a batch while an admission is slow: the other records and partitions go on', async () => {
    jest.useFakeTimers();
    const { loop, consumer, hold, handled } = setup(10);
    let release: () => void = () => undefined;
    hold.set('2', new Promise<void>((r) => (release = r)));
    const control = new FakeControl();
    await settle(loop.onBatch(batch('in', 0, [1, 2, 3]), control));
    expect(control.resolved).toEqual(['3']);
    const other = new FakeControl();
    await settle(loop.onBatch(batch('in', 1, [7]), other));
    expect([other.resolved, handled]).toEqual([['7'], ['0:1', '0:2', '0:3', '1:7']]);
    await loop.commit('interval');
    expect(consumer.commits).toEqual([
      [
        { topic: 'in', partition: 0, offset: '2', metadata: DONE },
        { topic: 'in', partition: 1, offset: '8', metadata: DONE },
      ],
    ]);
    let idle = false;
    const idled = loop.idle().then(() => (idle = true));
    await jest.advanceTimersByTimeAsync(10);
    expect(idle).toBe(false);
    release();
    await settle(idled);
    await loop.commit('interval');
    expect(consumer.commits.at(-1)).toEqual([{ topic: 'in', partition: 0, offset: '4', metadata: DONE }]);
  });

  it('gives up a record still tried again when its partition leaves, or on stop', async () => {
    jest.useFakeTimers();
    const { loop, reject, consumer, handled, engine } = setup(10);
    reject.add('5');
    reject.add('6');
    await settle(loop.onBatch(batch('in', 0, [5]), new FakeControl()));
    await settle(loop.onBatch(batch('in', 1, [6]), new FakeControl()));
    loop.onGroupJoin(join({}, { in: [0] }, { in: [1], fb: [0] }));
    consumer.assignment = { in: [1], fb: [0] };
    await jest.advanceTimersByTimeAsync(400);
    const tries = handled.filter((h) => h === '0:5').length;
    await jest.advanceTimersByTimeAsync(400);
    expect(handled.filter((h) => h === '0:5').length).toBe(tries);
    expect(handled.filter((h) => h === '1:6').length).toBeGreaterThan(1);
    loop.stop();
    await settle(loop.idle());
    expect(engine.revoked).toEqual([[0]]);
  });

  it('commits the next offset of each moved partition once, and again only when it moves', async () => {
    const { loop, consumer } = setup(10);
    await loop.onBatch(batch('in', 0, [5, 6]), new FakeControl());
    await loop.onBatch(batch('in', 1, [0]), new FakeControl());
    await loop.commit('interval');
    expect(consumer.commits).toEqual([
      [
        { topic: 'in', partition: 0, offset: '7', metadata: DONE },
        { topic: 'in', partition: 1, offset: '1', metadata: DONE },
      ],
    ]);
    await loop.commit('interval');
    expect(consumer.commits).toHaveLength(1);
    await loop.onBatch(batch('in', 0, [7]), new FakeControl());
    await loop.commit('interval');
    expect(consumer.commits[1]).toEqual([{ topic: 'in', partition: 0, offset: '8', metadata: DONE }]);
  });

  it('keeps an offset to commit when a commit fails, and commits it next time', async () => {
    const { loop, consumer } = setup(10);
    await loop.onBatch(batch('in', 0, [0]), new FakeControl());
    consumer.failCommit = true;
    await loop.commit('interval');
    expect(consumer.commits).toEqual([]);
    consumer.failCommit = false;
    await loop.commit('interval');
    expect(consumer.commits).toEqual([[{ topic: 'in', partition: 0, offset: '1', metadata: DONE }]]);
  });

  it('commits an input offset saying whether documents of its partition still run, again when that changes', async () => {
    const { loop, consumer, engine } = setup(10);
    engine.running.set(0, 2);
    await loop.onBatch(batch('in', 0, [0, 1]), new FakeControl());
    await loop.onBatch(batch('in', 1, [0]), new FakeControl());
    await loop.commit('interval');
    expect(consumer.commits).toEqual([
      [
        { topic: 'in', partition: 0, offset: '2', metadata: UNFINISHED },
        { topic: 'in', partition: 1, offset: '1', metadata: DONE },
      ],
    ]);
    // Nothing moved and nothing finished: no commit.
    await loop.commit('interval');
    expect(consumer.commits).toHaveLength(1);
    // Partition 0's documents finished: the same offset again, now saying so.
    engine.running.delete(0);
    await loop.commit('interval');
    expect(consumer.commits[1]).toEqual([{ topic: 'in', partition: 0, offset: '2', metadata: DONE }]);
  });

  it("commits a partition it got at the group's offset with its own metadata, before any new record", async () => {
    jest.useFakeTimers();
    const { loop, consumer, engine, committed } = setup(10);
    committed.set(2, '40');
    // Partition 2 arrives with documents its previous owner left running, resumed here.
    engine.running.set(2, 3);
    consumer.assignment = { in: [2], fb: [] };
    loop.onGroupJoin(join({ in: [2] }, {}, consumer.assignment));
    await jest.advanceTimersByTimeAsync(5);
    await loop.commit('interval');
    expect(consumer.commits).toEqual([[{ topic: 'in', partition: 2, offset: '40', metadata: UNFINISHED }]]);
    engine.running.delete(2);
    loop.onCapacityFreed();
    await jest.advanceTimersByTimeAsync(5);
    expect(consumer.commits[1]).toEqual([{ topic: 'in', partition: 2, offset: '40', metadata: DONE }]);
  });

  it("commits at once when a partition's last running document finishes", async () => {
    jest.useFakeTimers();
    const { loop, consumer, engine } = setup(10);
    engine.running.set(0, 1);
    await settle(loop.onBatch(batch('in', 0, [0]), new FakeControl()));
    await loop.commit('interval');
    // A document of another partition finishing changes nothing for partition 0.
    loop.onCapacityFreed();
    await jest.advanceTimersByTimeAsync(5);
    expect(consumer.commits).toHaveLength(1);
    engine.running.delete(0);
    loop.onCapacityFreed();
    await jest.advanceTimersByTimeAsync(5);
    expect(consumer.commits).toEqual([
      [{ topic: 'in', partition: 0, offset: '1', metadata: UNFINISHED }],
      [{ topic: 'in', partition: 0, offset: '1', metadata: DONE }],
    ]);
  });

  it('reads the state of a partition and resumes its unfinished documents once, before its first record', async () => {
    const { loop, state, engine } = setup(10);
    state.byPartition.set(1, [
      { event_id: 'evt-a' } as UnfinishedState,
      { event_id: 'evt-b' } as UnfinishedState,
    ]);
    await loop.onBatch(batch('in', 1, [0]), new FakeControl());
    await loop.onBatch(batch('in', 1, [1]), new FakeControl());
    expect(state.reads).toEqual([[1]]);
    expect(engine.resumed).toEqual(['evt-a', 'evt-b']);
  });

  it('on a rebalance revokes the lost partitions, forgets their offsets, and starts unpaused', async () => {
    const { loop, consumer, engine, state } = setup(2);
    await loop.onBatch(batch('in', 0, [3]), new FakeControl());
    // Takes 4, then is full before 5.
    await loop.onBatch(batch('in', 1, [4, 5]), new FakeControl());
    expect(loop.paused).toBe(true);
    consumer.assignment = { in: [1, 2], fb: [0] };
    loop.onGroupJoin(join({ in: [2] }, { in: [0] }, consumer.assignment));
    expect(engine.revoked).toEqual([[0]]);
    // The lost partition's state is dropped, after its documents were stopped.
    expect(state.revoked).toEqual([[0]]);
    expect(loop.paused).toBe(false);
    expect(consumer.calls.at(-1)).toBe('resume in 1,2');
    await new Promise((r) => setImmediate(r));
    expect(state.reads).toContainEqual([2]);
    await loop.commit('interval');
    // Partition 0 is gone: only partition 1's offset is committed.
    expect(consumer.commits).toEqual([[{ topic: 'in', partition: 1, offset: '5', metadata: DONE }]]);
  });

  it('keeps a partition it keeps across a rebalance: its state, its documents and its offsets', async () => {
    const { loop, consumer, engine, state, handled } = setup(10);
    state.byPartition.set(1, [{ event_id: 'evt-a' } as UnfinishedState]);
    consumer.assignment = { in: [0, 1] };
    loop.onGroupJoin(join({ in: [0, 1] }, {}, consumer.assignment));
    await loop.onBatch(batch('in', 1, [0, 1]), new FakeControl());
    await loop.commit('interval');
    await loop.onBatch(batch('in', 1, [2]), new FakeControl());
    // The sticky assignor leaves partition 1 here; partition 0 goes to a newcomer.
    consumer.assignment = { in: [1] };
    loop.onGroupJoin(join({}, { in: [0] }, consumer.assignment));
    expect(engine.revoked).toEqual([[0]]);
    expect(state.revoked).toEqual([[0]]);
    // After the eager rejoin the partition is fetched again from its committed offset (2): record 2
    // is offered again (the engine finds it running), and the commit moves on from where it was.
    await loop.onBatch(batch('in', 1, [2, 3]), new FakeControl());
    await loop.commit('interval');
    expect(handled).toEqual(['1:0', '1:1', '1:2', '1:2', '1:3']);
    expect(state.reads.filter((r) => r.includes(1))).toEqual([[1]]);
    expect(engine.resumed).toEqual(['evt-a']);
    expect(consumer.commits.at(-1)).toEqual([{ topic: 'in', partition: 1, offset: '4', metadata: DONE }]);
  });

  it('handles feedback records one by one, resolving and committing each', async () => {
    const { loop, feedback, consumer, handled } = setup(1);
    const control = new FakeControl();
    await loop.onBatch(batch('fb', 0, [0, 1, 2]), control);
    expect(feedback).toEqual(['0', '1', '2']);
    expect(handled).toEqual([]);
    expect(control.resolved).toEqual(['0', '1', '2']);
    await loop.commit('interval');
    expect(consumer.commits).toEqual([[{ topic: 'fb', partition: 0, offset: '3' }]]);
  });

  it('reports the number in flight after each admission', async () => {
    const { loop, inFlightSeen, engine } = setup(10);
    engine.inFlight = 5;
    await loop.onBatch(batch('in', 0, [0, 1]), new FakeControl());
    // Both admissions run at once: each reports the count after both started.
    expect(inFlightSeen).toEqual([7, 7]);
  });

  it('sets the API limiter to its share of the input partitions on every join, feedback partitions aside', () => {
    const { loop, limiter } = setup(10, 4);
    loop.onGroupJoin(join({ in: [0, 1, 2, 3], fb: [0] }, {}, { in: [0, 1, 2, 3], fb: [0] }));
    loop.onGroupJoin(join({}, { in: [2, 3] }, { in: [0, 1], fb: [0] }));
    loop.onGroupJoin(join({ in: [3] }, { in: [0] }, { in: [1, 3] }));
    // A crashed consumer leaves the group: nothing owned until it joins again.
    loop.onGroupJoin(join({}, { in: [1, 3], fb: [0] }, {}));
    // The third join keeps the share of the second (2 of 4): the limiter is not told again.
    expect(limiter.shares).toEqual([
      [4, 4],
      [2, 4],
      [0, 4],
    ]);
  });

  it('counts input partitions added after start-up once this member holds more than it knew of', () => {
    const { loop, limiter } = setup(10, 2);
    loop.onGroupJoin(join({ in: [0, 1, 2] }, {}, { in: [0, 1, 2] }));
    expect(limiter.shares).toEqual([[3, 3]]);
  });

  // Stopping too (SIGTERM): a rebalance that meets the stop gives this member's partitions to the
  // others (it joins as leaving); what it created for them must be recorded first, or the creates
  // stay empty.
  it.each([
    ['before rejoining', false],
    ['stopping, before a rejoin hands its partitions on', true],
  ])('%s, has the creates sent recorded, then commits what that made durable', async (_when, stopping) => {
    jest.useFakeTimers();
    const { loop, engine, consumer } = setup(10);
    loop.onGroupJoin(join({ in: [0, 1], fb: [0] }, {}, { in: [0, 1], fb: [0] }));
    await settle(loop.onBatch(batch('in', 0, [5, 6]), new FakeControl()));
    let release: () => void = () => undefined;
    engine.recording = new Promise<void>((r) => (release = r));
    if (stopping) loop.stop();
    const rejoin = loop.beforeRejoin(5000);
    await until(() => engine.moves.includes('record within 5000'));
    if (!stopping) expect(consumer.commits).toEqual([]);
    release();
    await settle(rejoin);
    expect(engine.moves).toEqual(['assigned 0,1', 'record within 5000', 'recorded']);
    expect(consumer.commits.flat()).toContainEqual(
      expect.objectContaining({ topic: 'in', partition: 0, offset: '7' }),
    );
  });

  /**
   * Exactly-once: a partition's state records go through its own writer, which a revoke closes. A
   * crash must not close it before the barrier before the next join wrote the creates sent.
   */
  function writersPerPartition(state: FakeState, order: string[]) {
    const open = new Set<number>();
    state.assign = async (partitions) => {
      order.push(`open ${partitions.join(',')}`);
      for (const p of partitions) open.add(p);
    };
    state.revoke = (partitions) => {
      order.push(`close ${partitions.join(',')}`);
      for (const p of partitions) open.delete(p);
    };
    state.leave = (partitions) => {
      order.push(`left ${partitions.join(',')}`);
      return () => state.revoke(partitions);
    };
    return open;
  }

  const crashed: GroupJoin = {
    memberId: '',
    isLeader: false,
    assignment: {},
    added: {},
    removed: { in: [0, 1], fb: [0] },
  };

  it('after a crash keeps the left partitions writable until the barrier before the next join recorded for them', async () => {
    jest.useFakeTimers();
    const { loop, engine, state } = setup(10);
    const order: string[] = [];
    const open = writersPerPartition(state, order);
    loop.onGroupJoin(join({ in: [0, 1], fb: [0] }, {}, { in: [0, 1], fb: [0] }));
    await until(() => open.size === 2);
    // The barrier records each create sent: possible only through its partition's open writer.
    const writable: number[][] = [];
    engine.recordBeforeRevocation = async () => {
      writable.push([...open]);
      return 0;
    };
    loop.onGroupJoin(crashed);
    expect(open).toEqual(new Set([0, 1]));
    await settle(loop.beforeRejoin(5000));
    expect(writable).toEqual([[0, 1]]);
    expect(open).toEqual(new Set());
    loop.onGroupJoin(join({ in: [1] }, {}, { in: [1] }));
    await until(() => open.size === 1);
    expect(order).toEqual(['open 0', 'open 1', 'left 0,1', 'close 0,1', 'open 1']);
  });

  it("after a crash without a barrier (another kafkajs), closes the left partitions' writer at the next join, before opening any", async () => {
    jest.useFakeTimers();
    const { loop, state } = setup(10);
    const order: string[] = [];
    const open = writersPerPartition(state, order);
    loop.onGroupJoin(join({ in: [0, 1], fb: [0] }, {}, { in: [0, 1], fb: [0] }));
    await until(() => open.size === 2);
    loop.onGroupJoin(crashed);
    loop.onGroupJoin(join({ in: [0] }, {}, { in: [0] }));
    await until(() => open.size === 1);
    expect(open).toEqual(new Set([0]));
    expect(order).toEqual(['open 0', 'open 1', 'left 0,1', 'close 0,1', 'open 0']);
  });

  it('holds creates when the crashed consumer left its group, and lets them go again at the next join', () => {
    const { loop, engine } = setup(10);
    loop.onGroupJoin(join({ in: [0, 1], fb: [0] }, {}, { in: [0, 1], fb: [0] }));
    loop.onGroupJoin({
      memberId: '',
      isLeader: false,
      assignment: {},
      added: {},
      removed: { in: [0, 1], fb: [0] },
    });
    loop.onGroupJoin(join({ in: [1] }, {}, { in: [1] }));
    expect(engine.moves).toEqual(['assigned 0,1', 'hold creates', 'assigned 1']);
  });
});
