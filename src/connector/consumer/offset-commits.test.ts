import { jest } from '@jest/globals';
import type { TopicPartitionOffset } from '../../kafka/consumer.js';
import { createLogger } from '../../observability/logger.js';
import { OffsetCommits } from './offset-commits.js';

const logger = createLogger({ level: 'silent' });

/** A consumer holding partitions 0 and 1 of `in`, recording every commit it is asked for. */
function consumer(failCommits = false) {
  const commits: TopicPartitionOffset[][] = [];
  return {
    commits,
    pause: () => undefined,
    resume: () => undefined,
    currentAssignment: () => ({ in: [0, 1] }),
    commitOffsets: async (offsets: TopicPartitionOffset[]) => {
      if (failCommits) throw new Error('The group is rebalancing, so a rejoin is needed');
      commits.push(offsets);
    },
  };
}

function commitsOf(unfinished: Map<number, number> = new Map()) {
  return new OffsetCommits({ arrived: 'in', unfinishedOn: (p) => unfinished.get(p) ?? 0, logger });
}

describe('OffsetCommits', () => {
  afterEach(() => jest.useRealTimers());

  it('commits every interval once started, only what moved, and nothing after stop', async () => {
    jest.useFakeTimers();
    const c = consumer();
    const commits = commitsOf();
    commits.attach(c);
    const p0 = commits.tracker('in').partition(0);
    p0.track(4);
    p0.complete(4);
    commits.startInterval(1000);
    await jest.advanceTimersByTimeAsync(999);
    expect(c.commits).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(c.commits).toEqual([[{ topic: 'in', partition: 0, offset: '5', metadata: expect.any(String) }]]);
    // Nothing moved: the next interval commits nothing.
    await jest.advanceTimersByTimeAsync(1000);
    expect(c.commits).toHaveLength(1);
    p0.track(5);
    p0.complete(5);
    commits.stop();
    await jest.advanceTimersByTimeAsync(5000);
    expect(c.commits).toHaveLength(1);
    // The final commit is the caller's, after stop.
    await commits.commit('stop');
    expect(c.commits[1]).toEqual([{ topic: 'in', partition: 0, offset: '6', metadata: expect.any(String) }]);
  });

  it('commits a partition whose last document finished at once, not at the next interval', async () => {
    jest.useFakeTimers();
    const unfinished = new Map([[0, 1]]);
    const c = consumer();
    const commits = commitsOf(unfinished);
    commits.attach(c);
    const p0 = commits.tracker('in').partition(0);
    p0.track(0);
    p0.complete(0);
    await commits.commit('interval');
    const [first] = c.commits;
    unfinished.set(0, 0);
    commits.commitIfDrained();
    await jest.advanceTimersByTimeAsync(0);
    expect(c.commits).toHaveLength(2);
    expect(c.commits[1]![0]!.offset).toBe('1');
    // The metadata flips from "still has work" to "drained": the group's share moves on it.
    expect(c.commits[1]![0]!.metadata).not.toBe(first![0]!.metadata);
  });

  it('tells which input partitions it commits as drained before the commit is sent', async () => {
    const unfinished = new Map([
      [0, 0],
      [1, 2],
    ]);
    const c = consumer();
    const told: Array<{ partitions: number[]; commitsBefore: number }> = [];
    const commits = new OffsetCommits({
      arrived: 'in',
      unfinishedOn: (p) => unfinished.get(p) ?? 0,
      onDrained: (partitions) => told.push({ partitions, commitsBefore: c.commits.length }),
      logger,
    });
    commits.attach(c);
    for (const p of [0, 1]) {
      commits.tracker('in').partition(p).track(0);
      commits.tracker('in').partition(p).complete(0);
    }
    // Only partition 0 has nothing running here; told before its commit went out.
    await commits.commit('interval');
    expect(told).toEqual([{ partitions: [0], commitsBefore: 0 }]);
    expect(c.commits).toHaveLength(1);
    // A feedback topic's commits carry no such flag: nothing told.
    commits.tracker('feedback').partition(0).track(0);
    commits.tracker('feedback').partition(0).complete(0);
    await commits.commit('interval');
    expect(told).toHaveLength(1);
  });

  it('keeps what it could not commit for the next commit', async () => {
    const failing = consumer(true);
    const commits = commitsOf();
    commits.attach(failing);
    const p1 = commits.tracker('in').partition(1);
    p1.track(7);
    p1.complete(7);
    await commits.commit('before rejoin');
    expect(failing.commits).toHaveLength(0);
    const ok = consumer();
    commits.attach(ok);
    await commits.commit('interval');
    expect(ok.commits).toEqual([[{ topic: 'in', partition: 1, offset: '8', metadata: expect.any(String) }]]);
  });

  it('commits no partition this consumer does not hold', async () => {
    const c = consumer();
    const commits = commitsOf();
    commits.attach(c);
    const p5 = commits.tracker('in').partition(5);
    p5.track(1);
    p5.complete(1);
    await commits.commit('interval');
    expect(c.commits).toHaveLength(0);
  });
  it('sends one commit at a time: one asked for meanwhile waits, then sends the newer offset', async () => {
    const sent: Array<{ offsets: TopicPartitionOffset[]; answer: () => void }> = [];
    const c = {
      ...consumer(),
      commitOffsets: (offsets: TopicPartitionOffset[]) =>
        new Promise<void>((resolve) => sent.push({ offsets, answer: resolve })),
    };
    const commits = commitsOf();
    commits.attach(c);
    const p0 = commits.tracker('in').partition(0);
    p0.track(0);
    p0.complete(0);
    const first = commits.commit('interval');
    await Promise.resolve();
    expect(sent.map((s) => s.offsets[0]!.offset)).toEqual(['1']);
    p0.track(1);
    p0.complete(1);
    const second = commits.commit('partition drained');
    p0.track(2);
    p0.complete(2);
    const third = commits.commit('stop');
    // Nothing more goes out while the first is unanswered: an older offset cannot land after a newer.
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(1);
    sent[0]!.answer();
    await first;
    await new Promise((r) => setImmediate(r));
    // The two asked for meanwhile are one commit, of what is safe when it is sent.
    expect(sent.map((s) => s.offsets[0]!.offset)).toEqual(['1', '3']);
    sent[1]!.answer();
    await Promise.all([second, third]);
    expect(sent).toHaveLength(2);
  });

  it('logs a failed commit as a warning, with the reason and the error', async () => {
    const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
    const record = (level: string) => (obj: Record<string, unknown>, msg: string) =>
      lines.push({ level, obj, msg });
    const capturing = { ...logger, warn: record('warn'), debug: record('debug') } as unknown as typeof logger;
    const commits = new OffsetCommits({ arrived: 'in', unfinishedOn: () => 0, logger: capturing });
    commits.attach(consumer(true));
    commits.tracker('in').partition(0).track(3);
    commits.tracker('in').partition(0).complete(3);
    await commits.commit('stop');
    expect(lines).toEqual([
      {
        level: 'warn',
        obj: expect.objectContaining({ reason: 'stop', err: expect.stringContaining('rebalancing') }),
        msg: expect.stringContaining('commit failed'),
      },
    ]);
  });

  it('forgets what was committed for a partition dropped while the commit was in flight', async () => {
    const answers: Array<() => void> = [];
    const c = { ...consumer(), commitOffsets: () => new Promise<void>((resolve) => answers.push(resolve)) };
    const commits = commitsOf();
    commits.attach(c);
    const tracker = commits.tracker('in');
    tracker.partition(0).track(0);
    tracker.partition(0).complete(0);
    const sending = commits.commit('interval');
    await Promise.resolve();
    commits.drop('in', 0);
    answers[0]!();
    await sending;
    // Given back later, the partition's first completed offset is committed again, not taken as sent.
    tracker.partition(0).track(0);
    tracker.partition(0).complete(0);
    const again = commits.commit('interval');
    await Promise.resolve();
    expect(answers).toHaveLength(2);
    answers[1]!();
    await again;
  });
});
