/**
 * The state of the input partitions this instance owns, as Kafka Streams keeps a task's store: the
 * changelog reader restores a state partition when its input partition is assigned and drops it on
 * revoke; `PartitionState` holds what was read (finished documents in the compact index). This
 * instance's own writes are applied once Kafka acknowledged them. Finished documents past the
 * retention window are expired here and their tombstones written by this owner.
 */
import type { ChangelogSink } from '../../kafka/changelog.js';
import type { Logger } from '../../observability/logger.js';
import type { FinishedEntry } from './partition-index.js';
import { PartitionState } from './partition-state.js';
import type { DocumentStateV2, UnfinishedState } from './document-state.js';
import type { ReplayMarker } from './replay-marker.js';

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
}

export type Recorded = { finished: FinishedEntry } | { unfinished: UnfinishedState };

export class OwnedState {
  readonly partitions: PartitionState;
  private readonly feed: StateFeed;

  constructor(open: (sink: ChangelogSink) => StateFeed, options: OwnedStateOptions) {
    const { logger } = options;
    this.partitions = new PartitionState({
      inputTopic: options.inputTopic,
      retentionMs: options.retentionMs,
      ...(options.now ? { now: options.now } : {}),
      onExpired: (partition, eventId) => {
        if (!this.feed.owns(partition)) return;
        options
          .tombstone(partition, eventId)
          .catch((err: unknown) =>
            logger.warn(
              { partition, err: (err as Error).message },
              'tombstone of an expired document not written; the next expiry or restore retries',
            ),
          );
      },
      onBadRecord: (partition, offset, err) =>
        logger.warn({ partition, offset, err: err.message }, 'state record ignored'),
    });
    this.feed = open(this.partitions);
  }

  start(): Promise<void> {
    return this.feed.start();
  }

  stop(): Promise<void> {
    return this.feed.stop();
  }

  /** Restores `partitions`; resolves once each holds every record written before the call. */
  assign(partitions: number[]): Promise<void> {
    return this.feed.assign(partitions);
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
