/**
 * Reads a topic once from given offsets (default: the log start) up to the end each partition has
 * when the read starts, and returns every record, keyless ones and tombstones included: how the
 * operator commands (`docstream dlq`, `inspect`) read the dead-letter, state and output topics
 * without a running connector. Built on `PartitionReader` (a private group, never committed).
 */
import type { Logger } from '../observability/logger.js';
import type { KafkaAdmin } from './admin.js';
import type { KafkaClient } from './client.js';
import type { IncomingMessage } from './consumer.js';
import { KafkaError } from './errors.js';
import { PartitionReader } from './partition-reader.js';
import { READER_GROUP_PREFIXES } from './reader-groups.js';

interface TopicRangeOptions {
  /** Partitions to read (default: all). */
  partitions?: number[];
  /** First offset per partition (default: the log start); below the log start means the log start. */
  from?: Map<number, string>;
  /** Called with each partition's records as they come, in offset order (default: kept and returned). */
  onRecords?: (records: IncomingMessage[]) => void;
  /** Bound on the whole read (default 120 s). */
  timeoutMs?: number;
}

export async function readTopicRange(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  topic: string,
  logger: Logger,
  options: TopicRangeOptions = {},
): Promise<IncomingMessage[]> {
  const bounds = await admin.topicOffsets(topic);
  const wanted = options.partitions ? new Set(options.partitions) : null;
  const ranges = bounds
    .filter((b) => wanted === null || wanted.has(b.partition))
    .map((b) => {
      const from = options.from?.get(b.partition);
      const start = from !== undefined && Number(from) > Number(b.low) ? Number(from) : Number(b.low);
      return { partition: b.partition, start, end: Number(b.high) };
    })
    .filter((r) => r.end > r.start);
  const out: IncomingMessage[] = [];
  if (ranges.length === 0) return out;
  const reader = new PartitionReader(kafka, topic, logger, { groupPrefix: READER_GROUP_PREFIXES.operator });
  const ms = options.timeoutMs ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await reader.start();
    const done = ranges.map(
      (range) =>
        new Promise<void>((resolve) => {
          reader.openPartition(range.partition, range.start, (messages) => {
            const inRange = messages.filter((m) => Number(m.offset) < range.end);
            if (inRange.length > 0) {
              if (options.onRecords) options.onRecords(inRange);
              else out.push(...inRange);
            }
            // Compaction and transaction markers leave holes: the position, not the last record, says
            // whether the end is reached.
            if ((reader.position(range.partition) ?? 0) >= range.end) {
              reader.closePartition(range.partition);
              resolve();
            }
          });
        }),
    );
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new KafkaError(`reading ${topic} took over ${ms} ms`, { retriable: true })),
        ms,
      );
    });
    await Promise.race([Promise.all(done), timeout]);
  } finally {
    clearTimeout(timer);
    await reader.stop();
  }
  return out;
}
