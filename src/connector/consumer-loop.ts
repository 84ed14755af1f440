/**
 * The consumer loop: takes arrival and feedback records batch by batch, admits at most `maxInFlight`
 * documents (pausing the input topic when full, resuming with hysteresis), prepares each assigned
 * partition (its state read, its unfinished documents resumed) before taking its records, and
 * commits the highest offset below which every outcome is durable. It alone owns the in-flight
 * limit. A partition's state is restored (`state/store.ts`) before any of its records is taken, and
 * dropped when the partition leaves. It reaches Kafka, the engine and the state only through the narrow interfaces below, so it
 * is unit-tested with fakes (`consumer-loop.test.ts`).
 */
import type {
  Assignment,
  BatchControl,
  GroupJoin,
  IncomingBatch,
  IncomingMessage,
  TopicPartitionOffset,
} from '../kafka/consumer.js';
import type { Logger } from '../observability/logger.js';
import { backoffDelay } from '../util/backoff.js';
import { unfinishedMetadata } from './group-share.js';
import { OffsetTracker } from './offsets.js';
import type { UnfinishedState } from './state/document-state.js';

/** The parts of the Kafka consumer the loop drives. */
export interface LoopConsumer {
  pause(topic: string, partitions: number[]): void;
  resume(topic: string, partitions: number[]): void;
  currentAssignment(): Assignment;
  commitOffsets(offsets: TopicPartitionOffset[]): Promise<void>;
}

/** The engine as the loop sees it: how many documents run, and who runs which partition. */
export interface LoopEngine {
  readonly inFlight: number;
  /** Documents of this input partition still running here. */
  unfinishedOn(partition: number): number;
  resume(states: UnfinishedState[]): Promise<void>;
  /** Stops the documents of `partitions`; returns how many were running (when it counts them). */
  revoke(partitions: Iterable<number>): number | void;
}

/**
 * The state as the loop sees it: restore a partition (resolves once caught up), list its unfinished
 * documents, forget it when it leaves.
 */
export interface LoopState {
  assign(partitions: number[]): Promise<void>;
  revoke(partitions: number[]): void;
  unfinished(partition: number): UnfinishedState[];
}

/**
 * Handles one record. Resolves once its outcome is durable (recorded or dead-lettered); rejects only
 * when Kafka could not record it, so the record is fetched again.
 */
export type RecordHandler = (message: IncomingMessage) => Promise<void>;

export interface ConsumerLoopOptions {
  topics: { arrived: string; feedback: string };
  maxInFlight: number;
  engine: LoopEngine;
  state: LoopState;
  arrivals: RecordHandler;
  feedback: RecordHandler;
  logger: Logger;
  /** Called whenever the number of documents in flight may have changed. */
  onInFlight?: (inFlight: number) => void;
  /**
   * The group's members spend one API rate limit: told the input partitions this member holds on
   * every join (docs/performance.md, "A group shares one API limit").
   */
  groupShare?: { onJoin(owned: readonly number[]): void };
  /** The group's committed offsets of the input partitions (null: none), read when this member gets some. */
  committedOffsets?: () => Promise<ReadonlyMap<number, string | null>>;
  heartbeatMs?: number;
  /**
   * How long a batch handler may wait for a free slot before it pauses the input and returns
   * (default 2000 ms). Waiting keeps the slots filled as documents finish, instead of admitting in
   * waves (return, pause, resume at a tenth free, fetch again); the bound keeps the feedback topic and
   * rebalances from waiting behind a full instance.
   */
  roomWaitMs?: number;
  /** How an outage of a dependency (the schema registry) pauses the input instead of crashing. */
  outage?: OutageHandling;
}

/**
 * A record handler that fails because a dependency is down (not because of the record) must not
 * crash the consumer or dead-letter the record: the input pauses, `probe` is retried with back-off
 * until it resolves, and the input resumes from the first record not handled.
 */
export interface OutageHandling {
  isOutage(err: unknown): boolean;
  probe(): Promise<void>;
  /** Called with true when the input pauses for an outage, false when it resumes. */
  onChange?(paused: boolean): void;
  initialDelayMs?: number;
  maxDelayMs?: number;
}

