import kafkajs from 'kafkajs';
import { kafkaLogLevelFor } from './client.js';
import {
  assignersFor,
  assignmentDifference,
  DEFAULT_RESTART_POLICY,
  type GroupJoin,
  headerBuffers,
  KafkaConsumer,
  restartDelay,
} from './consumer.js';
import { STICKY_PROTOCOL, stickyAssigner } from './sticky-assignor.js';
import { kafkaError } from './errors.js';

describe('assignmentDifference', () => {
  it('lists partitions gained or lost, per topic, omitting empty topics', () => {
    const before = { a: [0, 1, 2], b: [0] };
    const after = { a: [2, 3], c: [1] };
    expect(assignmentDifference(after, before)).toEqual({ a: [3], c: [1] });
    expect(assignmentDifference(before, after)).toEqual({ a: [0, 1], b: [0] });
    expect(assignmentDifference(after, after)).toEqual({});
  });
});

describe('assignersFor', () => {
  const names = (preferred: 'sticky' | 'round-robin') =>
    assignersFor(
      preferred,
      stickyAssigner(() => null),
      // Naming needs no cluster: the factories only build the assigner.
    ).map((a) => a({} as Parameters<typeof a>[0]).name);
  it('offers both protocols, the preferred one first (kafka.assignor)', () => {
    expect(names('sticky')).toEqual([STICKY_PROTOCOL, 'RoundRobinAssigner']);
    expect(names('round-robin')).toEqual(['RoundRobinAssigner', STICKY_PROTOCOL]);
  });
});

describe('headerBuffers', () => {
  it('turns string and repeated headers into single buffers and drops missing ones', () => {
    const headers = headerBuffers({ a: 'x', b: [Buffer.from('1'), Buffer.from('2')], c: undefined });
    expect(Object.keys(headers)).toEqual(['a', 'b']);
    expect(headers.a?.toString()).toBe('x');
    expect(headers.b?.toString()).toBe('2');
  });
});

describe('kafkaLogLevelFor', () => {
  const { logLevel } = kafkajs;
  it('demotes connection-level response errors, which the client retries, to debug', () => {
    expect(kafkaLogLevelFor('Connection', logLevel.ERROR)).toBe('debug');
    expect(kafkaLogLevelFor('Consumer', logLevel.ERROR)).toBe('error');
    expect(kafkaLogLevelFor('Producer', logLevel.WARN)).toBe('warn');
    expect(kafkaLogLevelFor('Runner', logLevel.DEBUG)).toBe('debug');
  });
});

describe('kafkaError', () => {
  it('keeps the client verdict on retrying and says what was being done', () => {
    const cause = Object.assign(new Error('The coordinator is loading'), { retriable: true });
    const error = kafkaError(cause, 'committing offsets of group g');
    expect(error).toMatchObject({
      retriable: true,
      message: 'committing offsets of group g: The coordinator is loading',
    });
    expect(error.cause).toBe(cause);
    expect(kafkaError(new Error('bad'), 'x').retriable).toBe(false);
  });
});

describe('restartDelay', () => {
  const policy = { ...DEFAULT_RESTART_POLICY, initialDelayMs: 500, maxDelayMs: 30_000 };
  it('doubles per crash in a row up to the bound, with at most half subtracted as jitter', () => {
    expect([1, 2, 3, 4].map((attempt) => restartDelay(policy, attempt, 0))).toEqual([500, 1000, 2000, 4000]);
    expect(restartDelay(policy, 20, 0)).toBe(30_000);
    expect(restartDelay(policy, 1, 1)).toBe(250);
    expect(restartDelay(policy, 200, 0.5)).toBe(22_500);
  });
});

describe('KafkaConsumer group listeners', () => {
  /** A kafkajs consumer stand-in: only its events, so a join can be emitted by hand. */
  function fakeKafka() {
    const handlers = new Map<string, (event: { payload: unknown }) => void>();
    const errors: Array<{ message: string; extra: unknown }> = [];
    const consumer = {
      events: { GROUP_JOIN: 'join', CRASH: 'crash' },
      on: (name: string, handler: (event: { payload: unknown }) => void) => handlers.set(name, handler),
      logger: () => ({ error: (message: string, extra: unknown) => errors.push({ message, extra }) }),
    };
    const join = (memberAssignment: Record<string, number[]>, memberId = 'm') =>
      handlers.get('join')!({ payload: { memberId, isLeader: true, memberAssignment } });
    const kafka = { consumer: () => consumer } as unknown as ConstructorParameters<typeof KafkaConsumer>[0];
    return { kafka, join, errors };
  }

  it('tells every listener even when one throws, logs it, and tells the thrower the change again', () => {
    const { kafka, join, errors } = fakeKafka();
    const consumer = new KafkaConsumer(kafka, { groupId: 'g' });
    const first: GroupJoin[] = [];
    const second: GroupJoin[] = [];
    let failing = true;
    consumer.onGroupJoin((j) => {
      first.push(j);
      if (failing) throw new Error('listener broke');
    });
    consumer.onGroupJoin((j) => second.push(j));
    expect(() => join({ t: [0, 1] })).not.toThrow();
    expect(second.map((j) => j.added)).toEqual([{ t: [0, 1] }]);
    expect(errors).toEqual([
      expect.objectContaining({ extra: expect.objectContaining({ groupId: 'g', error: 'listener broke' }) }),
    ]);
    failing = false;
    join({ t: [1, 2] });
    // The listener that threw is told all it gained since it last took a change; the other only what is new.
    expect(first[1]).toMatchObject({ added: { t: [1, 2] }, removed: {} });
    expect(second[1]).toMatchObject({ added: { t: [2] }, removed: { t: [0] } });
  });

  it('tells a join under a new member id as the loss of all it held, then all it got as new', () => {
    const { kafka, join } = fakeKafka();
    const consumer = new KafkaConsumer(kafka, { groupId: 'g' });
    const seen: GroupJoin[] = [];
    consumer.onGroupJoin((j) => seen.push(j));
    join({ t: [2, 3] }, 'm-1');
    join({ t: [2, 3] }, 'm-1');
    // The same member id again: a rebalance that kept its partitions, nothing moved.
    expect(seen[1]).toMatchObject({ memberId: 'm-1', added: {}, removed: {} });
    // The coordinator forgot the member (session expired); kafkajs joined again as a new member and
    // got the same partitions back, which another member may have held in between.
    join({ t: [2, 3] }, 'm-2');
    expect(seen.slice(2)).toEqual([
      expect.objectContaining({ memberId: '', assignment: {}, removed: { t: [2, 3] }, added: {} }),
      expect.objectContaining({ memberId: 'm-2', added: { t: [2, 3] }, removed: {} }),
    ]);
  });
});
