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

  /**
   * Everything before `offset` is done (the group committed it): `committable` gives `offset` until a
   * later record is done. Only before anything is tracked or done here.
   */
  startAt(offset: string | number | bigint): void {
    if (this.lastDone !== null || this.queue.length > this.head) return;
    const o = BigInt(offset);
    if (o > 0n) this.lastDone = o - 1n;
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

/** An offset to commit, with the metadata Kafka keeps beside it (null: none). */
export interface OffsetCommit {
  partition: number;
  offset: string;
  metadata: string | null;
}

/** Offsets of every assigned partition of one topic, with what was last committed to skip no-op commits. */
export class OffsetTracker {
  private readonly partitions = new Map<number, PartitionOffsets>();
  private readonly committed = new Map<number, { offset: string; metadata: string | null }>();

  partition(p: number): PartitionOffsets {
    let po = this.partitions.get(p);
    if (!po) {
      po = new PartitionOffsets();
      this.partitions.set(p, po);
    }
    return po;
  }

  /** The partition's offsets, or undefined when it is not tracked (never taken, or dropped since). */
  current(p: number): PartitionOffsets | undefined {
    return this.partitions.get(p);
  }

  drop(p: number): void {
    this.partitions.delete(p);
    this.committed.delete(p);
  }

  /**
   * Partitions whose committable offset, or the metadata `metadataOf` gives them now, changed since
   * the last `markCommitted`. A partition with nothing done yet here has no offset to commit.
   */
  toCommit(metadataOf: (partition: number) => string | null = () => null): OffsetCommit[] {
    const out: OffsetCommit[] = [];
    for (const [partition, po] of this.partitions) {
      const offset = po.committable();
      if (offset === null) continue;
      const metadata = metadataOf(partition);
      const last = this.committed.get(partition);
      if (last?.offset !== offset || last.metadata !== metadata) out.push({ partition, offset, metadata });
    }
    return out;
  }

  /** Records what a commit sent; a partition dropped while the commit was in flight stays dropped. */
  markCommitted(entries: OffsetCommit[]): void {
    for (const e of entries) {
      if (this.partitions.has(e.partition))
        this.committed.set(e.partition, { offset: e.offset, metadata: e.metadata });
    }
  }

  /** Whether a partition last committed here with this metadata passes `test`. */
  someCommittedWith(metadata: string, test: (partition: number) => boolean): boolean {
    for (const [partition, last] of this.committed) {
      if (last.metadata === metadata && test(partition)) return true;
    }
    return false;
  }
}
