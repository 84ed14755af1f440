/**
 * The state of the input partitions this instance owns, as Kafka Streams keeps a task's store: the
 * changelog reader restores a state partition when its input partition is assigned and drops it on
 * revoke; `PartitionState` holds what was read (finished documents in the compact index). This
 * instance's own writes are applied once Kafka acknowledged them. Finished documents past the
 * retention window are expired here and their tombstones written by this owner. What a large restore
 * or a revoke leaves in the old generation is collected once it is over (`restore-garbage.ts`).
 */
import v8 from 'node:v8';
import type { ChangelogSink } from '../../kafka/changelog.js';
import type { Logger } from '../../observability/logger.js';
import { fullGc } from '../../util/full-gc.js';
import { optimisationOn } from '../../util/optimisations.js';
import type { FinishedEntry } from './partition-index.js';
import { PartitionState } from './partition-state.js';
import type { DocumentStateV2, UnfinishedState } from './document-state.js';
import type { ReplayMarker } from './replay-marker.js';
import { RestoreGarbage } from './restore-garbage.js';

/** Records read or dropped that make a full collection worth its pause (tens of ms) afterwards. */
const COLLECT_AFTER_RECORDS = 10_000;
/** Quiet time after a restore before collecting: the next partition of a rebalance may follow. */
const COLLECT_QUIET_MS = 1000;

/**
 * Tombstones of expired documents out at once at most: an expiry or a restore can find a partition's
 * whole history expired, and each tombstone held in the producer's queue costs memory until Kafka
 * acknowledges it. The rest wait here, as an event id each, and go as earlier ones are acknowledged.
 */
export const TOMBSTONES_IN_FLIGHT = 500;

/** The changelog reader as the store drives it (`ChangelogReader`, or a fake in unit tests). */
export interface StateFeed {
  start(): Promise<void>;
  assign(partitions: number[]): Promise<void>;
  revoke(partitions: number[]): void;
  caughtUp(partitions: number[]): boolean;
  ownedPartitions(): number[];
  owns(partition: number): boolean;
  stop(): Promise<void>;
}

interface OwnedStateOptions {
  /** Input topic named in v1 records that did not carry it. */
  inputTopic: string;
  retentionMs: number;
  logger: Logger;
  /** Writes the tombstone of an expired document (key = event id, to the state partition). */
  tombstone(partition: number, eventId: string): Promise<void>;
  now?: () => number;
  /** A full collection after a large restore or drop (default `fullGc`); null: none. */
  collectGarbage?: (() => Promise<unknown>) | null;
}

/** The full collection after a large restore, or none where it is switched off (`heap-compaction-after-restore`). */
export function restoreCollector(): (() => Promise<unknown>) | null {
  return optimisationOn('heap-compaction-after-restore') ? fullGc : null;
}

export type Recorded = { finished: FinishedEntry } | { unfinished: UnfinishedState };

export class OwnedState {
  readonly partitions: PartitionState;
  private readonly feed: StateFeed;
  private readonly garbage: RestoreGarbage;
  private readonly tombstone: OwnedStateOptions['tombstone'];
  private readonly logger: Logger;
  /** Expired documents whose tombstone waits for capacity (`TOMBSTONES_IN_FLIGHT`), oldest first. */
  private expiredWaiting: Array<{ partition: number; eventId: string }> = [];
  private expiredNext = 0;
  private tombstonesOut = 0;

  constructor(open: (sink: ChangelogSink) => StateFeed, options: OwnedStateOptions) {
    const { logger } = options;
    this.logger = logger;
    this.tombstone = options.tombstone;
    const collect = options.collectGarbage === undefined ? restoreCollector() : options.collectGarbage;
    this.garbage = new RestoreGarbage({
      thresholdRecords: collect ? COLLECT_AFTER_RECORDS : Infinity,
      quietMs: COLLECT_QUIET_MS,
      collect: collect ?? (() => Promise.resolve()),
      // The heap left is what was live: above an idle instance's, something still held the garbage.
      onCollected: (records, ms) =>
        logger.info(
          { records, ms, heapUsedMb: Math.round(v8.getHeapStatistics().used_heap_size / 104857.6) / 10 },
          'heap collected after reading or dropping state',
        ),
    });
    this.partitions = new PartitionState({
      inputTopic: options.inputTopic,
      retentionMs: options.retentionMs,
      ...(options.now ? { now: options.now } : {}),
      onExpired: (partition, eventId) => {
        if (!this.feed.owns(partition)) return;
        this.expiredWaiting.push({ partition, eventId });
        this.sendTombstones();
      },
      onBadRecord: (partition, offset, err) =>
        logger.warn({ partition, offset, err: err.message }, 'state record ignored'),
    });
    const partitions = this.partitions;
    this.feed = open({
      apply: (record) => {
        this.garbage.read(1);
        partitions.apply(record);
      },
      drop: (partition) => {
        const documents = partitions.finished.size(partition);
        partitions.drop(partition);
        this.garbage.dropped(documents);
      },
    });
  }

  start(): Promise<void> {
    return this.feed.start();
  }

  /** Tombstones of expired documents out now (at most `TOMBSTONES_IN_FLIGHT`). */
  get tombstonesInFlight(): number {
    return this.tombstonesOut;
  }

  /**
   * Sends waiting tombstones while fewer than `TOMBSTONES_IN_FLIGHT` are out; one for a partition
   * that left meanwhile is dropped (its next owner expires the document itself).
   */
  private sendTombstones(): void {
    while (this.tombstonesOut < TOMBSTONES_IN_FLIGHT && this.expiredNext < this.expiredWaiting.length) {
      const { partition, eventId } = this.expiredWaiting[this.expiredNext++]!;
      if (!this.feed.owns(partition)) continue;
      this.tombstonesOut += 1;
      const done = () => {
        this.tombstonesOut -= 1;
        this.sendTombstones();
      };
      this.tombstone(partition, eventId).then(done, (err: unknown) => {
        this.logger.warn(
          { partition, err: (err as Error).message },
          'tombstone of an expired document not written; the next expiry or restore retries',
        );
        done();
      });
    }
    if (this.expiredNext === this.expiredWaiting.length) {
      this.expiredWaiting = [];
      this.expiredNext = 0;
    }
  }

  stop(): Promise<void> {
    this.garbage.stop();
    return this.feed.stop();
  }

  /** Restores `partitions`; resolves once each holds every record written before the call. */
  async assign(partitions: number[]): Promise<void> {
    this.garbage.restoreStarted();
    try {
      await this.feed.assign(partitions);
    } finally {
      this.garbage.restoreEnded();
    }
  }

  /** Stops reading `partitions` and forgets them. */
  revoke(partitions: number[]): void {
    this.feed.revoke(partitions);
  }

  caughtUp(partitions: number[]): boolean {
    return this.feed.caughtUp(partitions);
  }

  owned(): number[] {
    return this.feed.ownedPartitions();
  }

  get(partition: number, eventId: string): Recorded | undefined {
    return this.partitions.get(partition, eventId);
  }

  unfinished(partition: number): UnfinishedState[] {
    return this.partitions.unfinishedOf(partition);
  }

  marker(partition: number): ReplayMarker | undefined {
    return this.partitions.marker(partition);
  }

  /** Applies a state this instance wrote (acknowledged by Kafka), unless its partition left meanwhile. */
  put(state: DocumentStateV2): void {
    const partition = state.input.partition;
    if (this.feed.owns(partition)) this.partitions.put(partition, state);
  }

  /** Expires the finished documents past the window (their tombstones are written); returns how many. */
  expire(): number {
    return this.partitions.expire();
  }
}
