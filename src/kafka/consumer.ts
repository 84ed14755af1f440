/**
 * A consumer-group member shaped for the connector: batches in, explicit commits out.
 *
 * Offsets are never committed automatically: the connector commits an offset only once the
 * outcome of every record before it is durable. `resolveOffset` only moves the fetch position
 * (records after it are fetched next); a rebalance resets the position to the committed offset,
 * so records resolved but not committed are delivered again, to this member or another one.
 */
import type { Consumer, EachBatchPayload, IHeaders, Kafka } from 'kafkajs';
import { kafkaError, wrapKafka } from './errors.js';

export interface ConsumerSettings {
  groupId: string;
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Upper bound of the bytes fetched per partition and request; bounds a batch's size. */
  maxBytesPerPartition?: number;
  maxWaitTimeMs?: number;
}

export interface IncomingMessage {
  topic: string;
  partition: number;
  offset: string;
  /** Milliseconds since the epoch, as a string. */
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  /** Header values as bytes; a repeated header keeps its last value. */
  headers: Record<string, Buffer>;
}

export interface IncomingBatch {
  topic: string;
  partition: number;
  highWatermark: string;
  messages: IncomingMessage[];
}

export interface BatchControl {
  /** Marks the records through `offset` as taken: the next fetch of the partition starts after it. */
  resolveOffset(offset: string): void;
  /** Keeps the group membership alive during a long handler. */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping: stop taking records. */
  isRunning(): boolean;
  /** True when the partition was sought or revoked meanwhile: the rest of the batch is void. */
  isStale(): boolean;
}

export interface RunOptions {
  /**
   * Resolve the whole batch when the handler returns (default true). Set false to take only part of
   * a batch (e.g. when full): the records after the last resolved offset are fetched again later.
   */
  autoResolve?: boolean;
  /** Batches of different partitions handled at the same time (default 1). */
  partitionsConsumedConcurrently?: number;
}

export type BatchHandler = (batch: IncomingBatch, control: BatchControl) => Promise<void>;

export interface TopicPartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to read, as Kafka stores it: last processed offset + 1. */
  offset: string;
}

/** Partitions by topic. */
export type Assignment = Record<string, number[]>;

export interface GroupJoin {
  memberId: string;
  isLeader: boolean;
  assignment: Assignment;
  /** Partitions gained and lost relative to the previous join of this member. */
  added: Assignment;
  removed: Assignment;
}

export interface ConsumerCrash {
  error: Error;
  /** Whether the client restarts the consumer by itself. */
  restart: boolean;
}

type Unsubscribe = () => void;

export function headerBuffers(headers: IHeaders | undefined): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [name, raw] of Object.entries(headers ?? {})) {
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    if (value === undefined) continue;
    out[name] = Buffer.isBuffer(value) ? value : Buffer.from(value);
  }
  return out;
}

/** `a` minus `b`, per topic; topics left empty are omitted. */
export function assignmentDifference(a: Assignment, b: Assignment): Assignment {
  const out: Assignment = {};
  for (const [topic, partitions] of Object.entries(a)) {
    const other = new Set(b[topic] ?? []);
    const left = partitions.filter((partition) => !other.has(partition)).sort((x, y) => x - y);
    if (left.length > 0) out[topic] = left;
  }
  return out;
}

export class KafkaConsumer {
  readonly groupId: string;
  private readonly consumer: Consumer;
  private assignment: Assignment = {};
  private readonly joinListeners = new Set<(join: GroupJoin) => void>();

  constructor(kafka: Kafka, settings: ConsumerSettings) {
    this.groupId = settings.groupId;
    this.consumer = kafka.consumer({
      groupId: settings.groupId,
      ...(settings.sessionTimeoutMs !== undefined ? { sessionTimeout: settings.sessionTimeoutMs } : {}),
      ...(settings.rebalanceTimeoutMs !== undefined ? { rebalanceTimeout: settings.rebalanceTimeoutMs } : {}),
      ...(settings.heartbeatIntervalMs !== undefined
        ? { heartbeatInterval: settings.heartbeatIntervalMs }
        : {}),
      ...(settings.maxBytesPerPartition !== undefined
        ? { maxBytesPerPartition: settings.maxBytesPerPartition }
        : {}),
      ...(settings.maxWaitTimeMs !== undefined ? { maxWaitTimeInMs: settings.maxWaitTimeMs } : {}),
    });
    // One listener computes the change, so every subscriber sees the same added/removed sets.
    this.consumer.on(this.consumer.events.GROUP_JOIN, (event) => {
      const assignment = normaliseAssignment(event.payload.memberAssignment);
      const join: GroupJoin = {
        memberId: event.payload.memberId,
        isLeader: event.payload.isLeader,
        assignment,
        added: assignmentDifference(assignment, this.assignment),
        removed: assignmentDifference(this.assignment, assignment),
      };
      this.assignment = assignment;
      for (const listener of this.joinListeners) listener(join);
    });
  }

