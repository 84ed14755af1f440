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
    expect(t.toCommit()).toEqual([{ partition: 0, offset: '1' }]);
    t.markCommitted(t.toCommit());
    expect(t.toCommit()).toEqual([]);
    t.drop(0);
    t.partition(1).complete(0);
    expect(t.toCommit()).toEqual([{ partition: 1, offset: '1' }]);
  });
});
