/**
 * A consumer-group member shaped for the connector: batches in, explicit commits out.
 *
 * Offsets are never committed automatically: the connector commits an offset only once the
 * outcome of every record before it is durable. `resolveOffset` only moves the fetch position
 * (records after it are fetched next); a rebalance resets the position to the committed offset,
 * so records resolved but not committed are delivered again, to this member or another one.
 */
import kafkajs from 'kafkajs';
import type {
  Consumer,
  ConsumerRunConfig,
  EachBatchPayload,
  IHeaders,
  Kafka,
  PartitionAssigner,
} from 'kafkajs';
import { KafkaError, kafkaError, wrapKafka } from './errors.js';
import { stickyAssigner, type StickyClaim } from './sticky-assignor.js';

const { PartitionAssigners } = kafkajs;

export interface ConsumerSettings {
  groupId: string;
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Upper bound of the bytes fetched per partition and request; bounds a batch's size. */
  maxBytesPerPartition?: number;
  maxWaitTimeMs?: number;
  /** How the consumer is restarted after a crash (see RestartPolicy). */
  restart?: RestartPolicy;
  /**
   * The `host:port` of this member's metrics endpoint, announced in its join's user data so that
   * `docstream status` finds it in the group's description.
   */
  advertised?: string;
  /** The assignment this member ranks first (default sticky; `kafka.assignor`). */
  assignor?: 'sticky' | 'round-robin';
}

/**
 * After any crash (kafkajs stops the consumer and, for errors it deems non-retriable, never starts
 * it again) the run is restarted here, after an exponential back-off with jitter. Crashes that
 * follow each other without a stable run in between are counted; past `maxRestarts` the consumer
 * gives up and the `onFatal` listeners are told, so the process can exit non-zero for its supervisor.
 */
export interface RestartPolicy {
  /** Delay before the first restart (default 500 ms); doubled for each crash in a row. */
  initialDelayMs?: number;
  /** Upper bound of the delay (default 30 s). */
  maxDelayMs?: number;
  /** Crashes in a row before giving up (default 10, about 2.5 minutes of back-off). */
  maxRestarts?: number;
  /** A run this long after a group join without a crash resets the count (default 60 s). */
  stableAfterMs?: number;
}

export const DEFAULT_RESTART_POLICY: Required<RestartPolicy> = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxRestarts: 10,
  stableAfterMs: 60_000,
};

/** The delay before restart number `attempt` (1-based), with up to 50 % jitter subtracted. */
export function restartDelay(
  policy: Required<RestartPolicy>,
  attempt: number,
  random = Math.random(),
): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 - random / 2));
}

interface ConsumerRestart {
  /** The crash that caused it. */
  error: Error;
  /** Crashes in a row, this one included. */
  attempt: number;
  delayMs: number;
  /** Restarts of this consumer since it was created, this one included. */
  restarts: number;
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

interface RunOptions {
  /**
   * Resolve the whole batch when the handler returns (default true). Set false to take only part of
   * a batch (e.g. when full): the records after the last resolved offset are fetched again later.
   */
  autoResolve?: boolean;
  /** Batches of different partitions handled at the same time (default 1). */
  partitionsConsumedConcurrently?: number;
}

type BatchHandler = (batch: IncomingBatch, control: BatchControl) => Promise<void>;

export interface TopicPartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to read, as Kafka stores it: last processed offset + 1. */
  offset: string;
  /** Kept by Kafka beside the offset, readable by anyone who reads the group's offsets. */
  metadata?: string | null;
}

/** Partitions by topic. */
export type Assignment = Record<string, number[]>;

export interface GroupJoin {
  memberId: string;
  isLeader: boolean;
  assignment: Assignment;
  /**
   * Partitions gained and lost relative to what the listener told last held: the previous join of
   * this member, or an older one when the listener threw at the last (it is told that change again).
   */
  added: Assignment;
  removed: Assignment;
}

