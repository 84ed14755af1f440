/**
 * Fetches single records of a topic by (partition, offset): how a document resumed after a crash or a
 * rebalance gets its own input record back, since the state topic keeps no copy of it.
 *
 * One long-lived private reader serves every read: a partition is opened at the lowest offset wanted,
 * each batch answers every wanted offset it covers, and the partition is closed again when nothing
 * more is wanted. A record that is gone (deleted by retention or compaction) or that does not exist
 * yet reads as null; the log's bounds are checked first, so such reads do not wait.
 */
import type { Logger } from '../observability/logger.js';
import type { KafkaAdmin } from './admin.js';
import type { KafkaClient } from './client.js';
import type { IncomingMessage } from './consumer.js';
import { KafkaError } from './errors.js';
import { PartitionReader } from './partition-reader.js';
import { READER_GROUP_PREFIXES } from './reader-groups.js';

interface Wanted {
  offset: number;
  resolve: (record: IncomingMessage | null) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

interface RecordReaderSettings {
  /** How long one read may wait for its record (default 30 s). */
  readTimeoutMs?: number;
}

export class RecordReader {
  private readonly reader: PartitionReader;
  private readonly wanted = new Map<number, Wanted[]>();

  constructor(
    kafka: KafkaClient,
    private readonly admin: KafkaAdmin,
    readonly topic: string,
    logger: Logger,
    private readonly settings: RecordReaderSettings = {},
  ) {
    this.reader = new PartitionReader(kafka, topic, logger, {
      groupPrefix: READER_GROUP_PREFIXES.recordReader,
    });
  }

  start(): Promise<void> {
    return this.reader.start();
  }

  /** The record at `offset` of `partition`, or null when the log no longer (or does not yet) hold it. */
  async read(partition: number, offset: number | string): Promise<IncomingMessage | null> {
    const [record] = await this.readMany([{ partition, offset }]);
    return record ?? null;
  }

  /** Several records at once (answers in the order asked); one bounds check for all of them. */
  async readMany(
    pointers: Array<{ partition: number; offset: number | string }>,
  ): Promise<Array<IncomingMessage | null>> {
    if (pointers.length === 0) return [];
    const bounds = new Map((await this.admin.topicOffsets(this.topic)).map((o) => [o.partition, o]));
    return Promise.all(
      pointers.map(({ partition, offset }) => {
        const at = Number(offset);
        const range = bounds.get(partition);
        if (!Number.isSafeInteger(at) || at < 0) {
          return Promise.reject(
            new KafkaError(`bad offset ${String(offset)} for ${this.topic}`, { retriable: false }),
          );
        }
        if (!range || at < Number(range.low) || at >= Number(range.high)) return Promise.resolve(null);
        return this.enqueue(partition, at);
      }),
    );
  }

  async stop(): Promise<void> {
    const stopped = new KafkaError(`record reader of ${this.topic} stopped`, { retriable: false });
    for (const list of this.wanted.values()) {
      for (const w of list) {
        clearTimeout(w.timer);
        w.reject(stopped);
      }
    }
    this.wanted.clear();
    await this.reader.stop();
  }

  private enqueue(partition: number, offset: number): Promise<IncomingMessage | null> {
    return new Promise((resolve, reject) => {
      const ms = this.settings.readTimeoutMs ?? 30_000;
      const entry: Wanted = {
        offset,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.forget(partition, entry);
          reject(
            new KafkaError(`reading ${this.topic}[${partition}]@${offset} took over ${ms} ms`, {
              retriable: true,
            }),
          );
        }, ms),
      };
      const list = this.wanted.get(partition) ?? [];
      list.push(entry);
      this.wanted.set(partition, list);
      const position = this.reader.position(partition);
      // Open at the lowest wanted offset; re-open (seek back) when a read asks for one already passed.
      if (position === null || offset < position) {
        const lowest = Math.min(...list.map((w) => w.offset));
        this.reader.openPartition(partition, lowest, (messages) => this.answer(partition, messages));
      }
    });
  }

  private answer(partition: number, messages: IncomingMessage[]): void {
    const list = this.wanted.get(partition);
    if (!list) return;
    // No record: the position stepped past transaction markers or aborted records; an offset it
    // passed holds nothing a read_committed reader sees.
    const passed = (this.reader.position(partition) ?? 0) - 1;
    const first = messages.length > 0 ? Number(messages[0]!.offset) : Infinity;
    const last = messages.length > 0 ? Number(messages[messages.length - 1]!.offset) : passed;
    const byOffset = new Map<number, IncomingMessage>();
    for (const m of messages) byOffset.set(Number(m.offset), m);
    const still: Wanted[] = [];
    for (const w of list) {
      if (w.offset > last) {
        still.push(w);
        continue;
      }
      clearTimeout(w.timer);
      // Below the batch's first offset, or a hole within it: compacted away.
      w.resolve(w.offset >= first ? (byOffset.get(w.offset) ?? null) : null);
    }
    if (still.length > 0) this.wanted.set(partition, still);
    else {
      this.wanted.delete(partition);
      this.reader.closePartition(partition);
    }
  }

  private forget(partition: number, entry: Wanted): void {
    const list = this.wanted.get(partition)?.filter((w) => w !== entry) ?? [];
    if (list.length > 0) this.wanted.set(partition, list);
    else {
      this.wanted.delete(partition);
      this.reader.closePartition(partition);
    }
  }
}
