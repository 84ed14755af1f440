import { busyPartitions, GroupShare, unfinishedMetadata } from './group-share.js';

/** End offsets of partitions 0..n-1 (log start `low`). */
const ends = (highs: number[], low = 0) =>
  highs.map((high, partition) => ({ partition, low: String(low), high: String(high) }));
/** The group's commits of partitions 0..n-1, with `metadata` for all (none by default). */
const committed = (offsets: Array<number | null>, metadata: Array<string | null> = []) =>
  new Map(
    offsets.map(
      (o, partition) =>
        [
          partition,
          { offset: o === null ? null : String(o), metadata: metadata[partition] ?? null },
        ] as const,
    ),
  );

class RecordingLimiter {
  shares: Array<[number, number]> = [];
  setShare(owned: number, total: number): void {
    this.shares.push([owned, total]);
  }
  /** The fraction of the configured rate last set. */
  get fraction(): number {
    const [owned, total] = this.shares.at(-1)!;
    return owned / total;
  }
}

describe('busyPartitions', () => {
  it('is the partitions with records past the committed offset', () => {
    expect([...busyPartitions(ends([10, 20, 5, 7]), committed([10, 19, 5, 0]))]).toEqual([1, 3]);
  });

  it('counts from the log start when nothing was committed or the commit fell below it', () => {
    expect([...busyPartitions(ends([100, 100, 100], 100), committed([null, 3, 100]))]).toEqual([]);
    expect([...busyPartitions(ends([101, 100], 100), new Map())]).toEqual([0]);
  });

  it('counts a partition whose owner committed it with documents still running', () => {
    const unfinished = unfinishedMetadata(true);
    const done = unfinishedMetadata(false);
    expect([
      ...busyPartitions(
        ends([10, 10, 10, 10]),
        committed([10, 10, 10, 10], [unfinished, done, null, 'other']),
      ),
    ]).toEqual([0]);
  });
});

/** A member of a group over 4 input partitions holding `owned`, with its limiter and a reading helper. */
function member(owned: number[]) {
  const limiter = new RecordingLimiter();
  const share = new GroupShare(limiter, () => 4);
  share.onJoin(owned);
  /** A reading of the group's offsets: end offsets and committed offsets of partitions 0..3. */
  const read = (highs: number[], commits: number[]) => share.onOffsets(ends(highs), committed(commits));
  return { limiter, share, read };
}

