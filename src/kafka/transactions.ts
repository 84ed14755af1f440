/**
 * Exactly-once writes with kafkajs, which has no KIP-447: one transactional producer per input
 * partition, its transactional id `<prefix>-<partition>` (Kafka Streams' first exactly-once mode).
 * The owner of a partition initialises that id before it restores the partition's state: the epoch
 * is bumped, the previous owner's open transaction is aborted, and any later commit of the previous
 * owner (a zombie: paused past its session, cut off) fails as fenced, so nothing it wrote for the
 * partition becomes visible to a `read_committed` reader. Records of a partition gather in a batch
 * and go out as one transaction after `lingerMs` (one in flight per partition; its first record
 * alone, on several brokers one partition per send: `partition-leaders.ts`). A batch is taken only
 * in a timer callback, never in a promise continuation: a caller that stages a record and then, in
 * the same chain of continuations without I/O, stages another (the state record that says the
 * first was published) has both in one transaction. A failed transaction is aborted and its batch
 * sent again in the next one (after a commit without an answer, only if `CommitWitness` finds it
 * not committed); only fencing (a new owner) or closing the partition fails the batch.
 */
import type { Kafka, Message, Producer, RecordMetadata, TopicMessages } from 'kafkajs';
import type { Logger } from '../observability/logger.js';
import { retry } from '../util/retry.js';
import { kafkajsCompression, type CompressionName } from './compression.js';
import { KafkaError, kafkaError, MessageTooLargeError } from './errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES, messageSize } from './message-size.js';
import { onePartitionPerSend, PartitionLeaders } from './partition-leaders.js';
import { JavaCompatiblePartitioner } from './partitioner.js';
import { toKafkaJs, type OutgoingMessage } from './producer.js';

/** The partition has a new owner that initialised its transactional id: this instance may not write it. */
export class FencedError extends KafkaError {
  constructor(
    readonly partition: number,
    cause?: unknown,
  ) {
    super(`partition ${partition}: this producer was fenced (the partition has a new owner)`, {
      retriable: false,
      cause,
    });
    this.name = 'FencedError';
  }
}

/** The partition is not (or no longer) written by this instance: revoked, or never assigned. */
export class NotOwnedError extends KafkaError {
  constructor(readonly partition: number) {
    super(`partition ${partition} is not owned by this instance's transactional writers`, {
      retriable: false,
    });
    this.name = 'NotOwnedError';
  }
}

export interface TransactionalSettings {
  /** Transactional ids are `<idPrefix>-<partition>`. */
  idPrefix: string;
  /** How long records gather before a transaction takes them (default 20 ms). */
  lingerMs?: number;
  /** Largest message per topic (the producer's limits); default 1,000,000 bytes. */
  limitFor?: (topic: string) => number;
  ackTimeoutMs?: number;
  compression?: CompressionName;
  /** Upper bound of a transaction's duration the broker enforces (default 60 s). */
  transactionTimeoutMs?: number;
  /** Records per transaction (default 2000). */
  maxBatch?: number;
  /**
   * Records a partition gathers at most while its transaction is out or retried (default ten
   * transactions' worth): past it, a new record is refused as retriable (backpressure) until a
   * transaction takes some, so that a transaction failing for long does not gather without end.
   */
  maxGathered?: number;
  logger: Logger;
  /** Told of every committed transaction: its records and how long it took. */
  onCommit?: (records: number, ms: number) => void;
  /** Told of every try refused with CONCURRENT_TRANSACTIONS (the previous EndTxn still completing). */
  onConcurrentTransaction?: () => void;
  /** Told of every producer made again after a failure fatal to the previous one. */
  onProducerRenewed?: () => void;
}

/** A record a transaction wrote: visible to a read_committed reader only if the transaction committed. */
export interface WrittenRecord {
  topic: string;
  partition: number;
  offset: string;
}

/**
 * Tells whether a transaction committed, by one of its records (`committed`: true when a
 * read_committed reader sees it). Asked only after the transactional id was initialised again,
 * which completes the transaction the broker was ending. `stop` releases what it holds.
 */
export interface CommitWitness {
  committed(record: WrittenRecord): Promise<boolean>;
  stop(): Promise<void>;
}

interface Staged {
  topic: string;
  message: OutgoingMessage;
  size: number;
  slot?: string;
  settle: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
}

