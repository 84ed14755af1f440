/**
 * Reads chosen partitions of one topic from chosen offsets: the manual `assign` + `seek` that kafkajs
 * 2.2.4 lacks, built from what it has.
 *
 * How: a consumer in a group of its own (a random id, never committed), so this member is the group's
 * only member and is given every partition. Partitions nobody asked for are paused; `open` seeks a
 * partition and resumes it, `close` pauses it again. Why not kafkajs' lower-level fetch: it is not
 * public API (the cluster and broker objects are internals), whereas pause/seek/isStale are, and the
 * group machinery gives reconnects, leader moves and retries for free. Delivery stays exact across
 * seeks and rejoins: see `PartitionReader`.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../observability/logger.js';
import type { KafkaClient } from './client.js';
import type { IncomingMessage, KafkaConsumer } from './consumer.js';

/** The session timeout of a reader's private group (Kafka's group.min.session.timeout.ms is 6 s). */
const PRIVATE_SESSION_TIMEOUT_MS = 10_000;

export interface PartitionReaderSettings {
  /** Prefix of the private group id (a random suffix is added). */
  groupPrefix?: string;
  /** Bytes per partition and fetch; larger batches restore faster. */
  maxBytesPerPartition?: number;
  maxWaitTimeMs?: number;
  sessionTimeoutMs?: number;
}

/**
 * Called with the records of one open partition, in offset order, each record once; with none when
 * the position stepped past transaction markers or aborted records (see `position`).
 */
type PartitionHandler = (messages: IncomingMessage[]) => void;

interface OpenPartition {
  next: number;
  handler: PartitionHandler;
  /** The handler took the current batch (not stale): its end may step past trailing markers. */
  took?: boolean;
}

/**
 * Two guards keep delivery exact even across seeks and rejoins:
 * - a batch fetched before a seek or a rejoin is stale (kafkajs says so) and is dropped;
 * - per open partition the next expected offset is kept, and any record below it is dropped, so a
 *   record is never delivered twice, nor out of order, to a partition's handler. After a rejoin
 *   (e.g. the session expired during a long handler) the member seeks back to those positions
 *   instead of letting the group restart from the beginning.
 */
export class PartitionReader {
  private consumer: KafkaConsumer | null = null;
  private readonly open = new Map<number, OpenPartition>();
  private joined = false;

  constructor(
    private readonly kafka: KafkaClient,
    readonly topic: string,
    private readonly logger: Logger,
    private readonly settings: PartitionReaderSettings = {},
  ) {}

  async start(): Promise<void> {
    if (this.consumer) return;
    const consumer = this.kafka.consumer({
      groupId: `${this.settings.groupPrefix ?? 'docstream-reader'}-${randomUUID()}`,
      maxBytesPerPartition: this.settings.maxBytesPerPartition ?? 4 * 1024 * 1024,
      maxWaitTimeMs: this.settings.maxWaitTimeMs ?? 100,
      // The group's only member: after a crash (the broker away) its restart rejoins as the member
      // the group still holds (`rejoin-barrier.ts`); where that is not possible (another kafkajs
      // version) it joins as a new member, and the group waits for the old one's session to expire
      // first. A short session keeps that wait, the delay of a restore after Kafka comes back, short.
      sessionTimeoutMs: this.settings.sessionTimeoutMs ?? PRIVATE_SESSION_TIMEOUT_MS,
    });
    this.consumer = consumer;
    consumer.onGroupJoin((join) => {
      const all = join.assignment[this.topic] ?? [];
      // A crashed consumer left the group (an empty assignment): nothing can be sought until the
      // restart joins again; open partitions keep their positions for that join.
      this.joined = all.length > 0;
      if (!this.joined) return;
      // Before the first fetch of this generation: nothing not asked for is read, and open
      // partitions go on from where their handler is, not from the group's (absent) commit.
      consumer.pause(
        this.topic,
        all.filter((p) => !this.open.has(p)),
      );
      for (const [partition, state] of this.open) {
        if (all.includes(partition)) consumer.seek(this.topic, partition, String(state.next));
      }
    });
    // A batch of transaction markers or aborted records only (a transactional writer's) reaches no
    // handler: step the position past it, and tell the handler (no records) so it sees the position.
    consumer.onBatchEnd((end) => {
      const state = this.open.get(end.partition);
      if (!state || end.topic !== this.topic || end.firstOffset === null) return;
      if (end.delivered > 0) {
        // Records after the batch's last record were markers or aborted: step past them, unless the
        // batch was stale (its records were not taken).
        const took = state.took;
        state.took = false;
        if (!took || Number(end.lastOffset) < state.next) return;
      } else if (Number(end.firstOffset) !== state.next || Number(end.lastOffset) < state.next) return;
      state.next = Number(end.lastOffset) + 1;
      this.deliver(end.partition, state, []);
    });
    await consumer.connect();
    await consumer.subscribe([this.topic], { fromBeginning: true });
    await consumer.run(async (batch, control) => {
      const state = this.open.get(batch.partition);
      if (!state) {
        consumer.pause(this.topic, [batch.partition]);
        return;
      }
      if (control.isStale()) return;
      state.took = true;
      let from = 0;
      while (from < batch.messages.length && Number(batch.messages[from]!.offset) < state.next) from++;
      if (from === batch.messages.length) return;
      const messages = from === 0 ? batch.messages : batch.messages.slice(from);
      state.next = Number(messages[messages.length - 1]!.offset) + 1;
      this.deliver(batch.partition, state, messages);
    });
  }

  private deliver(partition: number, state: OpenPartition, messages: IncomingMessage[]): void {
    try {
      state.handler(messages);
    } catch (err) {
      // A handler owns its errors; one that throws must not stop the partition for good.
      this.logger.error(
        { topic: this.topic, partition, err: (err as Error).message },
        'partition handler failed',
      );
    }
  }

  /** Starts delivering `partition` from `offset` (a position below the log start means the log start). */
  openPartition(partition: number, offset: number, handler: PartitionHandler): void {
    const consumer = this.requireConsumer();
    this.open.set(partition, { next: offset, handler });
    if (this.joined) {
      consumer.seek(this.topic, partition, String(offset));
      consumer.resume(this.topic, [partition]);
    }
  }

  /** Stops delivering `partition`; a batch already fetched is dropped. */
  closePartition(partition: number): void {
    if (!this.open.delete(partition)) return;
    if (this.joined) this.consumer?.pause(this.topic, [partition]);
  }

  /** The next offset `partition`'s handler will see, or null when it is not open. */
  position(partition: number): number | null {
    return this.open.get(partition)?.next ?? null;
  }

  openPartitions(): number[] {
    return [...this.open.keys()].sort((a, b) => a - b);
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = null;
    this.open.clear();
    this.joined = false;
    await consumer?.disconnect();
  }

  private requireConsumer(): KafkaConsumer {
    if (!this.consumer) throw new Error(`reader of ${this.topic} is not started`);
    return this.consumer;
  }
}
