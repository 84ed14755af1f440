/**
 * The narrow interfaces the consumer loop reaches Kafka, the engine and the state through (and its
 * options), in a file of their own so that the loop's helpers (`offset-commits.ts`,
 * `partition-preparation.ts`) and its fakes in tests import them without importing the loop.
 */
import type { Assignment, IncomingMessage, TopicPartitionOffset } from '../../kafka/consumer.js';
import type { Logger } from '../../observability/logger.js';
import type { UnfinishedState } from '../state/document-state.js';

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
  /** Admissions under way that hold no slot (waiting for their tenant's share): not counted against the limit. */
  readonly uncounted?: number;
  /** Documents of this input partition still running here. */
  unfinishedOn(partition: number): number;
  resume(states: UnfinishedState[]): Promise<void>;
  /** Stops the documents of `partitions`; returns how many were running (when it counts them). */
  revoke(partitions: Iterable<number>): number | void;
  /** The loop waits for a slot: nothing that would hold one should wait for company now. */
  wantCapacity?(): void;
  /**
   * Before this member releases its partitions: no create is sent from now on, and those already
   * sent are recorded within `timeoutMs`. Resolves with how many could not be recorded.
   */
  recordBeforeRevocation?(timeoutMs: number): Promise<number>;
  /** The group settled with these input partitions here: creates go again, for them only. */
  assigned?(partitions: number[]): void;
  /** No create is sent until the next `assigned` (the consumer left its group). */
  holdCreates?(): void;
}

/**
 * The state as the loop sees it: restore a partition (resolves once caught up), list its unfinished
 * documents, forget it when it leaves.
 */
export interface LoopState {
  assign(partitions: number[]): Promise<void>;
  revoke(partitions: number[]): void;
  /**
   * The member left its group (a crash): the partitions are forgotten as by `revoke`, but what
   * writes their state records stays open, so that the barrier before the next join
   * (`beforeRejoin`) can still record the creates sent for them. Returns the call that closes it,
   * made once that barrier ran (or at the next join, without a barrier). Absent: a crash revokes.
   */
  leave?(partitions: number[]): () => void;
  unfinished(partition: number): UnfinishedState[];
}

/**
 * Handles one record. Resolves once its outcome is durable (recorded or dead-lettered); rejects when
 * Kafka could not record it (tried again), and whatever else it throws ends the record
 * (`record-settling.ts`).
 */
export type RecordHandler = (message: IncomingMessage) => Promise<void>;

/**
 * An arrival's handler; `waiting` is called when the admission waits for what no batch should wait
 * for (its tenant's share of the slots, its application's rate limit).
 */
export type ArrivalHandler = (message: IncomingMessage, hooks?: { waiting(): void }) => Promise<void>;

export interface ConsumerLoopOptions {
  topics: { arrived: string; feedback: string };
  maxInFlight: number;
  engine: LoopEngine;
  state: LoopState;
  arrivals: ArrivalHandler;
  feedback: RecordHandler;
  logger: Logger;
  /** Called whenever the number of documents in flight may have changed. */
  onInFlight?: (inFlight: number) => void;
  /**
   * The group's members spend one API rate limit: told the input partitions this member holds on
   * every join (docs/performance.md, "A group shares one API limit").
   */
  groupShare?: { onJoin(owned: readonly number[]): void; onDrained(partitions: readonly number[]): void };
  /** The group's committed offsets of the input partitions (null: none), read when this member gets some. */
  committedOffsets?: () => Promise<ReadonlyMap<number, string | null>>;
  heartbeatMs?: number;
  /** Offsets are committed this often while attached (none by the clock when unset). */
  commitIntervalMs?: number;
  /**
   * How long a batch handler may wait for a free slot before it pauses the input and returns
   * (default 2000 ms). Waiting keeps the slots filled as documents finish, instead of admitting in
   * waves (return, pause, resume at a tenth free, fetch again); the bound keeps the feedback topic and
   * rebalances from waiting behind a full instance.
   */
  capacityWaitMs?: number;
  /** How an outage of a dependency (the schema registry) pauses the input instead of crashing. */
  outage?: OutageHandling;
  /**
   * How long a batch handler waits for the admissions it started before it returns (default 1000 ms;
   * the connector's `connector.admissionWaitMs`): those still running go on in the background,
   * counted against `maxInFlight`. Before a rebalance releases their partitions, `beforeRejoin`
   * stops their creates or waits for them to be recorded.
   */
  admissionWaitMs?: number;
  /** Whether a handler's failure is worth trying again, e.g. Kafka did not take the outcome (default: all). */
  retriable?: (err: unknown) => boolean;
  /** Ends a record whose handler failed for a reason not worth trying again: its dead letter. */
  endRecord?: (message: IncomingMessage, err: unknown) => Promise<void>;
}

/**
 * A record handler that fails because a dependency is down (not because of the record) must not
 * crash the consumer or dead-letter the record: the input pauses, `probe` is retried with back-off
 * until it resolves, and the input resumes from the first record not handled.
 */
export interface OutageHandling {
  isOutage(err: unknown): boolean;
  /** Resolves once the dependency that `err` (what paused the input) names answers again. */
  probe(err?: unknown): Promise<void>;
  /** Called with true when the input pauses for an outage, false when it resumes; `err` is what paused it. */
  onChange?(paused: boolean, err?: unknown): void;
  initialDelayMs?: number;
  maxDelayMs?: number;
}
