/**
 * A materialised view of a compacted topic: every instance tails the whole topic from the beginning
 * into memory, with a consumer group of its own that never commits. `caughtUp()` waits until the view
 * has read everything that was in the topic when it was called, which is how a new owner of a
 * partition knows it sees every record written by the previous owner before it acts.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../observability/logger.js';
import type { KafkaAdmin } from './admin.js';
import type { KafkaClient } from './client.js';
import type { KafkaConsumer } from './consumer.js';

export interface ViewRecord {
  key: string;
  value: Buffer | null;
  partition: number;
  offset: string;
}

/** A compacted topic read from the beginning and tailed (a `TopicView`, or a fake in unit tests). */
export interface RecordFeed {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves once every record written so far (to these partitions) has been handed over. */
  caughtUp(partitions?: number[]): Promise<void>;
}

/** Opens a feed that hands each record to `onRecord`. */
export type OpenFeed = (onRecord: (record: ViewRecord) => void) => RecordFeed;

export class TopicView implements RecordFeed {
  private consumer: KafkaConsumer | null = null;
  /** Next offset to read per partition (what the view has consumed). */
  private readonly position = new Map<number, bigint>();
  private waiters: Array<{ targets: Map<number, bigint>; resolve: () => void }> = [];

  constructor(
    private readonly kafka: KafkaClient,
    private readonly admin: KafkaAdmin,
    private readonly topic: string,
    private readonly apply: (record: ViewRecord) => void,
    private readonly logger: Logger,
    private readonly groupPrefix = 'docstream-view',
  ) {}

  async start(): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: `${this.groupPrefix}-${randomUUID()}`,
      // A fetch returns as soon as a record arrives, so this wait adds no latency to the view; it is
      // how often an idle view asks the broker again (100 ms: ten fetches a second on every instance)
      // and the longest a stop waits for the fetch under way.
      maxWaitTimeMs: 1000,
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe([this.topic], { fromBeginning: true });
    await consumer.run(async (batch) => {
      for (const m of batch.messages) {
        if (m.key === null) continue;
        try {
          this.apply({
            key: m.key.toString('utf8'),
            value: m.value,
            partition: m.partition,
            offset: m.offset,
          });
        } catch (err) {
          this.logger.warn(
            { topic: this.topic, offset: m.offset, err: (err as Error).message },
            'view record ignored',
          );
        }
      }
      const last = batch.messages.at(-1);
      if (last) this.position.set(batch.partition, BigInt(last.offset) + 1n);
      this.release();
    });
  }

  /** Resolves once the view has read every record present now (in the given partitions, or all). */
  async caughtUp(partitions?: number[], timeoutMs = 60000): Promise<void> {
    const ends = await this.admin.topicOffsets(this.topic);
    const targets = new Map<number, bigint>();
    for (const { partition, low, high } of ends) {
      if (partitions && !partitions.includes(partition)) continue;
      // An empty partition (nothing written, or everything compacted away) has nothing to wait for.
      if (BigInt(high) > BigInt(low)) targets.set(partition, BigInt(high));
    }
    if (this.reached(targets)) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`view of ${this.topic} did not catch up within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push({ targets, resolve: done });
    });
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = null;
    await consumer?.disconnect();
  }

  private reached(targets: Map<number, bigint>): boolean {
    for (const [partition, high] of targets) {
      if ((this.position.get(partition) ?? 0n) < high) return false;
    }
    return true;
  }

  private release(): void {
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (this.reached(w.targets)) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}
