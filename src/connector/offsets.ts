/**
 * Tracks, per partition, which fetched records have a durable outcome and yields the offset that is
 * safe to commit: one past the last record such that every record fetched before it is done.
 * Records complete out of order; an unfinished one holds the commit back until it is done. Offsets
 * are compared in fetch order, not by arithmetic, because a topic's offsets can have gaps
 * (transaction markers, compaction).
 */
export class PartitionOffsets {
  private queue: bigint[] = [];
  private head = 0;
  private readonly done = new Set<bigint>();
  private readonly tracked = new Set<bigint>();
  private lastDone: bigint | null = null;

  /** Registers a fetched record, in fetch order, before its work starts. Redeliveries are ignored. */
  track(offset: string | number | bigint): void {
    const o = BigInt(offset);
    if (this.tracked.has(o) || (this.lastDone !== null && o <= this.lastDone)) return;
    const tail = this.queue.length > this.head ? this.queue[this.queue.length - 1]! : this.lastDone;
    if (tail !== null && o <= tail) return;
    this.tracked.add(o);
    this.queue.push(o);
  }

  /** Marks a tracked record's outcome durable. */
  complete(offset: string | number | bigint): void {
    const o = BigInt(offset);
    if (!this.tracked.has(o)) return;
    this.done.add(o);
    while (this.head < this.queue.length && this.done.has(this.queue[this.head]!)) {
      const first = this.queue[this.head++]!;
      this.done.delete(first);
      this.tracked.delete(first);
      this.lastDone = first;
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** The offset to commit (Kafka's convention: the next record to read), or null when nothing is done. */
  committable(): string | null {
    return this.lastDone === null ? null : (this.lastDone + 1n).toString();
  }

  /** Tracked records whose outcome is not yet durable. */
  get pending(): number {
    return this.tracked.size - this.done.size;
  }
}

/** Offsets of every assigned partition of one topic, with what was last committed to skip no-op commits. */
export class OffsetTracker {
  private readonly partitions = new Map<number, PartitionOffsets>();
  private readonly committed = new Map<number, string>();

  partition(p: number): PartitionOffsets {
    let po = this.partitions.get(p);
    if (!po) {
      po = new PartitionOffsets();
      this.partitions.set(p, po);
    }
    return po;
  }

  drop(p: number): void {
    this.partitions.delete(p);
    this.committed.delete(p);
  }

  /** Partitions whose committable offset moved since the last `markCommitted`. */
  toCommit(): Array<{ partition: number; offset: string }> {
    const out: Array<{ partition: number; offset: string }> = [];
    for (const [partition, po] of this.partitions) {
      const offset = po.committable();
      if (offset !== null && this.committed.get(partition) !== offset) out.push({ partition, offset });
    }
    return out;
  }

  markCommitted(entries: Array<{ partition: number; offset: string }>): void {
    for (const e of entries) this.committed.set(e.partition, e.offset);
  }
}
