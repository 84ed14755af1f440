import { OffsetTracker, PartitionOffsets } from './offsets.js';

describe('PartitionOffsets', () => {
  it('commits only up to the highest contiguous completed record', () => {
    const p = new PartitionOffsets();
    for (const o of ['10', '11', '12', '13']) p.track(o);
    expect(p.committable()).toBeNull();
    p.complete('12');
    p.complete('13');
    expect(p.committable()).toBeNull();
    p.complete('10');
    expect(p.committable()).toBe('11');
    p.complete('11');
    expect(p.committable()).toBe('14');
    expect(p.pending).toBe(0);
  });

  it('follows fetch order across offset gaps', () => {
    const p = new PartitionOffsets();
    p.track(5);
    p.track(9); // 6..8 were transaction markers
    p.complete(9);
    expect(p.committable()).toBeNull();
    p.complete(5);
    expect(p.committable()).toBe('10');
  });

  it('ignores redeliveries of records already tracked or done', () => {
    const p = new PartitionOffsets();
    p.track(1);
    p.track(2);
    p.complete(1);
    p.track(1);
    p.track(2);
    expect(p.pending).toBe(1);
    p.complete(2);
    expect(p.committable()).toBe('3');
  });

  it('ignores completion of an untracked record', () => {
    const p = new PartitionOffsets();
    p.track(1);
    p.complete(7);
    expect(p.committable()).toBeNull();
  });

  it('stays correct over many records completed in reverse', () => {
    const p = new PartitionOffsets();
    for (let i = 0; i < 5000; i++) p.track(i);
    for (let i = 4999; i >= 1; i--) p.complete(i);
    expect(p.committable()).toBeNull();
    p.complete(0);
    expect(p.committable()).toBe('5000');
  });
});

describe('OffsetTracker', () => {
  it('reports only partitions whose offset moved since the last commit', () => {
    const t = new OffsetTracker();
    t.partition(0).track(0);
    t.partition(1).track(0);
    t.partition(0).complete(0);
    expect(t.toCommit()).toEqual([{ partition: 0, offset: '1', metadata: null }]);
    t.markCommitted(t.toCommit());
    expect(t.toCommit()).toEqual([]);
    t.drop(0);
    t.partition(1).complete(0);
    expect(t.toCommit()).toEqual([{ partition: 1, offset: '1', metadata: null }]);
  });

  it('starts at an offset the group committed, until a later record is done', () => {
    const po = new PartitionOffsets();
    po.startAt('40');
    expect(po.committable()).toBe('40');
    // Records before it were done by the previous owner: fetched again, they are not tracked.
    po.track(39);
    po.track(40);
    expect(po.pending).toBe(1);
    po.complete(40);
    expect(po.committable()).toBe('41');
    // Too late once something is tracked or done here.
    po.startAt('10');
    expect(po.committable()).toBe('41');
  });

  it('reports a partition again when only its metadata changed, and which metadata it committed', () => {
    const t = new OffsetTracker();
    t.partition(0).track(0);
    t.partition(0).complete(0);
    let metadata = 'busy';
    t.markCommitted(t.toCommit(() => metadata));
    expect(t.toCommit(() => metadata)).toEqual([]);
    expect(t.someCommittedWith('busy', (p) => p === 0)).toBe(true);
    expect(t.someCommittedWith('idle', () => true)).toBe(false);
    metadata = 'idle';
    expect(t.toCommit(() => metadata)).toEqual([{ partition: 0, offset: '1', metadata: 'idle' }]);
    t.drop(0);
    expect(t.someCommittedWith('busy', () => true)).toBe(false);
  });
});
