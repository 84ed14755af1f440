/**
 * The consumer loop's commits: per topic, the highest offset below which every record's outcome is
 * durable (`offsets.ts`). An input partition's offset also carries whether documents of it still run
 * here (`unfinishedMetadata`), committed again when that changes (at once when a partition's last
 * document finishes), so that every member reading the group's offsets knows which partitions still
 * have work and divides the API limit among them (`group-share.ts`).
 *
 * This is the one place offsets are committed. What asks for a commit is named (`CommitReason`):
 * the interval timer and a drained partition are scheduled here; the loop asks before it rejoins its
 * group (or, without the rejoin barrier, at a rebalance's notice) and the connector asks once at stop.
 */
import type { Logger } from '../../observability/logger.js';
import type { LoopConsumer } from './loop-interfaces.js';
import { unfinishedMetadata } from './group-share.js';
import { OffsetTracker } from './offsets.js';

/** Why a commit is made: each trigger of a commit, named (the debug log says which). */
export type CommitReason = 'interval' | 'partition drained' | 'before rejoin' | 'rebalance notice' | 'stop';

export interface OffsetCommitsOptions {
  /** The input topic, whose offsets carry the unfinished flag. */
  arrived: string;
  /** Documents of this input partition still running here. */
  unfinishedOn(partition: number): number;
  /**
   * Input partitions about to be committed as drained (no document of them runs here), told before
   * the commit is sent: the group's share gives their part back first (`GroupShare.onDrained`).
   */
  onDrained?(partitions: number[]): void;
  logger: Logger;
}

export class OffsetCommits {
  private readonly trackers = new Map<string, OffsetTracker>();
  private drainCommit: NodeJS.Timeout | null = null;
  private intervalCommit: NodeJS.Timeout | null = null;
  private consumer: LoopConsumer | null = null;
  private stopping = false;
  /** The commit being sent; commits go one at a time so that a newer offset is never overtaken. */
  private inFlight: Promise<void> | null = null;
  /** The one commit asked for while another was in flight: sent after it, with the offsets of then. */
  private queued: Promise<void> | null = null;
  private queuedReason: CommitReason = 'interval';

  constructor(private readonly o: OffsetCommitsOptions) {}

  attach(consumer: LoopConsumer): void {
    this.consumer = consumer;
  }

  /** Commits every `intervalMs` from now until `stop`. */
  startInterval(intervalMs: number): void {
    if (this.intervalCommit || this.stopping) return;
    this.intervalCommit = setInterval(() => this.commitInBackground('interval'), intervalMs);
    this.intervalCommit.unref();
  }

  /** No commit is scheduled after this (the final commit, reason `stop`, is the caller's). */
  stop(): void {
    this.stopping = true;
    if (this.drainCommit) clearTimeout(this.drainCommit);
    if (this.intervalCommit) clearInterval(this.intervalCommit);
    this.drainCommit = null;
    this.intervalCommit = null;
  }

  /** The offsets of one topic's partitions. */
  tracker(topic: string): OffsetTracker {
    let t = this.trackers.get(topic);
    if (!t) {
      t = new OffsetTracker();
      this.trackers.set(topic, t);
    }
    return t;
  }

  /** A partition that left: nothing of it is committed any more. */
  drop(topic: string, partition: number): void {
    this.trackers.get(topic)?.drop(partition);
  }

  /**
   * Commits the highest safe offset of every assigned partition that moved. One commit is in flight
   * at a time: asked for meanwhile, the commit waits for it and then sends what is safe by then, so
   * the offsets recorded for a partition only move forward. Several asked for meanwhile are one.
   */
  commit(reason: CommitReason): Promise<void> {
    if (this.inFlight) {
      this.queuedReason = reason;
      this.queued ??= this.inFlight.then(() => {
        this.queued = null;
        return this.commit(this.queuedReason);
      });
      return this.queued;
    }
    const sending = this.send(reason).finally(() => {
      if (this.inFlight === sending) this.inFlight = null;
    });
    this.inFlight = sending;
    return sending;
  }

  /** A commit nobody waits for (a timer, a notice); a failed one is logged by `send` already. */
  commitInBackground(reason: CommitReason): void {
    this.commit(reason).catch((err: unknown) =>
      this.o.logger.warn({ err: (err as Error).message, reason }, 'offset commit failed'),
    );
  }

  private async send(reason: CommitReason): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    const assignment = consumer.currentAssignment();
    for (const [topic, tracker] of this.trackers) {
      const owned = new Set(assignment[topic] ?? []);
      const metadataOf =
        topic === this.o.arrived ? (p: number) => unfinishedMetadata(this.o.unfinishedOn(p) > 0) : undefined;
      const entries = tracker.toCommit(metadataOf).filter((e) => owned.has(e.partition));
      if (entries.length === 0) continue;
      if (metadataOf) {
        const done = unfinishedMetadata(false);
        const drained = entries.filter((e) => e.metadata === done).map((e) => e.partition);
        if (drained.length > 0) this.o.onDrained?.(drained);
      }
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
        // Kept for the next commit. If the partition moves first (a rebalance in progress), its next
        // owner starts from the last committed offset and recognises recorded documents by their
        // state, so nothing is lost or submitted twice; but the records since are read again.
        this.o.logger.warn(
          { err: (err as Error).message, type: (err as { type?: string }).type, reason, topic },
          'offset commit failed; retried at the next commit',
        );
      }
    }
  }

  /**
   * The last document of an input partition finished: its offset is committed now rather than at the
   * next interval, so that the group's share moves to the partitions that still have work sooner.
   */
  commitIfDrained(): void {
    if (this.drainCommit || !this.consumer || this.stopping) return;
    const tracker = this.trackers.get(this.o.arrived);
    if (!tracker) return;
    // Revoked partitions are dropped from the tracker: what it committed is what this member holds.
    const drained = tracker.someCommittedWith(unfinishedMetadata(true), (p) => this.o.unfinishedOn(p) === 0);
    if (!drained) return;
    this.drainCommit = setTimeout(() => {
      this.drainCommit = null;
      this.commitInBackground('partition drained');
    }, 0);
  }
}
