/**
 * The finished documents of the owned state partitions, in a few dozen bytes each: what deduplication
 * and replay need (event_id → submission_id, DONE or FAILED, results awaited and published, when it
 * finished, for expiry). A JS object per document costs ~1 KB; here one partition is a handful of
 * typed arrays (columns) plus an open-addressing hash table and a byte arena for text that is not a
 * UUID, so the heap holds no per-document object at all and a revoked partition goes at once.
 *
 * Per document: hash 4 + key 16 + submission id 16 + flags 1 + results 1 + finished (s) 4 +
 * replay generation 2 + blob fingerprint 4 = 48 bytes
 * of columns, ~6-11 bytes of table, plus the text of ids that are not lower-case UUIDs.
 */
import { PartitionIndex, type FinishedEntry } from './partition-index.js';
import type { PackedId } from './packed-id.js';
import { PlainPartitionIndex } from './plain-partition-index.js';
import { optimisationOn } from '../../util/optimisations.js';

/** The finished documents of every owned partition. */
export class FinishedIndex {
  private readonly partitions = new Map<number, PartitionIndex | PlainPartitionIndex>();
  /** Switched off (`packed-state-index`): a Map of objects per partition, the plain way. */
  private readonly packed = optimisationOn('packed-state-index');

  /** Whether this index packs its documents (false when switched off). */
  get isPacked(): boolean {
    return this.packed;
  }

  get(partition: number, eventId: string): FinishedEntry | undefined {
    return this.partitions.get(partition)?.get(eventId);
  }

  set(partition: number, entry: FinishedEntry): void {
    this.partition(partition).set(entry);
  }

  /** `set` from packed ids and raw fields (see `setPacked` of a partition). */
  setPacked(
    partition: number,
    key: PackedId,
    sid: PackedId,
    failed: boolean,
    results: number,
    finishedMs: number,
    generation = 0,
    blob = 0,
  ): void {
    this.partition(partition).setPacked(
      key,
      sid,
      failed,
      results,
      Math.floor(finishedMs / 1000),
      generation,
      blob,
    );
  }

  private partition(partition: number): PartitionIndex | PlainPartitionIndex {
    let index = this.partitions.get(partition);
    if (!index) {
      index = this.packed ? new PartitionIndex() : new PlainPartitionIndex();
      this.partitions.set(partition, index);
    }
    return index;
  }

  /** Removes one document (its tombstone was read, or it is being processed again). */
  delete(partition: number, eventId: string): boolean {
    return this.partitions.get(partition)?.delete(eventId) ?? false;
  }

  /** Forgets a whole partition (revoked). */
  dropPartition(partition: number): void {
    this.partitions.delete(partition);
  }

  /**
   * Removes the documents that finished before `beforeMs` and reports each, so that the owner writes
   * their tombstones. Returns how many left.
   */
  expire(
    beforeMs: number,
    onExpired: (partition: number, eventId: string) => void = () => undefined,
  ): number {
    const before = Math.floor(beforeMs / 1000);
    let n = 0;
    for (const [partition, index] of this.partitions)
      n += index.expire(before, (id) => onExpired(partition, id));
    return n;
  }

  size(partition?: number): number {
    if (partition !== undefined) return this.partitions.get(partition)?.live ?? 0;
    let n = 0;
    for (const index of this.partitions.values()) n += index.live;
    return n;
  }

  partitionsHeld(): number[] {
    return [...this.partitions.keys()].sort((a, b) => a - b);
  }

  *entries(partition: number): Generator<FinishedEntry> {
    const index = this.partitions.get(partition);
    if (index) yield* index.entries();
  }

  /** Bytes held by the typed arrays and arenas (excludes the few objects around them). */
  bytes(): number {
    let n = 0;
    for (const index of this.partitions.values()) n += index.bytes();
    return n;
  }
}