export class ConsumerLoop {
  private consumer: LoopConsumer | null = null;
  private readonly trackers = new Map<string, OffsetTracker>();
  private drainCommit: NodeJS.Timeout | null = null;
  /** Per input partition: a promise resolved once its state is read and its unfinished work resumed. */
  private readonly prepared = new Map<number, Promise<void>>();
  private admitting = 0;
  /** Batch handlers waiting for a free slot: woken whenever one may have freed. */
  private readonly roomWaiters = new Set<() => void>();
  private inputPaused = false;
  /** Set while the input is paused for an outage; resolves when the probe succeeded. */
  private outage: Promise<void> | null = null;
  private stopping = false;

  constructor(private readonly o: ConsumerLoopOptions) {}

  /** Starts driving this consumer (call before its first batch). */
  attach(consumer: LoopConsumer): void {
    this.consumer = consumer;
  }

  /** No record is taken after this; running admissions finish. */
  stop(): void {
    this.stopping = true;
    if (this.drainCommit) clearTimeout(this.drainCommit);
    this.drainCommit = null;
  }

  get paused(): boolean {
    return this.inputPaused;
  }

  /** The group's answer to a rebalance: drop what was lost, prepare what was gained, start unpaused. */
  onGroupJoin(join: GroupJoin): void {
    const { arrived, feedback } = this.o.topics;
    const removed = join.removed[arrived] ?? [];
    let stopped = 0;
    if (removed.length > 0) {
      // Every step of a running document is recorded as it happens: stopping them loses nothing.
      stopped = this.o.engine.revoke(removed) ?? 0;
      this.o.state.revoke(removed);
      for (const p of removed) {
        this.trackers.get(arrived)?.drop(p);
        this.prepared.delete(p);
      }
    }
    for (const p of join.removed[feedback] ?? []) this.trackers.get(feedback)?.drop(p);
    const added = join.added[arrived] ?? [];
    // One reading of the group's offsets for every partition gained (their previous owners can no
    // longer commit).
    const committed = added.length > 0 ? this.readCommitted() : undefined;
    for (const p of added) void this.prepare(p, committed).catch(() => undefined);
    // What was added and removed: a partition kept (the sticky assignor) keeps its documents and state.
    this.o.logger.info(
      // `stopped`: documents of the removed partitions that were running (their new owners resume them).
      { assignment: join.assignment, added: join.added, removed: join.removed, stopped },
      'partitions assigned',
    );
    this.o.groupShare?.onJoin(join.assignment[arrived] ?? []);
    // A fresh assignment starts unpaused; the next batch pauses again if the instance is still full.
    this.inputPaused = false;
    if (this.outage) {
      this.consumer?.pause(arrived, join.assignment[arrived] ?? []);
      this.consumer?.pause(feedback, join.assignment[feedback] ?? []);
      return;
    }
    this.consumer?.resume(arrived, join.assignment[arrived] ?? []);
  }

  /** The batch handler to give the Kafka consumer (`autoResolve: false`). */
  readonly onBatch = async (batch: IncomingBatch, control: BatchControl): Promise<void> => {
    // Fetched before the pause: left unresolved, so they are fetched again after it.
    if (this.outage) return;
    if (batch.topic === this.o.topics.feedback) return this.onFeedbackBatch(batch, control);
    const offsets = this.tracker(batch.topic).partition(batch.partition);
    const admissions: Array<Promise<void>> = [];
    let last: string | null = null;
    // A failed heartbeat (a rebalance under way) ends any wait for room: the group must not wait.
    let heartbeatFailed = false;
    const heartbeat = setInterval(
      () =>
        void control.heartbeat().catch(() => {
          heartbeatFailed = true;
          this.wakeRoomWaiters();
        }),
      this.o.heartbeatMs ?? 1000,
    );
    const taking = () =>
      control.isRunning() && !control.isStale() && !this.stopping && !this.outage && !heartbeatFailed;
    try {
      // No record of a partition is admitted before its state is restored (heartbeats go on meanwhile).
      await this.prepare(batch.partition);
      for (const message of batch.messages) {
        if (!taking()) break;
        // Checked again after every wait: the slot is taken in the same turn as the check.
        const roomUntil = Date.now() + (this.o.roomWaitMs ?? 2000);
        while (!this.hasRoom()) {
          if (!taking() || !(await this.roomFreed(roomUntil))) break;
        }
        if (!this.hasRoom()) {
          if (taking()) this.pauseInput();
          break;
        }
        offsets.track(message.offset);
        last = message.offset;
        this.admitting += 1;
        admissions.push(
          this.o
            .arrivals(message)
            .then(() => {
              offsets.complete(message.offset);
              this.o.onInFlight?.(this.o.engine.inFlight);
            })
            .finally(() => {
              this.admitting -= 1;
              this.wakeRoomWaiters();
            }),
        );
      }
      const settled = await Promise.allSettled(admissions);
      const failed = settled.findIndex((s) => s.status === 'rejected');
      // Nothing after an unrecorded record may be taken: the batch is fetched again from the last
      // resolved offset, and the records already recorded are recognised by their state.
      if (failed >= 0) {
        const reason = (settled[failed] as PromiseRejectedResult).reason as unknown;
        if (!this.o.outage?.isOutage(reason)) throw reason;
        if (failed > 0) control.resolveOffset(batch.messages[failed - 1]!.offset);
        this.enterOutage(reason);
        return;
      }
      if (last !== null) control.resolveOffset(last);
    } finally {
      clearInterval(heartbeat);
    }
  };

