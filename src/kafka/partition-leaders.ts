/**
 * What a transactional producer learnt of the cluster from kafkajs's own metadata, through its
 * partitioner (kafkajs hands it each topic's partitions with their leaders at every send): each
 * topic's partition count, and whether the cluster has more than one broker.
 *
 * Why: kafkajs 2.2.4 sends one request per leader and, when one of them fails, retries every leader
 * that has not answered yet, also one whose request is still out. That request then goes out a
 * second time under the next sequence number and the broker takes both: a record written twice in
 * one transaction. A send that reaches a single partition has a single leader, whose retry reuses
 * the sequence number of the request that failed, so the broker drops a copy. On more than one
 * broker a transaction's records therefore go out one partition per send (`onePartitionPerSend`).
 */
import type { PartitionMetadata } from 'kafkajs';
import { partitionOfKey } from './partitioner.js';

export class PartitionLeaders {
  private readonly counts = new Map<string, number>();
  /** The metadata last seen per topic: kafkajs hands the same array until its metadata changes. */
  private readonly seen = new Map<string, PartitionMetadata[]>();
  private readonly leaders = new Set<number>();
  private several = false;

  /** Called by the producer's partitioner with kafkajs's metadata of `topic`. */
  learn(topic: string, partitionMetadata: PartitionMetadata[]): void {
    if (this.seen.get(topic) === partitionMetadata) return;
    this.seen.set(topic, partitionMetadata);
    this.counts.set(topic, partitionMetadata.length);
    for (const p of partitionMetadata) {
      if (p.leader >= 0) this.leaders.add(p.leader);
      // A partition replicated to other nodes: the cluster has several brokers, whoever leads now.
      if ((p.replicas?.length ?? 0) > 1) this.several = true;
    }
    if (this.leaders.size > 1) this.several = true;
  }

  /** True once the cluster was seen to have more than one broker. */
  get severalBrokers(): boolean {
    return this.several;
  }

  /**
   * The partition a record of `topic` goes to: its own, or its key's as the partitioner picks it;
   * undefined while the topic's partition count is not known yet, or for a record without key
   * (kafkajs spreads those itself).
   */
  partitionOf(
    topic: string,
    partition: number | undefined,
    key: Buffer | string | null | undefined,
  ): number | undefined {
    if (partition !== undefined && partition !== null) return partition;
    const count = this.counts.get(topic);
    if (count === undefined || count === 0 || key === null || key === undefined) return undefined;
    return partitionOfKey(key, count);
  }
}

/** A record as a transaction gathers it: its topic, and its own partition or key. */
interface Routed {
  topic: string;
  message: { partition?: number; key: Buffer | string | null | undefined };
}

/**
 * Sends `items` so that no send reaches more than one partition: the records whose partition is not
 * known yet one by one, in order (each teaches the partitioner its topic), then one send per
 * partition, all at once, each record pinned to the partition it was grouped under. Resolves once
 * every send settled; rejects with the first failure.
 */
export async function onePartitionPerSend<T extends Routed>(
  leaders: PartitionLeaders,
  items: T[],
  send: (part: T[]) => Promise<unknown>,
): Promise<void> {
  const groups = new Map<string, T[]>();
  const place = (item: T): boolean => {
    const partition = leaders.partitionOf(item.topic, item.message.partition, item.message.key);
    if (partition === undefined) return false;
    const slot = `${item.topic}\u0000${partition}`;
    const pinned = { ...item, message: { ...item.message, partition } };
    const group = groups.get(slot);
    if (group) group.push(pinned);
    else groups.set(slot, [pinned]);
    return true;
  };
  const unknown = items.filter((item) => !place(item));
  for (const item of unknown) if (!place(item)) await send([item]);
  const outcomes = await Promise.allSettled([...groups.values()].map((part) => send(part)));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}