interface ConsumerCrash {
  error: Error;
  /** Whether the consumer will be restarted (false when stopping or after too many crashes). */
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

/** The protocols a member offers, the one it prefers first (`kafka.assignor`); both always offered. */
export function assignersFor(
  preferred: 'sticky' | 'round-robin',
  sticky: PartitionAssigner,
): PartitionAssigner[] {
  return preferred === 'round-robin'
    ? [PartitionAssigners.roundRobin, sticky]
    : [sticky, PartitionAssigners.roundRobin];
}

export class KafkaConsumer {
  readonly groupId: string;
  private readonly consumer: Consumer;
  private assignment: Assignment = {};
  /** When the current assignment reached this member (its claim's time, `sticky-assignor.ts`). */
  private assignedAt = 0;
  private readonly joinListeners = new Set<(join: GroupJoin) => void>();
  /** What each join listener last took without throwing (its changes are counted from it). */
  private readonly listenerAssignments = new Map<(join: GroupJoin) => void, Assignment>();
  private readonly crashListeners = new Set<(crash: ConsumerCrash) => void>();
  private readonly restartListeners = new Set<(restart: ConsumerRestart) => void>();
  private readonly fatalListeners = new Set<(error: Error) => void>();
  private readonly rejoinBarriers = new Set<() => Promise<void>>();
  private readonly policy: Required<RestartPolicy>;
  private runConfig: ConsumerRunConfig | undefined;
  private stopping = false;
  /** Set by `markLeaving`: announced at every join from then on. */
  private leaving = false;
  private isHealthy = true;
  private fatal = false;
  /** The member id of the last join: a join under another one follows a membership that was lost. */
  private memberId: string | undefined;
  private crashesInARow = 0;
  private restartCount = 0;
  private lastJoinAt: number | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** A restart after a crash, while it connects and joins. */
  private restarting: Promise<void> | null = null;

  constructor(kafka: Kafka, settings: ConsumerSettings) {
    this.groupId = settings.groupId;
    this.policy = { ...DEFAULT_RESTART_POLICY, ...settings.restart };
    this.consumer = kafka.consumer({
      groupId: settings.groupId,
      // Every restart is decided here (see RestartPolicy), not by kafkajs, which restarts only
      // after errors it deems retriable and then without a bound.
      retry: { retries: 5, restartOnFailure: async () => false },
      // Sticky first: a member keeps what it holds as far as balance allows (`sticky-assignor.ts`).
      // The group runs a protocol every member lists, the most preferred first; docstream before
      // the sticky assignor listed only kafkajs' RoundRobinAssigner, so listing it second lets a new
      // member join a group of older ones during a rolling upgrade (the group then stays on
      // round-robin until the last older member is gone, and switches to sticky at that rebalance).
      // Without it the broker refuses the new member (INCONSISTENT_GROUP_PROTOCOL).
      partitionAssigners: assignersFor(
        settings.assignor ?? 'sticky',
        stickyAssigner(
          () => this.claim(),
          () => settings.advertised ?? null,
          () => this.beforeRejoin(),
          () => this.leaving,
        ),
      ),
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
      // A new member id: the coordinator had forgotten this member (its session ran out, kafkajs
      // joined again as a new member), and the group may have given its partitions to others and
      // back in between. What it held is lost, as after a crash: the listeners are told so first,
      // and every partition of this join is new (restored again, its writer initialised again).
      const memberId = event.payload.memberId;
      if (this.memberId !== undefined && memberId !== this.memberId) this.leftGroup();
      this.memberId = memberId;
      const assignment = normaliseAssignment(event.payload.memberAssignment);
      const join: GroupJoin = {
        memberId: event.payload.memberId,
        isLeader: event.payload.isLeader,
        assignment,
        added: assignmentDifference(assignment, this.assignment),
        removed: assignmentDifference(this.assignment, assignment),
      };
      this.assignment = assignment;
      this.lastJoinAt = Date.now();
      // Strictly increasing, so this member's next claim is newer than its last even within 1 ms.
      this.assignedAt = Math.max(this.lastJoinAt, this.assignedAt + 1);
      if (!this.fatal) this.isHealthy = true;
      this.tellListeners(join, 'a group listener failed after a join');
    });
    this.consumer.on(this.consumer.events.CRASH, (event) => {
      this.crashed(kafkaError(event.payload.error, `consumer of group ${this.groupId} crashed`));
    });
  }

  /**
   * This member is stopping: from its next join on it says so, and the group's leader gives it no
   * partition while another member can take them (`assignSticky`). It stays a member until `stop`.
   */
  markLeaving(): void {
    this.leaving = true;
  }

  /** Runs the barriers before this member (re)joins its group, one after the other. */
  private async beforeRejoin(): Promise<void> {
    for (const barrier of this.rejoinBarriers) await barrier();
  }

