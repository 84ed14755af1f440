/**
 * A partition-local reader of a compacted changelog topic, as Kafka Streams restores a task's store:
 * the instance reads only the partitions it owns. `assign` restores each partition from its first
 * record to the end offset as of the call and resolves then; the partition is tailed from there on,
 * unless `tail: false` (the sole writer of its partitions, which applies its own writes, stops
 * reading a partition once it is restored, as a Kafka Streams active task does).
 * `revoke` stops reading and tells the sink to drop the partition at once.
 *
 * The sink sees every record of an owned partition once and in order, tombstones included
 * (`value === null`), and `drop(partition)` on revoke; it never sees a record of a partition it does
 * not own. Records without a key (not written by docstream) are skipped.
 */
import type { Logger } from '../observability/logger.js';
import type { KafkaAdmin } from './admin.js';
import type { KafkaClient } from './client.js';
import type { IncomingMessage } from './consumer.js';
import { KafkaError } from './errors.js';
import { PartitionReader, type PartitionReaderSettings } from './partition-reader.js';
import { READER_GROUP_PREFIXES } from './reader-groups.js';

export interface ChangelogRecord {
  key: Buffer;
  /** null: a tombstone. */
  value: Buffer | null;
  partition: number;
  offset: number;
  /** Milliseconds since the epoch (the record's timestamp). */
  timestamp: number;
}

export interface ChangelogSink {
  apply(record: ChangelogRecord): void;
  /** The partition is no longer owned: forget everything read from it. */
  drop(partition: number): void;
}

interface Restore {
  /** The end offset to reach; null while the topic's offsets are being read. */
  target: number | null;
  /** Records read for this restore so far, and when it began (for the log line at its end). */
  records: number;
  startedAt: number;
  waiters: Array<{ resolve: () => void; reject: (error: Error) => void }>;
}

interface ChangelogSettings extends PartitionReaderSettings {
  /** How long `assign` may take before it rejects (default 120 s). */
  restoreTimeoutMs?: number;
  /** Keep reading a restored partition (default true); false stops at the restore's end offset. */
  tail?: boolean;
}

export class ChangelogReader {
  private readonly reader: PartitionReader;
  /** Partitions still restoring, with the end offset they must reach. */
  private readonly restoring = new Map<number, Restore>();
  /**
   * Owned partitions, each with the epoch of the `assign` that took it: a step of that assign after
   * an await goes on only while the partition still has its epoch (not revoked, not taken again).
   */
  private readonly owned = new Map<number, number>();
  private epochs = 0;

  constructor(
    kafka: KafkaClient,
    private readonly admin: KafkaAdmin,
    readonly topic: string,
    private readonly sink: ChangelogSink,
    private readonly logger: Logger,
    private readonly settings: ChangelogSettings = {},
  ) {
    this.reader = new PartitionReader(kafka, topic, logger, {
      groupPrefix: READER_GROUP_PREFIXES.changelog,
      ...settings,
    });
  }

  start(): Promise<void> {
    return this.reader.start();
  }

  /**
   * Starts owning `partitions` (those already owned are left as they are) and resolves once each has
   * been restored to the end offset it had when `assign` was called. Owned from the call on: a
   * `revoke` before the restore ended (while the offsets are read too) rejects it and drops the
   * partition.
   */
  async assign(partitions: number[]): Promise<void> {
    const fresh = [...new Set(partitions)].filter((p) => !this.owned.has(p));
    const claimed = fresh.map((partition) => {
      const epoch = ++this.epochs;
      this.owned.set(partition, epoch);
      this.restoring.set(partition, { target: null, records: 0, startedAt: Date.now(), waiters: [] });
      return { partition, epoch };
    });
    const waits = partitions.map((partition) => this.restored(partition));
    if (claimed.length > 0)
      this.openAtOffsets(claimed).catch((err: unknown) => {
        for (const { partition, epoch } of claimed) this.abandon(partition, epoch, err as Error);
      });
    await this.withTimeout(Promise.all(waits), partitions);
  }