  connect(): Promise<void> {
    return wrapKafka(`connecting consumer of group ${this.groupId}`, () => this.consumer.connect());
  }

  /** Leaves the group (its partitions move to other members at once) and closes connections. */
  disconnect(): Promise<void> {
    return wrapKafka(`disconnecting consumer of group ${this.groupId}`, () => this.consumer.disconnect());
  }

  /** Stops fetching and waits for running handlers, staying connected (e.g. before a final commit). */
  stop(): Promise<void> {
    return wrapKafka(`stopping consumer of group ${this.groupId}`, () => this.consumer.stop());
  }

  /** `fromBeginning` applies only to partitions the group has no committed offset for. */
  subscribe(topics: string[], options: { fromBeginning?: boolean } = {}): Promise<void> {
    return wrapKafka(`subscribing group ${this.groupId} to ${topics.join(', ')}`, () =>
      this.consumer.subscribe({ topics, fromBeginning: options.fromBeginning ?? false }),
    );
  }

  /** Starts fetching; returns once the consumer runs (handlers are called from then on). */
  run(handler: BatchHandler, options: RunOptions = {}): Promise<void> {
    return wrapKafka(`running consumer of group ${this.groupId}`, () =>
      this.consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: options.autoResolve ?? true,
        partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
        eachBatch: async (payload: EachBatchPayload) => {
          const { batch } = payload;
          await handler(
            {
              topic: batch.topic,
              partition: batch.partition,
              highWatermark: batch.highWatermark,
              messages: batch.messages.map((message) => ({
                topic: batch.topic,
                partition: batch.partition,
                offset: message.offset,
                timestamp: message.timestamp,
                key: message.key ?? null,
                value: message.value ?? null,
                headers: headerBuffers(message.headers),
              })),
            },
            {
              resolveOffset: (offset) => payload.resolveOffset(offset),
              heartbeat: () => payload.heartbeat(),
              isRunning: () => payload.isRunning(),
              isStale: () => payload.isStale(),
            },
          );
        },
      }),
    );
  }

  pause(topic: string, partitions: number[]): void {
    if (partitions.length > 0) this.consumer.pause([{ topic, partitions }]);
  }

  resume(topic: string, partitions: number[]): void {
    if (partitions.length > 0) this.consumer.resume([{ topic, partitions }]);
  }

  paused(): Assignment {
    const out: Assignment = {};
    for (const { topic, partitions } of this.consumer.paused()) {
      out[topic] = [...(out[topic] ?? []), ...partitions].sort((a, b) => a - b);
    }
    return out;
  }

  /** Moves the fetch position of an assigned partition (e.g. to re-read after a failure). */
  seek(topic: string, partition: number, offset: string): void {
    this.consumer.seek({ topic, partition, offset });
  }

  /** Commits the next offsets to read. Fails if this member no longer owns a partition. */
  commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return Promise.resolve();
    return wrapKafka(`committing offsets of group ${this.groupId}`, () =>
      this.consumer.commitOffsets(
        offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })),
      ),
    );
  }

  /** The partitions this member was given at its last join. */
  currentAssignment(): Assignment {
    return structuredClone(this.assignment);
  }

  /** Called after every join with the new assignment and what changed. */
  onGroupJoin(listener: (join: GroupJoin) => void): Unsubscribe {
    this.joinListeners.add(listener);
    return () => this.joinListeners.delete(listener);
  }

  /** Called when the group starts rebalancing: the partitions may be taken away at the next join. */
  onRebalancing(listener: () => void): Unsubscribe {
    return this.consumer.on(this.consumer.events.REBALANCING, () => listener());
  }

  /** Called when the consumer fails; `restart` tells whether the client rejoins by itself. */
  onCrash(listener: (crash: ConsumerCrash) => void): Unsubscribe {
    return this.consumer.on(this.consumer.events.CRASH, (event) => {
      const { error, restart } = event.payload;
      listener({ error: kafkaError(error, `consumer of group ${this.groupId} crashed`), restart });
    });
  }
}

function normaliseAssignment(raw: Record<string, number[]>): Assignment {
  const out: Assignment = {};
  for (const [topic, partitions] of Object.entries(raw)) {
    if (partitions.length > 0) out[topic] = [...partitions].sort((a, b) => a - b);
  }
  return out;
}