  /** What this member holds, announced when it (re)joins so that the leader can leave it here. */
  private claim(): StickyClaim | null {
    if (Object.keys(this.assignment).length === 0) return null;
    return { assignedAt: this.assignedAt, assignment: this.assignment };
  }

  private crashed(error: Error): void {
    this.isHealthy = false;
    const now = Date.now();
    if (this.lastJoinAt !== undefined && now - this.lastJoinAt >= this.policy.stableAfterMs) {
      this.crashesInARow = 0;
    }
    // A join before this crash belongs to the run that crashed; the next restart must join again.
    this.lastJoinAt = undefined;
    this.crashesInARow += 1;
    const restart = !this.stopping && !this.fatal && this.crashesInARow <= this.policy.maxRestarts;
    for (const listener of this.crashListeners) listener({ error, restart });
    this.leftGroup();
    if (this.stopping || this.fatal) return;
    if (!restart) {
      this.fatal = true;
      const fatal = new KafkaError(
        `consumer of group ${this.groupId} crashed ${this.crashesInARow} times in a row; giving up: ${error.message}`,
        { retriable: false, cause: error },
      );
      for (const listener of this.fatalListeners) listener(fatal);
      return;
    }
    const delayMs = restartDelay(this.policy, this.crashesInARow);
    this.restartCount += 1;
    const event = { error, attempt: this.crashesInARow, delayMs, restarts: this.restartCount };
    for (const listener of this.restartListeners) listener(event);
    clearTimeout(this.restartTimer);
    // restartRun reports its own failure as a crash; it does not reject.
    this.restartTimer = setTimeout(() => {
      this.restartRun().catch(() => undefined);
    }, delayMs);
  }

  /**
   * kafkajs leaves the group when it crashes: the partitions may go to other members before the
   * restart joins again, so the listeners are told they are gone (an empty assignment) and the
   * next join reports all it gets as added.
   */
  private leftGroup(): void {
    const removed = this.assignment;
    const held = [...this.listenerAssignments.values()].some((a) => Object.keys(a).length > 0);
    if (Object.keys(removed).length === 0 && !held) return;
    this.assignment = {};
    const left: GroupJoin = { memberId: '', isLeader: false, assignment: {}, added: {}, removed };
    this.tellListeners(left, 'a group listener failed after a crash');
  }

  /**
   * Tells every listener of a join or a leave, each in isolation: called from kafkajs' join (a throw
   * would fail the join, and the retried join would report nothing changed) or crash event (a throw
   * would take the process down), and one listener's failure must not skip the others. Each
   * listener is told the change from what it last took without throwing, so one that failed is told
   * the same change again, with anything newer, at the next join or leave instead of being left
   * half-moved for good.
   */
  private tellListeners(change: GroupJoin, failure: string): void {
    for (const listener of this.joinListeners) {
      const held = this.listenerAssignments.get(listener) ?? {};
      const own: GroupJoin = {
        ...change,
        added: assignmentDifference(change.assignment, held),
        removed: assignmentDifference(held, change.assignment),
      };
      try {
        listener(own);
        this.listenerAssignments.set(listener, change.assignment);
      } catch (err) {
        this.consumer.logger().error(failure, {
          groupId: this.groupId,
          memberId: change.memberId,
          error: (err as Error).message,
          stack: (err as Error).stack,
        });
      }
    }
  }

  private restartRun(): Promise<void> {
    this.restartTimer = undefined;
    const config = this.runConfig;
    if (this.stopping || config === undefined) return Promise.resolve();
    this.restarting = (async () => {
      try {
        // A failure to start is reported by kafkajs as another crash, which schedules the next try.
        await this.consumer.run(config);
      } catch (error) {
        this.crashed(kafkaError(error, `restarting consumer of group ${this.groupId}`));
      }
    })().finally(() => (this.restarting = null));
    return this.restarting;
  }

  /**
   * A stop or disconnect asked while a restart is connecting waits for that restart first: kafkajs
   * would otherwise finish connecting after the disconnect and keep the connections open.
   */
  private async afterRestart(): Promise<void> {
    if (this.restarting) await this.restarting;
  }

  /** False from a crash until the restarted consumer joined its group again; false for good after giving up. */
  healthy(): boolean {
    return this.isHealthy;
  }

  /** Restarts of this consumer since it was created (for a metric). */
  get restarts(): number {
    return this.restartCount;
  }