  /** A document finished or was dropped: resume the input once a tenth of the slots are free. */
  onRoom(): void {
    this.wakeRoomWaiters();
    this.commitIfDrained();
    const inFlight = this.o.engine.inFlight;
    this.o.onInFlight?.(inFlight);
    if (!this.inputPaused || !this.consumer || this.stopping || this.outage) return;
    const max = this.o.maxInFlight;
    // Hysteresis: resume once a tenth of the slots are free, not at every single free slot.
    if (inFlight + this.admitting > max - Math.max(1, Math.floor(max / 10))) return;
    this.inputPaused = false;
    this.consumer.resume(this.o.topics.arrived, this.assigned(this.o.topics.arrived));
  }

  /**
   * Commits the highest safe offset of every assigned partition that moved. An input partition's
   * offset carries whether documents of it still run here (`unfinishedMetadata`): committed again when
   * that changes, so that every member of the group reading the offsets knows which partitions still
   * have work (`group-share.ts`).
   */
  async commit(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    const assignment = consumer.currentAssignment();
    for (const [topic, tracker] of this.trackers) {
      const owned = new Set(assignment[topic] ?? []);
      const metadataOf =
        topic === this.o.topics.arrived
          ? (p: number) => unfinishedMetadata(this.o.engine.unfinishedOn(p) > 0)
          : undefined;
      const entries = tracker.toCommit(metadataOf).filter((e) => owned.has(e.partition));
      if (entries.length === 0) continue;
      try {
        await consumer.commitOffsets(
          entries.map((e) => ({
            topic,
            partition: e.partition,
            offset: e.offset,
            ...(e.metadata !== null ? { metadata: e.metadata } : {}),
          })),
        );
        tracker.markCommitted(entries);
      } catch (err) {
        // A rebalance in progress: the next owner starts from the last committed offset and
        // recognises recorded documents by their state, so nothing is lost or submitted twice.
        this.o.logger.debug({ err: (err as Error).message }, 'commit failed; will retry');
      }
    }
  }

  private async onFeedbackBatch(batch: IncomingBatch, control: BatchControl): Promise<void> {
    const offsets = this.tracker(batch.topic).partition(batch.partition);
    for (const message of batch.messages) {
      if (!control.isRunning() || control.isStale() || this.stopping || this.outage) break;
      offsets.track(message.offset);
      try {
        await this.o.feedback(message);
      } catch (err) {
        if (!this.o.outage?.isOutage(err)) throw err;
        this.enterOutage(err);
        return;
      }
      offsets.complete(message.offset);
      control.resolveOffset(message.offset);
      await control.heartbeat();
    }
  }

  /**
   * The last document of an input partition finished: its offset is committed now rather than at the
   * next interval, so that the group's share moves to the partitions that still have work sooner.
   */
  private commitIfDrained(): void {
    if (this.drainCommit || !this.consumer || this.stopping) return;
    const tracker = this.trackers.get(this.o.topics.arrived);
    if (!tracker) return;
    // Revoked partitions are dropped from the tracker: what it committed is what this member holds.
    const drained = tracker.someCommittedWith(
      unfinishedMetadata(true),
      (p) => this.o.engine.unfinishedOn(p) === 0,
    );
    if (!drained) return;
    this.drainCommit = setTimeout(() => {
      this.drainCommit = null;
      void this.commit();
    }, 0);
  }

  private tracker(topic: string): OffsetTracker {
    let t = this.trackers.get(topic);
    if (!t) {
      t = new OffsetTracker();
      this.trackers.set(topic, t);
    }
    return t;
  }

