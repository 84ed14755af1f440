import type { PartitionMetadata } from 'kafkajs';
import { PartitionLeaders } from './partition-leaders.js';
import { partitionOfKey } from './partitioner.js';

function partitions(leaders: number[], replicas: number): PartitionMetadata[] {
  return leaders.map((leader, partitionId) => ({
    partitionId,
    leader,
    partitionErrorCode: 0,
    replicas: Array.from({ length: replicas }, (_, i) => i + 1),
    isr: [],
  }));
}

describe('PartitionLeaders', () => {
  it('sees one broker while every partition has the same leader and no other replica', () => {
    const view = new PartitionLeaders();
    view.learn('a', partitions([1, 1, 1], 1));
    view.learn('b', partitions([1], 1));
    expect(view.severalBrokers).toBe(false);
  });

  it('sees several brokers from leaders that differ, across topics too, or from a replicated partition', () => {
    const across = new PartitionLeaders();
    across.learn('a', partitions([1], 1));
    across.learn('b', partitions([2], 1));
    expect(across.severalBrokers).toBe(true);
    const replicated = new PartitionLeaders();
    replicated.learn('a', partitions([1, 1], 3));
    expect(replicated.severalBrokers).toBe(true);
  });

  it("names a record's partition: its own, else its key's once the topic's count is known, else none", () => {
    const view = new PartitionLeaders();
    expect(view.partitionOf('a', 2, 'k')).toBe(2);
    expect(view.partitionOf('a', undefined, 'k')).toBeUndefined();
    view.learn('a', partitions([1, 2, 3, 1, 2], 3));
    expect(view.partitionOf('a', undefined, 'k')).toBe(partitionOfKey('k', 5));
    expect(view.partitionOf('a', undefined, null)).toBeUndefined();
  });

  it('learns a changed partition count when kafkajs hands new metadata', () => {
    const view = new PartitionLeaders();
    const before = partitions([1, 1], 1);
    view.learn('a', before);
    view.learn('a', before);
    expect(view.partitionOf('a', undefined, 'k')).toBe(partitionOfKey('k', 2));
    view.learn('a', partitions([1, 1, 1, 1, 1, 1, 1], 1));
    expect(view.partitionOf('a', undefined, 'k')).toBe(partitionOfKey('k', 7));
  });
});
