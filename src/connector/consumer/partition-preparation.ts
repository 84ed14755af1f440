/**
 * Preparing an input partition this member just got, before any of its records is taken: its state
 * restored (`state/store.ts`), its offsets started at the group's committed one, its unfinished
 * documents resumed. Once per partition while it is held. A failed preparation (Kafka unavailable
 * for a moment) is tried again with back-off while the partition is held, and by its next batch,
 * whichever comes first: a partition with no new record would otherwise never be restored, and its
 * unfinished documents never resumed.
 */
import type { Logger } from '../../observability/logger.js';
import { retry } from '../../util/retry.js';
import type { LoopEngine, LoopState } from './loop-interfaces.js';

/** A held partition: `wake` ends its retry's wait early. */
interface Hold {
  wake?: () => void;
}

/** The partition left (was revoked, or left and came back) while it was being prepared: nothing more is done for it. */
export class PartitionLeftError extends Error {
  constructor(readonly partition: number) {
    super(`partition ${partition} left while it was being prepared`);
    this.name = 'PartitionLeftError';
  }
}

type CommittedOffsets = Promise<ReadonlyMap<number, string | null> | undefined> | undefined;

export interface PartitionPreparationOptions {
  state: LoopState;
  engine: LoopEngine;
  logger: Logger;
  /** The group's committed offsets of the input partitions (null: none). */
  committedOffsets?: () => Promise<ReadonlyMap<number, string | null>>;
  /** Starts this member's offsets of `partition` at `offset` (the group's committed one). */
  startAt(partition: number, offset: string): void;
  /** Back-off of the retries of a failed preparation (default 500 ms doubling to 30 s). */
  retry?: { initialMs: number; maxMs: number };
}

export class PartitionPreparation {
  /** Per input partition: resolved once its state is read and its unfinished work resumed. */
  private readonly prepared = new Map<number, Promise<void>>();
  /** Partitions held (gained and not forgotten), each with the wake of its retry's wait, if one waits. */
  private readonly held = new Map<number, Hold>();
  private stopped = false;

  constructor(private readonly o: PartitionPreparationOptions) {}

  /** No retry is scheduled after this. */
  stop(): void {
    this.stopped = true;
    const holds = [...this.held.values()];
    this.held.clear();
    for (const h of holds) h.wake?.();
  }

  /**
   * Partitions gained at a join: one reading of the group's offsets for all of them (their previous
   * owners can no longer commit), each prepared in the background.
   */
  gained(partitions: readonly number[]): void {
    if (partitions.length === 0) return;
    const committed = this.readCommitted();
    for (const p of partitions) {
      if (this.held.has(p)) void this.prepare(p, committed).catch(() => undefined);
      else this.keepPreparing(p, committed);
    }
  }

  /** Prepares a gained partition, trying again with back-off while it is held and not prepared. */
  private keepPreparing(partition: number, committed: CommittedOffsets): void {
    const hold: Hold = {};
    this.held.set(partition, hold);
    const given = new Error('partition no longer held');
    void retry(
      (tries) => {
        if (this.held.get(partition) !== hold || this.stopped) throw given;
        return this.prepare(partition, tries === 1 ? committed : undefined);
      },
      {
        backoff: this.o.retry ?? { initialMs: 500, maxMs: 30_000 },
        classify: (err) => (err === given ? { retry: false } : { retry: true }),
        clock: {
          now: () => Date.now(),
          // Woken early when the partition leaves or preparation stops: the next try then gives up.
          sleep: (ms) =>
            new Promise<void>((resolve) => {
              const timer = setTimeout(() => hold.wake?.(), ms);
              timer.unref();
              hold.wake = () => {
                clearTimeout(timer);
                hold.wake = undefined;
                resolve();
              };
            }),
        },
      },
    ).catch(() => undefined);
  }

  /** A partition that left: its preparation is void (a later one starts afresh). */
  forget(partition: number): void {
    this.prepared.delete(partition);
    const hold = this.held.get(partition);
    this.held.delete(partition);
    hold?.wake?.();
  }

  /**
   * Restores the state of a newly assigned partition, then resumes its unfinished documents.
   * `committed`: the group's offsets read at the join, else read here when preparing starts. Every
   * step after an await goes on only while this preparation is still the partition's (it was not
   * forgotten: revoked, or revoked and gained again); else it rejects with PartitionLeftError, and
   * the revoke has undone what was set up (the restored state dropped, the writer closed).
   */
  prepare(partition: number, committed?: CommittedOffsets): Promise<void> {
    let p = this.prepared.get(partition);
    if (!p) {
      const reading = committed ?? this.readCommitted();
      const stillHeld = () => {
        if (this.prepared.get(partition) !== p) throw new PartitionLeftError(partition);
      };
      p = this.o.state
        .assign([partition])
        // A restore that failed because the partition was revoked meanwhile: it left.
        .catch((err: unknown) => {
          stillHeld();
          throw err;
        })
        .then(async () => {
          stillHeld();
          await this.startFromCommitted(partition, reading, stillHeld);
          const unfinished = this.o.state.unfinished(partition);
          await this.o.engine.resume(unfinished);
          if (unfinished.length > 0)
            this.o.logger.info({ partition, documents: unfinished.length }, 'resumed unfinished documents');
        });
      p.catch((err: unknown) => {
        if (this.prepared.get(partition) === p) this.prepared.delete(partition);
        if (err instanceof PartitionLeftError)
          this.o.logger.debug({ partition }, 'partition left while it was being prepared');
        else
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
   * when the offset cannot be read; `stillHeld` throws when the partition left while it was read.
   */
  private async startFromCommitted(
    partition: number,
    reading: CommittedOffsets,
    stillHeld: () => void,
  ): Promise<void> {
    const offset = (await reading)?.get(partition) ?? null;
    stillHeld();
    if (offset !== null) this.o.startAt(partition, offset);
  }

  /** The group's committed input offsets, or undefined when they cannot be read (nothing to start at). */
  private readCommitted(): CommittedOffsets {
    return this.o.committedOffsets?.().catch(() => undefined);
  }
}