  /**
   * Restores the state of a newly assigned partition, then resumes its unfinished documents.
   * `committed`: the group's offsets read at the join, else read here when preparing starts.
   */
  private prepare(
    partition: number,
    committed?: Promise<ReadonlyMap<number, string | null> | undefined>,
  ): Promise<void> {
    let p = this.prepared.get(partition);
    if (!p) {
      const reading = committed ?? this.readCommitted();
      p = this.o.state.assign([partition]).then(async () => {
        await this.startFromCommitted(partition, p, reading);
        const unfinished = this.o.state.unfinished(partition);
        await this.o.engine.resume(unfinished);
        if (unfinished.length > 0)
          this.o.logger.info({ partition, documents: unfinished.length }, 'resumed unfinished documents');
      });
      p.catch((err: unknown) => {
        this.prepared.delete(partition);
        this.o.logger.warn(
          { partition, err: (err as Error).message },
          'preparing a partition failed; will retry',
        );
      });
      this.prepared.set(partition, p);
    }
    return p;
  }

  /**
   * A partition this member just got starts its offsets at the group's committed one, so that this
   * member commits it again with its own metadata even before a new record of it is done (the
   * previous owner's may say documents still run that this member resumes and finishes). Skipped
   * when the offset cannot be read, or when the partition left again meanwhile.
   */
  private async startFromCommitted(
    partition: number,
    preparing: Promise<void> | undefined,
    reading: Promise<ReadonlyMap<number, string | null> | undefined> | undefined,
  ): Promise<void> {
    const offset = (await reading)?.get(partition) ?? null;
    if (offset === null || this.prepared.get(partition) !== preparing) return;
    this.tracker(this.o.topics.arrived).partition(partition).startAt(offset);
  }

  /** The group's committed input offsets, or undefined when they cannot be read (nothing to start at). */
  private readCommitted(): Promise<ReadonlyMap<number, string | null> | undefined> | undefined {
    return this.o.committedOffsets?.().catch(() => undefined);
  }

  /** True while the input is paused because a dependency is down. */
  get pausedForOutage(): boolean {
    return this.outage !== null;
  }

  /** Pauses both input topics and probes the dependency with back-off until it answers again. */
  private enterOutage(err: unknown): void {
    const handling = this.o.outage;
    if (!handling || this.outage || !this.consumer) return;
    const { arrived, feedback } = this.o.topics;
    this.consumer.pause(arrived, this.assigned(arrived));
    this.consumer.pause(feedback, this.assigned(feedback));
    this.o.logger.warn({ err: (err as Error).message }, 'input paused: a dependency is unavailable');
    handling.onChange?.(true);
    this.outage = (async () => {
      for (let attempt = 0; !this.stopping; attempt++) {
        const delay = backoffDelay(attempt, {
          initialMs: handling.initialDelayMs ?? 500,
          maxMs: handling.maxDelayMs ?? 30_000,
        });
        await new Promise((resolve) => setTimeout(resolve, delay));
        try {
          await handling.probe();
          return;
        } catch (probeErr) {
          this.o.logger.debug({ attempt, err: (probeErr as Error).message }, 'dependency still unavailable');
        }
      }
    })().finally(() => {
      this.outage = null;
      handling.onChange?.(false);
      if (this.stopping || !this.consumer) return;
      this.o.logger.info('input resumed: the dependency answers again');
      this.consumer.resume(feedback, this.assigned(feedback));
      if (!this.inputPaused) this.consumer.resume(arrived, this.assigned(arrived));
      else this.onRoom();
    });
  }

  /**
   * Resolves true when a slot may have freed (the caller checks again), false once `until` passed.
   * Also re-checks every 100 ms, so that a stop, a seek or an outage is noticed while waiting.
   */
  private roomFreed(until: number): Promise<boolean> {
    const left = until - Date.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.roomWaiters.delete(wake);
        resolve(true);
      };
      const timer = setTimeout(wake, Math.min(left, 100));
      this.roomWaiters.add(wake);
    });
  }

  private hasRoom(): boolean {
    return this.o.engine.inFlight + this.admitting < this.o.maxInFlight;
  }

  private wakeRoomWaiters(): void {
    for (const wake of [...this.roomWaiters]) wake();
  }

  private pauseInput(): void {
    if (this.inputPaused || !this.consumer) return;
    this.inputPaused = true;
    this.consumer.pause(this.o.topics.arrived, this.assigned(this.o.topics.arrived));
    this.o.logger.debug({ inFlight: this.o.engine.inFlight }, 'input paused: in-flight limit reached');
  }

  private assigned(topic: string): number[] {
    return this.consumer?.currentAssignment()[topic] ?? [];
  }
}