/** The `type` of the error and of every error it wraps (cause, originalError, an aggregate's errors). */
function errorTypes(err: unknown): string[] {
  const types: string[] = [];
  const queue: unknown[] = [err];
  for (let i = 0; i < queue.length && i < 32; i++) {
    const e = queue[i] as {
      type?: unknown;
      cause?: unknown;
      originalError?: unknown;
      errors?: unknown;
    } | null;
    if (!e || typeof e !== 'object') continue;
    if (typeof e.type === 'string') types.push(e.type);
    if ((queue[i] as unknown) instanceof FencedError) types.push('PRODUCER_FENCED');
    queue.push(e.cause, e.originalError, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return types;
}

/**
 * True when the error (or one it wraps) says a newer producer of the same transactional id exists.
 * kafkajs speaks protocol versions older than PRODUCER_FENCED (code 90): the broker tells it of a
 * new owner's fence as INVALID_PRODUCER_EPOCH. The same answer follows a coordinator's epoch bump
 * (a transaction aborted at its timeout), which no answer kafkajs can get tells apart from a fence;
 * so INVALID_PRODUCER_EPOCH stays a fence: re-initialising the id on it could fence a real new owner
 * after it restored the partition's state, and both would then write the partition's results.
 */
export function isFencing(err: unknown): boolean {
  return errorTypes(err).some((t) => t === 'PRODUCER_FENCED' || t === 'INVALID_PRODUCER_EPOCH');
}

/**
 * True when the failure ends this producer's usefulness but is no fence: after a partition leader
 * change the broker may refuse the producer's sequence (OUT_OF_ORDER_SEQUENCE_NUMBER) or not know
 * its id (UNKNOWN_PRODUCER_ID), and every later send on that producer fails the same way; the
 * coordinator may refuse a transaction in a state it does not expect (INVALID_TXN_STATE), and
 * kafkajs refuses calls its own state machine does not allow ("Transaction state exception").
 * Only a new producer (the id initialised again, a new epoch) can send the records.
 */
export function isFatalToProducer(err: unknown): boolean {
  if (isFencing(err)) return false;
  if (
    errorTypes(err).some(
      (t) => t === 'OUT_OF_ORDER_SEQUENCE_NUMBER' || t === 'UNKNOWN_PRODUCER_ID' || t === 'INVALID_TXN_STATE',
    )
  )
    return true;
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 8; i++) {
    if (
      typeof e.message === 'string' &&
      /Transaction state exception|Cannot continue to use transaction once ended/.test(e.message)
    )
      return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** The coordinator is still ending the previous transaction (CONCURRENT_TRANSACTIONS): try again soon. */
export function isConcurrentTransaction(err: unknown): boolean {
  return errorTypes(err).includes('CONCURRENT_TRANSACTIONS');
}

/** One input partition's transactional producer and the batch gathering for its next transaction. */
class PartitionWriter {
  private producer: Producer | null = null;
  private batch: Staged[] = [];
  private readonly slots = new Map<string, Staged>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private closed = false;
  /** `close` is draining the batch: no timer takes one any more. */
  private closing = false;
  private fenced: FencedError | null = null;
  /**
   * Make a new producer before the next transaction: the abort of a failed one failed (its state is
   * unknown), or the failure was fatal to the producer (`isFatalToProducer`).
   */
  private broken = false;
  /** Set while `open` initialises the id: `close` waits for it before it disconnects the producer. */
  private opening: Promise<void> | null = null;
  /** A record of the batch whose commit failed without an answer: committed or not is asked first. */
  private unsure: WrittenRecord | null = null;
  /** The cluster as kafkajs's metadata shows it to this writer's producers (`partition-leaders.ts`). */
  private readonly leaders = new PartitionLeaders();

  constructor(
    private readonly kafka: Kafka,
    readonly partition: number,
    private readonly s: TransactionalSettings,
    private readonly witness?: CommitWitness,
  ) {}

  /** Closed (or closing after a revoke): it takes no record and its producer is, or will be, disconnected. */
  get isClosed(): boolean {
    return this.closed;
  }

  get transactionalId(): string {
    return `${this.s.idPrefix}-${this.partition}`;
  }

  /**
   * Connects and initialises the transactional id: fences the previous owner, aborts its transaction.
   * Rejects with NotOwnedError when the writer was closed meanwhile (`close` disconnects the producer
   * once this settled).
   */
  open(): Promise<void> {
    const opening = this.initialise();
    this.opening = opening;
    return opening.finally(() => {
      if (this.opening === opening) this.opening = null;
    });
  }

  private async initialise(): Promise<void> {
    const producer = this.kafka.producer({
      transactionalId: this.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: this.s.transactionTimeoutMs ?? 60_000,
      createPartitioner: () => {
        const pick = JavaCompatiblePartitioner();
        return (args) => {
          this.leaders.learn(args.topic, args.partitionMetadata);
          return pick(args);
        };
      },
    });
    this.producer = producer;
    try {
      await producer.connect();
      // kafkajs initialises the transactional id with the first transaction; one with nothing in it
      // sends no EndTxn.
      const txn = await producer.transaction();
      await txn.abort();
    } catch (err) {
      this.producer = null;
      await producer.disconnect().catch(() => undefined);
      throw kafkaError(err, `initialising transactional id ${this.transactionalId}`);
    }
    if (this.closed) throw new NotOwnedError(this.partition);
  }

  /**
   * Queues a record for the next transaction (throws at once when it cannot be: fenced, closed, too
   * large); the promise resolves once that transaction committed.
   */
  stage(topic: string, message: OutgoingMessage, replace: boolean): Promise<void> {
    if (this.fenced) throw this.fenced;
    if (this.closed) throw new NotOwnedError(this.partition);
    const size = messageSize(message);
    const limit = this.s.limitFor?.(topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (size > limit) throw new MessageTooLargeError({ topic, size, limit, fromBroker: false });
    return new Promise((resolve, reject) => {
      const slot = message.key === null ? undefined : slotOf(topic, message);
      if (!replace && slot !== undefined) this.slots.delete(slot);
      const queued = replace && slot !== undefined ? this.slots.get(slot) : undefined;
      if (queued) {
        queued.message = message;
        queued.size = size;
        queued.settle.push({ resolve, reject });
        return;
      }
      const gathered = this.s.maxGathered ?? 10 * (this.s.maxBatch ?? 2000);
      if (this.batch.length >= gathered) {
        reject(
          new KafkaError(
            `partition ${this.partition}: ${this.batch.length} records wait for its transaction (backpressure); try again`,
            { retriable: true },
          ),
        );
        return;
      }
      const item: Staged = { topic, message, size, settle: [{ resolve, reject }] };
      if (replace && slot !== undefined) {
        item.slot = slot;
        this.slots.set(slot, item);
      }
      this.batch.push(item);
      this.schedule(this.s.lingerMs ?? 20);
    });
  }

  private schedule(delay: number): void {
    if (this.closing || this.timer || this.flushing || this.batch.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flushing = this.flush().finally(() => {
        this.flushing = null;
        // A new macrotask: never take a batch in the continuation of a commit.
        if (!this.closed || this.batch.length > 0) this.schedule(0);
      });
    }, delay);
  }

  private take(): Staged[] {
    const max = this.s.maxBatch ?? 2000;
    let bytes = 0;
    let count = 0;
    for (const item of this.batch) {
      const budget = this.s.limitFor?.(item.topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
      if (count >= max || (count > 0 && bytes + item.size > budget)) break;
      bytes += item.size;
      count += 1;
    }
    const taken = this.batch.splice(0, count);
    for (const item of taken) if (item.slot !== undefined) this.slots.delete(item.slot);
    return taken;
  }

  private async flush(): Promise<void> {
    const items = this.take();
    if (items.length === 0) return;
    // Revoked during the back-off: the new owner resumes from the committed state; send nothing.
    const given = () => this.fenced ?? (this.closed ? new NotOwnedError(this.partition) : null);
    try {
      await retry(
        async () => {
          const end = given();
          if (end) throw end;
          const started = Date.now();
          await this.transact(items);
          this.s.onCommit?.(items.length, Date.now() - started);
        },
        {
          backoff: { initialMs: 100, maxMs: 5000 },
          classify: (err) => {
            if (isFencing(err)) this.fence(err);
            if (given()) return { retry: false };
            // The previous transaction's EndTxn is still completing: a short wait, not the back-off.
            if (isConcurrentTransaction(err)) return { retry: true, counts: false, notBeforeMs: 20 };
            return { retry: true };
          },
          onRetry: (err, tries) => {
            const details = {
              partition: this.partition,
              attempt: tries - 1,
              records: items.length,
              err: (err as Error).message,
            };
            if (isConcurrentTransaction(err)) {
              this.s.onConcurrentTransaction?.();
              this.s.logger.debug(details, 'transaction refused while the previous one ends; trying again');
            } else if (isFatalToProducer(err)) {
              this.s.logger.warn(details, 'producer unusable; a new one will send the records again');
            } else {
              this.s.logger.warn(details, 'transaction failed; aborted, sending its records again');
            }
          },
        },
      );
    } catch (err) {
      return rejectAll(items, given() ?? err);
    }
    for (const item of items) for (const x of item.settle) x.resolve();
  }

  private async transact(items: Staged[]): Promise<void> {
    if (this.broken || !this.producer) {
      await this.producer?.disconnect().catch(() => undefined);
      this.producer = null;
      // Initialising the id fences whoever else holds it: only while this member still owns the
      // partition (a revoke closes the writer first; `flush` checks before each try).
      if (this.closed || this.fenced) throw this.fenced ?? new NotOwnedError(this.partition);
      await this.open();
      this.broken = false;
      this.s.onProducerRenewed?.();
    }
    if (this.unsure && this.witness) {
      // The id is initialised again (or the producer still in use): the broker has ended that
      // transaction, committed or aborted. A failed look-up keeps the question for the next try.
      const record = this.unsure;
      const committed = await this.witness.committed(record);
      this.unsure = null;
      if (committed) {
        this.s.logger.warn(
          { partition: this.partition, records: items.length },
          'a transaction whose commit failed without an answer was committed; its records are not sent again',
        );
        return;
      }
    }
    const producer = this.producer!;
    const txn = await producer.transaction();
    let written: RecordMetadata[] | undefined;
    const send = (part: Staged[]) =>
      txn.sendBatch({
        topicMessages: byTopic(part),
        acks: -1,
        ...(this.s.ackTimeoutMs !== undefined ? { timeout: this.s.ackTimeoutMs } : {}),
        compression: kafkajsCompression(this.s.compression),
      });
    try {
      // The first record alone first: one partition, one leader. kafkajs retries a send to every
      // leader that has not answered yet, also one whose request is still out, which then goes out a
      // second time under the next sequence number and is committed twice. A transaction's first
      // send is the one the coordinator refuses (CONCURRENT_TRANSACTIONS) while the previous
      // transaction still ends; sent to one leader, its retries cannot send anything twice.
      written = await send(items.slice(0, 1));
      const rest = items.slice(1);
      // On one broker every send has one leader. On several, one partition per send: a leader lost
      // while another's request of the same send is out would have kafkajs send that one twice.
      if (rest.length > 0 && !this.leaders.severalBrokers) await send(rest);
      else if (rest.length > 0) await onePartitionPerSend(this.leaders, rest, send);
      await txn.commit();
    } catch (err) {
      // Sent, then the commit failed: the broker may have committed it all the same.
      if (written && !isFencing(err)) this.unsure = firstWritten(written);
      if (isFatalToProducer(err)) {
        // The coordinator aborts the open transaction when the new producer initialises the id.
        this.broken = true;
        await txn.abort().catch(() => undefined);
      } else if (!isFencing(err)) await txn.abort().catch(() => (this.broken = true));
      throw err;
    }
  }

  private fence(cause: unknown): void {
    this.fenced ??= new FencedError(this.partition, cause);
    this.s.logger.warn({ partition: this.partition }, 'fenced: another instance owns this partition now');
    rejectAll(this.batch.splice(0), this.fenced);
    this.slots.clear();
  }

  /**
   * Stops writing the partition. `commit`: the gathered records go out first (a graceful stop);
   * else they fail (revoked: the new owner resumes from the committed state) and a transaction
   * already out ends as the broker decides (committed, or aborted by the new owner's fencing).
   */
  async close(commit: boolean): Promise<void> {
    // From here close takes the batches itself, one transaction at a time: no timer takes one.
    this.closing = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!commit) {
      this.closed = true;
      rejectAll(this.batch.splice(0), new NotOwnedError(this.partition));
      this.slots.clear();
    }
    // The transaction out now ends first; then (commit) every gathered record, maxBatch at a time.
    while (this.flushing || (commit && this.batch.length > 0 && !this.fenced)) {
      this.flushing ??= this.flush().finally(() => (this.flushing = null));
      await this.flushing;
    }
    this.closed = true;
    // Closed while its id was being initialised: the producer it makes is disconnected here too.
    await this.opening?.catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    this.producer = null;
  }
}

/**
 * The transactional producers of the input partitions this instance owns: `open` on assignment
 * (before the partition's state is restored), `close` on revoke, `stop` at shutdown.
 */
export class TransactionalWriters {
  private readonly writers = new Map<number, PartitionWriter>();
  /**
   * Writers whose id is being initialised, each with its `open`: a revoke (`close`) meanwhile takes
   * the writer out and closes it, so it never becomes a partition's writer.
   */
  private readonly opening = new Map<number, { writer: PartitionWriter; opened: Promise<void> }>();

  constructor(
    private readonly kafka: Kafka,
    private readonly settings: TransactionalSettings,
    /** Asked after a commit failed without an answer; without one, such a batch is sent again. */
    private readonly witness?: CommitWitness,
  ) {}

  /**
   * Creates and initialises the producers of `partitions` not yet open (fencing their previous
   * owners). Rejects with NotOwnedError for a partition revoked (`close`) before its producer was.
   */
  async open(partitions: number[]): Promise<void> {
    await Promise.all(
      partitions
        .filter((p) => !this.writers.has(p))
        .map(async (p) => {
          let entry = this.opening.get(p);
          if (!entry) {
            const writer = new PartitionWriter(this.kafka, p, this.settings, this.witness);
            entry = { writer, opened: writer.open() };
            this.opening.set(p, entry);
          }
          const { writer, opened } = entry;
          try {
            await opened;
          } finally {
            if (this.opening.get(p)?.writer === writer) this.opening.delete(p);
          }
          // Revoked while it opened: the revoke holds (it closed the writer).
          if (writer.isClosed) throw new NotOwnedError(p);
          this.writers.set(p, writer);
        }),
    );
  }

  owns(partition: number): boolean {
    return this.writers.has(partition);
  }

  /** Producers open now (each one its own connections to the brokers). */
  get size(): number {
    return this.writers.size;
  }

  /** Resolves once the transaction holding the record committed. */
  send(
    partition: number,
    topic: string,
    message: OutgoingMessage,
    options: { replace?: boolean } = {},
  ): Promise<void> {
    try {
      return this.stage(partition, topic, message, options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Puts the record in the partition's next transaction now, or throws (not owned, fenced, too
   * large); the promise it returns resolves once that transaction committed.
   */
  stage(
    partition: number,
    topic: string,
    message: OutgoingMessage,
    options: { replace?: boolean } = {},
  ): Promise<void> {
    const writer = this.writers.get(partition);
    if (!writer) throw new NotOwnedError(partition);
    return writer.stage(topic, message, options.replace ?? false);
  }

  /** Revoked: gathered records fail, the producers close (one still being opened too, once it is). */
  async close(partitions: number[]): Promise<void> {
    await Promise.all(
      partitions.map(async (p) => {
        const writer = this.writers.get(p) ?? this.opening.get(p)?.writer;
        this.writers.delete(p);
        this.opening.delete(p);
        await writer?.close(false);
      }),
    );
  }

  /** Shutdown: every gathered record is committed, then the producers close (those opening too). */
  async stop(): Promise<void> {
    const open = [...this.writers.values()];
    const opening = [...this.opening.values()].map((o) => o.writer);
    this.writers.clear();
    this.opening.clear();
    try {
      await Promise.all([...open.map((w) => w.close(true)), ...opening.map((w) => w.close(false))]);
    } finally {
      await this.witness?.stop();
    }
  }
}

/** The first record a produce answered for, when the answer names its offset. */
function firstWritten(written: RecordMetadata[] | undefined): WrittenRecord | null {
  const first = (written ?? []).find((w) => w.baseOffset !== undefined && Number(w.baseOffset) >= 0);
  return first ? { topic: first.topicName, partition: first.partition, offset: first.baseOffset! } : null;
}

function slotOf(topic: string, message: OutgoingMessage): string {
  const key = typeof message.key === 'string' ? message.key : message.key!.toString('latin1');
  return `${message.partition ?? ''}\u0000${topic}\u0000${key}`;
}

function rejectAll(items: Staged[], err: unknown): void {
  for (const item of items) for (const x of item.settle) x.reject(err);
}

function byTopic(items: Staged[]): TopicMessages[] {
  const grouped = new Map<string, Message[]>();
  for (const item of items) {
    const list = grouped.get(item.topic) ?? [];
    list.push(toKafkaJs(item.message));
    grouped.set(item.topic, list);
  }
  return [...grouped].map(([topic, messages]) => ({ topic, messages }));
}
