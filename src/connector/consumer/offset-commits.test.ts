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
});
