import { jest } from '@jest/globals';
import {
  BEFORE_REJOIN,
  installRejoinBarrier,
  REJOIN_BARRIER_KAFKAJS,
  rejoinBarrierInstalled,
} from './rejoin-barrier.js';
import { installedKafkajsVersion, kafkajsInternal } from './kafkajs-internals.js';

interface GroupProto {
  joinAndSync(this: unknown): Promise<void>;
}

describe('the rejoin barrier', () => {
  afterEach(() => jest.useRealTimers());

  it('is not applied on a kafkajs version it was not written for', () => {
    const proto = kafkajsInternal<{ prototype: GroupProto }>('consumer/consumerGroup.js').prototype;
    const before = proto.joinAndSync;
    expect(installRejoinBarrier('2.3.0')).toBe(false);
    expect(rejoinBarrierInstalled()).toBe(false);
    expect(proto.joinAndSync).toBe(before);
  });

  it('is written for the installed kafkajs', () => {
    expect(installedKafkajsVersion()).toBe(REJOIN_BARRIER_KAFKAJS);
  });

  it("makes kafkajs's join wait for the member's hook, and join even when the hook fails", async () => {
    jest.useFakeTimers();
    expect(installRejoinBarrier()).toBe(true);
    const proto = kafkajsInternal<{ prototype: GroupProto }>('consumer/consumerGroup.js').prototype;
    const order: string[] = [];
    let release: () => void = () => undefined;
    const hook = () => {
      order.push('hook');
      return new Promise<void>((resolve) => (release = resolve));
    };
    // kafkajs's own joinAndSync starts by calling its retrier: recorded here, then it fails.
    const group = Object.assign(Object.create(proto) as GroupProto, {
      assigners: [{ name: 'roundrobin' }, { name: 'sticky', [BEFORE_REJOIN]: hook }],
      retrier: () => {
        order.push('join');
        return Promise.reject(new Error('no broker here'));
      },
    });
    const joining = group.joinAndSync();
    await jest.advanceTimersByTimeAsync(10);
    expect(order).toEqual(['hook']);
    release();
    await expect(joining).rejects.toThrow('no broker here');
    expect(order).toEqual(['hook', 'join']);

    const failing = Object.assign(Object.create(proto) as GroupProto, {
      assigners: [{ [BEFORE_REJOIN]: () => Promise.reject(new Error('hook failed')) }],
      retrier: () => Promise.reject(new Error('joined anyway')),
    });
    await expect(failing.joinAndSync()).rejects.toThrow('joined anyway');
  });

  it("has a consumer's restart rejoin as the member that crashed without leaving", async () => {
    expect(installRejoinBarrier()).toBe(true);
    const proto = kafkajsInternal<{ prototype: GroupProto }>('consumer/consumerGroup.js').prototype;
    type Group = GroupProto & { memberId: string | null };
    const joinedAs: Array<string | null> = [];
    // A group member as kafkajs makes one per (re)start of a consumer, on the consumer's one cluster.
    // kafkajs's own joinAndSync starts by calling its retrier: it records the id the join would
    // send, then the coordinator's answer (`assigned`) becomes the member id.
    const member = (cluster: object, assigned: string): Group => {
      const group: Group = Object.assign(Object.create(proto) as Group, {
        cluster,
        memberId: null,
        assigners: [],
        retrier: () => {
          joinedAs.push(group.memberId);
          group.memberId = assigned;
          return Promise.resolve();
        },
      });
      return group;
    };
    const cluster = {};
    const first = member(cluster, 'member-1');
    await first.joinAndSync();
    // It crashed while the broker was away: its leave failed, its id is still set.
    const restarted = member(cluster, 'member-1');
    await restarted.joinAndSync();
    // A rejoin of the same member (a rebalance) keeps the id it has.
    await restarted.joinAndSync();
    // It left (the coordinator took the leave, kafkajs cleared the id): the next start is a new member.
    restarted.memberId = null;
    await member(cluster, 'member-2').joinAndSync();
    // Another consumer (its own cluster) never takes this one's id.
    await member({}, 'member-3').joinAndSync();
    expect(joinedAs).toEqual([null, 'member-1', 'member-1', null, null]);
  });

  it('keeps the member alive while its hook outlasts the session, and stops once the coordinator forgets it', async () => {
    jest.useFakeTimers();
    expect(installRejoinBarrier()).toBe(true);
    const proto = kafkajsInternal<{ prototype: GroupProto }>('consumer/consumerGroup.js').prototype;
    const beats: Array<{ groupId: string; groupGenerationId: number; memberId: string }> = [];
    let forget = false;
    const coordinator = {
      heartbeat: (request: { groupId: string; groupGenerationId: number; memberId: string }) => {
        beats.push(request);
        // A coordinator preparing a rebalance renews the session and answers REBALANCE_IN_PROGRESS.
        const type = forget ? 'UNKNOWN_MEMBER_ID' : 'REBALANCE_IN_PROGRESS';
        return Promise.reject(Object.assign(new Error(type), { type }));
      },
    };
    let release: () => void = () => undefined;
    const joined: string[] = [];
    const group = Object.assign(Object.create(proto) as GroupProto, {
      groupId: 'g',
      memberId: 'member-1',
      generationId: 7,
      sessionTimeout: 9000,
      coordinator,
      cluster: {},
      assigners: [{ [BEFORE_REJOIN]: () => new Promise<void>((resolve) => (release = resolve)) }],
      retrier: () => {
        joined.push('join');
        return Promise.resolve();
      },
    });
    const joining = group.joinAndSync();
    // Three sessions long: a heartbeat every third of the session, with the generation it holds.
    await jest.advanceTimersByTimeAsync(27_000);
    expect(beats).toHaveLength(9);
    expect(beats[0]).toEqual({ groupId: 'g', groupGenerationId: 7, memberId: 'member-1' });
    expect(joined).toEqual([]);
    // The coordinator no longer knows the member: no more heartbeats of that generation.
    forget = true;
    await jest.advanceTimersByTimeAsync(9000);
    expect(beats).toHaveLength(10);
    release();
    await joining;
    expect(joined).toEqual(['join']);
  });

  it('sends no heartbeat for a member that has not joined, nor after its hook returned', async () => {
    jest.useFakeTimers();
    expect(installRejoinBarrier()).toBe(true);
    const proto = kafkajsInternal<{ prototype: GroupProto }>('consumer/consumerGroup.js').prototype;
    const heartbeat = jest.fn(() => Promise.resolve());
    const hookFor = (ms: number) => () => new Promise<void>((resolve) => setTimeout(resolve, ms));
    const make = (memberId: string | null, ms: number) =>
      Object.assign(Object.create(proto) as GroupProto, {
        groupId: 'g',
        memberId,
        generationId: memberId ? 3 : null,
        sessionTimeout: 3000,
        coordinator: { heartbeat },
        cluster: {},
        assigners: [{ [BEFORE_REJOIN]: hookFor(ms) }],
        retrier: () => Promise.resolve(),
      });
    const fresh = make(null, 5000).joinAndSync();
    await jest.advanceTimersByTimeAsync(5000);
    await fresh;
    expect(heartbeat).not.toHaveBeenCalled();
    const joined = make('member-2', 2500).joinAndSync();
    await jest.advanceTimersByTimeAsync(2500);
    await joined;
    expect(heartbeat).toHaveBeenCalledTimes(2);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(heartbeat).toHaveBeenCalledTimes(2);
  });
  it('has a member whose join failed join again at its next heartbeat, until a join succeeds', async () => {
    expect(installRejoinBarrier()).toBe(true);
    const { isRebalancing } = kafkajsInternal<{ isRebalancing(e: unknown): boolean }>('errors.js');
    type RealGroup = {
      memberId: string | null;
      generationId: number | null;
      coordinator: unknown;
      retrier: unknown;
      joinAndSync(): Promise<void>;
      heartbeat(options: { interval: number }): Promise<void>;
    };
    const ConsumerGroup = kafkajsInternal<new (options: object) => RealGroup>('consumer/consumerGroup.js');
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    // kafkajs's own member, its join on kafkajs's own retrier: the coordinator cannot be found in time.
    const group = new ConsumerGroup({
      retry: { retries: 0 },
      cluster: { findGroupCoordinator: () => Promise.reject(new Error('Request timed out')) },
      groupId: 'g',
      topics: ['in'],
      logger: { namespace: () => quiet },
      instrumentationEmitter: { emit() {} },
      assigners: [],
    });
    await expect(group.joinAndSync()).rejects.toThrow('Request timed out');
    // As kafkajs's runner leaves a member the coordinator forgot: no member id, so kafkajs alone
    // would send no heartbeat and never learn that it must join.
    group.memberId = null;
    const beat = group.heartbeat({ interval: 0 });
    await expect(beat).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS' });
    expect(isRebalancing(await beat.catch((e: unknown) => e))).toBe(true);
    await expect(group.heartbeat({ interval: 0 })).rejects.toThrow(
      /last join of its group failed \(Request timed out\)/,
    );

    group.retrier = () => Promise.resolve();
    await group.joinAndSync();
    const heartbeat = jest.fn(() => Promise.resolve());
    Object.assign(group, { memberId: 'member-1', generationId: 4, coordinator: { heartbeat } });
    await group.heartbeat({ interval: 0 });
    expect(heartbeat).toHaveBeenCalledWith({ groupId: 'g', memberId: 'member-1', groupGenerationId: 4 });
  });
});