  /** Called when a restart is scheduled after a crash. */
  onRestart(listener: (restart: ConsumerRestart) => void): Unsubscribe {
    this.restartListeners.add(listener);
    return () => this.restartListeners.delete(listener);
  }

  /** Called once when the consumer gave up restarting: the process should exit non-zero. */
  onFatal(listener: (error: Error) => void): Unsubscribe {
    this.fatalListeners.add(listener);
    return () => this.fatalListeners.delete(listener);
  }

  connect(): Promise<void> {
    return wrapKafka(`connecting consumer of group ${this.groupId}`, () => this.consumer.connect());
  }

  private halt(): void {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
  }

  /** Leaves the group (its partitions move to other members at once) and closes connections. */
  async disconnect(): Promise<void> {
    this.halt();
    await this.afterRestart();
    return wrapKafka(`disconnecting consumer of group ${this.groupId}`, () => this.consumer.disconnect());
  }

  /** Stops fetching and waits for running handlers, staying connected (e.g. before a final commit). */
  async stop(): Promise<void> {
    this.halt();
    await this.afterRestart();
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
    this.stopping = false;
    this.runConfig = {
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
    };
    const config = this.runConfig;
    return wrapKafka(`running consumer of group ${this.groupId}`, () => this.consumer.run(config));
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
        offsets.map(({ topic, partition, offset, metadata }) => ({
          topic,
          partition,
          offset,
          metadata: metadata ?? null,
        })),
      ),
    );
  }

  /** The partitions this member was given at its last join. */
  currentAssignment(): Assignment {
    return structuredClone(this.assignment);
  }

  /**
   * Called after every join with the new assignment and what changed; also after a crash, with an
   * empty assignment and every partition removed (the crashed member left the group).
   */
  onGroupJoin(listener: (join: GroupJoin) => void): Unsubscribe {
    this.joinListeners.add(listener);
    // A listener added now holds nothing yet: the next join reports all it gets as added.
    this.listenerAssignments.set(listener, {});
    return () => {
      this.joinListeners.delete(listener);
      this.listenerAssignments.delete(listener);
    };
  }

  /**
   * Awaited before this member (re)joins its group, which releases every partition it holds (the
   * eager protocol): the place to record what was done for them, as a revocation callback would.
   * The barrier bounds its own wait (the group waits at most the rebalance timeout for a member).
   * Without `installRejoinBarrier` (another kafkajs version) it is never called.
   */
  onBeforeRejoin(barrier: () => Promise<void>): Unsubscribe {
    this.rejoinBarriers.add(barrier);
    return () => this.rejoinBarriers.delete(barrier);
  }

  /** Called after each heartbeat the group coordinator answered (this member is still in its group). */
  onHeartbeat(listener: () => void): Unsubscribe {
    return this.consumer.on(this.consumer.events.HEARTBEAT, () => listener());
  }

  /** Called when the group starts rebalancing: the partitions may be taken away at the next join. */
  onRebalancing(listener: () => void): Unsubscribe {
    return this.consumer.on(this.consumer.events.REBALANCING, () => listener());
  }

  /**
   * Called after each fetched batch, also one that held only transaction markers or aborted records
   * (which never reach the batch handler): `delivered` counts the records the handler was given, and
   * `lastOffset` is the batch's last offset, markers included, so a reader can step past them.
   */
  onBatchEnd(
    listener: (end: {
      topic: string;
      partition: number;
      firstOffset: string | null;
      lastOffset: string;
      delivered: number;
    }) => void,
  ): Unsubscribe {
    return this.consumer.on(this.consumer.events.END_BATCH_PROCESS, (event) => {
      const p = event.payload;
      listener({
        topic: p.topic,
        partition: p.partition,
        firstOffset: p.firstOffset ?? null,
        lastOffset: p.lastOffset,
        delivered: p.batchSize,
      });
    });
  }

  /** Called when the consumer fails; `restart` tells whether it will be restarted (see RestartPolicy). */
  onCrash(listener: (crash: ConsumerCrash) => void): Unsubscribe {
    this.crashListeners.add(listener);
    return () => this.crashListeners.delete(listener);
  }
}

function normaliseAssignment(raw: Record<string, number[]>): Assignment {
  const out: Assignment = {};
  for (const [topic, partitions] of Object.entries(raw)) {
    if (partitions.length > 0) out[topic] = [...partitions].sort((a, b) => a - b);
  }
  return out;
}