describe('GroupShare', () => {
  it('sets the share of the partitions held on every join', () => {
    const limiter = new RecordingLimiter();
    const share = new GroupShare(limiter, () => 4);
    share.onJoin([0, 1]);
    share.onJoin([3]);
    share.onJoin([]);
    expect(limiter.shares).toEqual([
      [2, 4],
      [1, 4],
      [0, 4],
    ]);
  });

  it('divides the limit among the partitions that still have work, a drained one’s part at once', () => {
    const { limiter, read } = member([2, 3]);
    read([50, 50, 50, 50], [0, 0, 0, 0]);
    expect(limiter.fraction).toBe(0.5);
    // Partition 0 drained: its owner gave its part back when it committed the drain, so the three
    // busy ones divide the limit from the first reading that says so.
    read([50, 50, 50, 50], [50, 20, 20, 20]);
    expect(limiter.fraction).toBeCloseTo(2 / 3);
    read([50, 50, 50, 50], [50, 50, 40, 50]);
    expect(limiter.fraction).toBe(1);
  });

  it('gives its drained partitions’ part back when it commits the drain, before any reading', () => {
    const { limiter, share, read } = member([0, 1]);
    read([50, 50, 50, 50], [0, 0, 0, 0]);
    expect(limiter.fraction).toBe(0.5);
    share.onDrained([0]);
    expect(limiter.fraction).toBeCloseTo(1 / 3);
    // Not its partition, or already out: nothing changes.
    share.onDrained([2, 0]);
    expect(limiter.shares).toHaveLength(2);
    // Its last busy partition: the floor.
    share.onDrained([1]);
    expect(limiter.fraction).toBe(0);
    // The reading agrees (0 and 1 drained): the same.
    read([50, 50, 50, 50], [50, 50, 0, 0]);
    expect(limiter.fraction).toBe(0);
  });

  it('falls at once as its own partitions drain, to the floor', () => {
    const { limiter, read } = member([0, 1]);
    read([50, 50, 50, 50], [50, 10, 10, 10]);
    expect(limiter.shares.at(-1)).toEqual([1, 3]);
    read([50, 50, 50, 50], [50, 50, 10, 10]);
    expect(limiter.shares.at(-1)).toEqual([0, 2]);
  });

  it('takes more for its own partition busy again only on the next reading', () => {
    const { limiter, read } = member([0]);
    read([50, 50, 50, 50], [50, 10, 10, 10]);
    expect(limiter.fraction).toBe(0);
    // Partition 0 got records: the other members may not have counted it yet.
    read([60, 50, 50, 50], [50, 10, 10, 10]);
    expect(limiter.fraction).toBe(0);
    read([60, 50, 50, 50], [51, 11, 11, 11]);
    expect(limiter.fraction).toBe(0.25);
  });

  it('gives the share of partitions back when nothing is left anywhere, and waits to take more', () => {
    const { limiter, read } = member([0, 1]);
    read([50, 50, 50, 50], [50, 50, 50, 10]);
    expect(limiter.fraction).toBe(0);
    // The last busy partition drained (its owner gave its part back committing that): at once.
    read([50, 50, 50, 50], [50, 50, 50, 50]);
    expect(limiter.fraction).toBe(0.5);
    // Its own partition fills first: the others may be filling too, unseen yet.
    read([60, 50, 50, 50], [50, 50, 50, 50]);
    expect(limiter.fraction).toBe(0.5);
    read([60, 50, 50, 50], [51, 50, 50, 50]);
    expect(limiter.fraction).toBe(1);
  });

  it('keeps the busy members within the whole when each reads at most one reading behind', () => {
    // 3 members, 6 partitions, random owners and random busy sets; every member reads every state, at
    // its own moment: some at once, the others later but before the next state exists (a member
    // reads the offsets at least once between two changes). A partition that drains does so by its
    // owner's commit, so its owner knows first (`onDrained`, before anyone reads the new state).
    // After every read, the members holding a partition busy in the newest state (the ones that can
    // be making calls) hold at most the whole.
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const partitions = [0, 1, 2, 3, 4, 5];
    for (let round = 0; round < 300; round++) {
      const owner = partitions.map(() => Math.floor(random() * 3));
      const limiters = [0, 1, 2].map(() => new RecordingLimiter());
      const members = limiters.map((l, m) => {
        const s = new GroupShare(l, () => 6);
        s.onJoin(partitions.filter((p) => owner[p] === m));
        return s;
      });
      const states: boolean[][] = [];
      const late: number[] = [];
      const read = (m: number, state: boolean[]) => {
        members[m]!.onOffsets(
          ends(partitions.map(() => 10)),
          committed(state.map((busy) => (busy ? 9 : 10))),
        );
        const newest = states.at(-1)!;
        const sum = limiters
          .filter((_, i) => partitions.some((p) => owner[p] === i && newest[p]))
          .reduce((total, l) => total + l.fraction, 0);
        expect(sum).toBeLessThanOrEqual(1 + 1e-9);
      };
      for (let step = 0; step < 8; step++) {
        // Members that postponed the newest state read it before the next one exists.
        const previous = states.at(-1);
        for (const m of late.splice(0)) read(m, previous!);
        // Often all idle (the partition share), else a random busy set.
        const state = partitions.map(() => random() < (step % 3 === 0 ? 0 : 0.5));
        states.push(state);
        members.forEach((s, m) => s.onDrained(partitions.filter((p) => owner[p] === m && !state[p])));
        for (const m of [0, 1, 2].sort(() => random() - 0.5)) {
          if (random() < 0.5) read(m, state);
          else late.push(m);
        }
      }
    }
  });

  describe('with readings (connector.groupShareIntervalMs > 0), a join', () => {
    /** A member that reads the offsets, over 4 partitions. */
    function reader() {
      const limiter = new RecordingLimiter();
      const share = new GroupShare(limiter, () => 4, true);
      const read = (highs: number[], commits: number[]) => share.onOffsets(ends(highs), committed(commits));
      return { limiter, share, read };
    }

    it('gives a member with no reading yet its share of the partitions at once (the floor lost a group its first second)', () => {
      const { limiter, share, read } = reader();
      share.onJoin([0, 1]);
      expect(limiter.shares).toEqual([[2, 4]]);
      // Every partition busy: the same share, unchanged.
      read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(limiter.shares).toEqual([[2, 4]]);
      // Only the other member's partitions busy: this one has nothing to spend, down at once.
      read([50, 50, 50, 50], [50, 50, 0, 0]);
      expect(limiter.fraction).toBe(0);
    });

    it('gives the share of the partitions at once when the last reading found no work anywhere', () => {
      const { limiter, share, read } = reader();
      // Joined alone, the group idle: every partition.
      share.onJoin([0, 1, 2, 3]);
      read([0, 0, 0, 0], [0, 0, 0, 0]);
      read([0, 0, 0, 0], [0, 0, 0, 0]);
      expect(limiter.fraction).toBe(1);
      // Two more members came (a fall: at once, as before), then one of them left (a rise).
      share.onJoin([0, 1]);
      expect(limiter.fraction).toBe(0.5);
      share.onJoin([0, 1, 2]);
      expect(limiter.fraction).toBe(0.75);
      // The first records arrive everywhere: the same share.
      read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(limiter.fraction).toBe(0.75);
    });

    it('adds up to the whole when two members start, each joining before it read, then reading at its own moment', () => {
      const a = reader();
      const b = reader();
      const sum = () => a.limiter.fraction + b.limiter.fraction;
      // a joins alone, then b joins and a hears of it later.
      a.share.onJoin([0, 1, 2, 3]);
      b.share.onJoin([2, 3]);
      expect(b.limiter.fraction).toBe(0.5);
      a.share.onJoin([0, 1]);
      expect(sum()).toBe(1);
      a.read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(sum()).toBe(1);
      // b's partitions drain first: b gives back at once, a takes them after two readings.
      b.read([50, 50, 50, 50], [0, 0, 50, 50]);
      expect(sum()).toBeLessThanOrEqual(1);
      a.read([50, 50, 50, 50], [0, 0, 50, 50]);
      expect(sum()).toBeLessThanOrEqual(1);
      a.read([50, 50, 50, 50], [1, 1, 50, 50]);
      expect(a.limiter.fraction).toBe(1);
      expect(b.limiter.fraction).toBe(0);
    });

    it('keeps the share of a member that kept its partitions', () => {
      const { limiter, share, read } = reader();
      share.onJoin([0]);
      // Only partitions 0 and 1 busy: 1 of 2.
      read([50, 50, 50, 50], [0, 0, 50, 50]);
      read([50, 50, 50, 50], [0, 0, 50, 50]);
      expect(limiter.fraction).toBe(0.5);
      const before = limiter.shares.length;
      share.onJoin([0]);
      expect(limiter.shares.length).toBe(before);
    });

    it('gives back a partition’s share at once, takes a new one only after two readings', () => {
      const { limiter, share, read } = reader();
      share.onJoin([0, 1]);
      read([50, 50, 50, 50], [0, 0, 0, 0]);
      read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(limiter.fraction).toBe(0.5);
      share.onJoin([1]);
      expect(limiter.fraction).toBe(0.25);
      share.onJoin([1, 2, 3]);
      expect(limiter.fraction).toBe(0.25);
      read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(limiter.fraction).toBe(0.25);
      read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(limiter.fraction).toBe(0.75);
    });

    it('keeps two members within the whole while a partition moves and they hear of it at different moments', () => {
      const a = reader();
      const b = reader();
      const both = (highs: number[], commits: number[]) => {
        a.read(highs, commits);
        b.read(highs, commits);
      };
      a.share.onJoin([0, 1]);
      b.share.onJoin([2, 3]);
      both([50, 50, 50, 50], [0, 0, 0, 0]);
      both([50, 50, 50, 50], [0, 0, 0, 0]);
      const sum = () => a.limiter.fraction + b.limiter.fraction;
      expect(sum()).toBe(1);
      // Partition 1 moves from a to b; b hears first, then reads once before a hears.
      b.share.onJoin([1, 2, 3]);
      expect(sum()).toBeLessThanOrEqual(1);
      b.read([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(sum()).toBeLessThanOrEqual(1);
      a.share.onJoin([0]);
      both([50, 50, 50, 50], [0, 0, 0, 0]);
      expect(b.limiter.fraction).toBe(0.75);
      expect(sum()).toBe(1);
    });
  });
});