  /**
   * Reads the topic's offsets, then opens each partition claimed at its first record, to be restored
   * to its end offset; a partition revoked or taken again meanwhile is left to that revoke or assign.
   */
  private async openAtOffsets(claimed: Array<{ partition: number; epoch: number }>): Promise<void> {
    const offsets = new Map((await this.admin.topicOffsets(this.topic)).map((o) => [o.partition, o]));
    for (const { partition, epoch } of claimed) {
      if (this.owned.get(partition) !== epoch) continue;
      const range = offsets.get(partition);
      if (!range) {
        const missing = new KafkaError(`${this.topic} has no partition ${partition}`, { retriable: false });
        this.abandon(partition, epoch, missing);
        continue;
      }
      const restore = this.restoring.get(partition)!;
      const low = Number(range.low);
      const high = Number(range.high);
      if (high > low) restore.target = high;
      else {
        this.restoring.delete(partition);
        for (const waiter of restore.waiters) waiter.resolve();
        if (this.settings.tail === false) continue;
      }
      this.reader.openPartition(partition, low, (messages) => this.deliver(partition, messages));
    }
  }

  /** A claim that could not start its restore: the partition is not owned, its `assign` rejects with `err`. */
  private abandon(partition: number, epoch: number, err: Error): void {
    if (this.owned.get(partition) !== epoch) return;
    this.owned.delete(partition);
    this.reader.closePartition(partition);
    const restore = this.restoring.get(partition);
    this.restoring.delete(partition);
    for (const waiter of restore?.waiters ?? []) waiter.reject(err);
  }

  /** Stops reading `partitions` and has the sink drop them. */
  revoke(partitions: number[]): void {
    for (const partition of partitions) {
      if (!this.owned.delete(partition)) continue;
      this.reader.closePartition(partition);
      const restore = this.restoring.get(partition);
      this.restoring.delete(partition);
      const revoked = new KafkaError(`${this.topic} partition ${partition} was revoked while restoring`, {
        retriable: false,
      });
      for (const waiter of restore?.waiters ?? []) waiter.reject(revoked);
      this.sink.drop(partition);
    }
  }

  /** True when every one of `partitions` is owned and restored. */
  caughtUp(partitions: number[]): boolean {
    return partitions.every((p) => this.owned.has(p) && !this.restoring.has(p));
  }

  owns(partition: number): boolean {
    return this.owned.has(partition);
  }

  ownedPartitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  async stop(): Promise<void> {
    const stopped = new KafkaError(`reader of ${this.topic} stopped while restoring`, { retriable: false });
    for (const restore of this.restoring.values())
      for (const waiter of restore.waiters) waiter.reject(stopped);
    this.restoring.clear();
    this.owned.clear();
    await this.reader.stop();
  }

  private deliver(partition: number, messages: IncomingMessage[]): void {
    const restore = this.restoring.get(partition);
    if (restore) restore.records += messages.length;
    for (const m of messages) {
      if (m.key === null) continue;
      try {
        this.sink.apply({
          key: m.key,
          value: m.value,
          partition,
          offset: Number(m.offset),
          timestamp: Number(m.timestamp),
        });
      } catch (err) {
        this.logger.warn(
          { topic: this.topic, partition, offset: m.offset, err: (err as Error).message },
          'changelog record ignored',
        );
      }
    }
    const next = this.reader.position(partition);
    if (restore && restore.target !== null && next !== null && next >= restore.target) {
      this.restoring.delete(partition);
      // What a partition's move costs its new owner: the records read again (the scale-events bench).
      this.logger.info(
        { topic: this.topic, partition, records: restore.records, ms: Date.now() - restore.startedAt },
        'state partition restored',
      );
      if (this.settings.tail === false) this.reader.closePartition(partition);
      for (const waiter of restore.waiters) waiter.resolve();
    }
  }

  private restored(partition: number): Promise<void> {
    const restore = this.restoring.get(partition);
    if (!restore) return Promise.resolve();
    return new Promise((resolve, reject) => restore.waiters.push({ resolve, reject }));
  }

  private async withTimeout(work: Promise<unknown>, partitions: number[]): Promise<void> {
    const ms = this.settings.restoreTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new KafkaError(`restoring ${this.topic} partitions ${partitions.join(',')} took over ${ms} ms`, {
              retriable: true,
            }),
          ),
        ms,
      );
    });
    try {
      await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
