/**
 * This member's part of the API rate limit its consumer group spends together
 * (docs/performance.md, "A group shares one API limit").
 *
 * On every group join the limiter's ceiling becomes this member's share of the input partitions
 * (with readings, the share the last reading gives with the partitions it now holds: `onJoin`).
 * Between joins, a reading of the group's offsets (the same for every member: the input topic's end
 * offsets, and the group's committed offsets with the metadata each owner commits beside them)
 * refines it: a partition with nothing left to do (no record past its committed offset, and its
 * owner committed it saying no document of it still runs) needs no API calls, so the limit is
 * divided among the partitions that still have work. The member whose partitions drew more of the
 * keys then gets the rate the drained ones left, instead of finishing last at its partition share.
 * How shares that rise and fall stay within the whole is told at `GroupShare`.
 */
import type { GroupCommit, PartitionOffsets } from '../../kafka/admin.js';

/** The part of the API client's limiter that follows the group. */
export interface ShareLimiter {
  setShare(owned: number, total: number): void;
}

/** A committed input offset's metadata: whether documents of that partition still run (`commit`). */
export function unfinishedMetadata(unfinished: boolean): string {
  return unfinished ? 'docstream:unfinished' : 'docstream:done';
}

/**
 * The input partitions that still have work by one reading: records past the group's committed
 * offset (or past the log start when nothing was committed), or documents still running on the
 * member that committed it (its metadata says so). A partition missing from `committed` counts from
 * its log start. The log starts of a reading may be a minute old (`KafkaAdmin.groupReading`): a
 * partition whose records past its commit retention has just removed counts as busy until then.
 */
export function busyPartitions(
  ends: readonly PartitionOffsets[],
  committed: ReadonlyMap<number, GroupCommit>,
): Set<number> {
  const busy = new Set<number>();
  const unfinished = unfinishedMetadata(true);
  for (const { partition, low, high } of ends) {
    const commit = committed.get(partition);
    const at = commit?.offset;
    const from = at === null || at === undefined || BigInt(at) < BigInt(low) ? BigInt(low) : BigInt(at);
    if (BigInt(high) > from || commit?.metadata === unfinished) busy.add(partition);
  }
  return busy;
}

type Share = { owned: number; total: number };

/**
 * Members read at different moments, so their shares would add up to more than the whole if one
 * took more before another gave back. So a share that falls applies at once, and one that rises only
 * when two readings in a row give it: by the second, every member reading as often has read the
 * first and given back what it must. The cost is one reading interval before a drained partition's
 * part is used by the others.
 */
export class GroupShare {
  /** The input partitions this member holds. */
  private owned: readonly number[] = [];
  /** The share the last reading (or join) gave, before the rule that a rise waits one reading. */
  private lastTarget: Share | null = null;
  private applied: Share | null = null;

  /** The busy partitions of the last reading (null: none yet), less those drained here since. */
  private lastBusy: ReadonlySet<number> | null = null;
  /**
   * The busy partitions of the last reading as read. A partition committed here as drained that
   * still has records past the commit (they were not fetched yet) never read drained: busy in the
   * next reading, its part comes back at once.
   */
  private lastRead: ReadonlySet<number> | null = null;
  /** The partitions this member held at the last reading. */
  private heldAtReading: ReadonlySet<number> = new Set();

  /**
   * `totalPartitions`: the input topic's partition count (read at start-up). `readings`: whether
   * `onOffsets` will be called (connector.groupShareIntervalMs > 0); see `onJoin`.
   */
  constructor(
    private readonly limiter: ShareLimiter,
    private readonly totalPartitions: () => number,
    private readonly readings = false,
  ) {}

  /**
   * A group join gave this member `owned` input partitions (possibly none). Partitions added to the
   * topic since start-up count once this member holds more than it knew of.
   *
   * Without readings: its share of the partitions, at once. With readings: the share the last
   * reading gives with the new partitions; a fall applies at once, a rise only when the next two
   * readings give it, as between joins. Members hear of a rebalance at their own moments (the
   * SyncGroup answers and their event loops, milliseconds to tens apart): a member that took a
   * partition's share at once could hold it while its previous owner still did, and a member that
   * kept its partitions (the sticky assignor) keeps its share instead of jumping to the share of
   * partitions and back.
   *
   * Unless this member has no reading yet, or its last found no work anywhere (a group starting,
   * or idle): then the assignment alone tells the share, the share of partitions, at once. Every
   * member's share of partitions adds up to the whole; a member that still holds a larger share of
   * partitions with work from an older reading has, by this reading, nothing to spend it on. (At the
   * floor until two readings agreed, a starting group would lose most of its first second: while
   * the group is idle, the second reading waits for the first records.)
   */
  onJoin(owned: readonly number[]): void {
    this.owned = [...owned];
    if (!this.readings || this.lastBusy === null || this.lastRead?.size === 0) {
      this.lastTarget = this.byPartitions();
      this.apply(this.lastTarget);
      return;
    }
    const target = this.targetOf(this.lastBusy);
    const current = this.applied ?? { owned: 0, total: 1 };
    const share = below(target, current) ? target : current;
    this.lastTarget = share;
    this.apply(share);
  }

  /**
   * A reading of the group's offsets on the input topic: a share that falls applies at once, one
   * that rises only if the previous reading gave at least as much (by then every member has read
   * what this one read, and given back what it must). Unless no partition became busy since the
   * last reading and this member holds no partition it did not hold then: then the rise comes only from partitions that drained, and
   * each one's owner gave its part back when it committed the drain (`onDrained`), before any
   * reading could show it; a member that has not read yet holds a share of a larger busy set,
   * smaller than the one it will read.
   */
  onOffsets(ends: readonly PartitionOffsets[], committed: ReadonlyMap<number, GroupCommit>): void {
    const busy = busyPartitions(ends, committed);
    const last = this.lastRead;
    const held = this.heldAtReading;
    const nothingNew =
      last !== null && [...busy].every((p) => last.has(p)) && this.owned.every((p) => held.has(p));
    this.lastBusy = busy;
    this.lastRead = busy;
    this.heldAtReading = new Set(this.owned);
    const target = this.targetOf(busy);
    const previous = this.lastTarget ?? target;
    this.lastTarget = target;
    this.apply(nothingNew || !below(previous, target) ? target : previous);
  }

  /**
   * This member is committing these input partitions as drained (no document of them runs here):
   * their part of the limit is given back now, before the commit lands and any member's reading
   * shows them drained. A partition that still has records past the commit shows busy in the next
   * reading, and its part comes back then (`lastRead`).
   */
  onDrained(partitions: readonly number[]): void {
    const last = this.lastBusy;
    if (last === null) return;
    const busy = new Set(last);
    for (const p of partitions) if (this.owned.includes(p)) busy.delete(p);
    if (busy.size === last.size) return;
    this.lastBusy = busy;
    const target = this.targetOf(busy);
    if (this.lastTarget === null || below(target, this.lastTarget)) this.lastTarget = target;
    if (this.applied === null || below(target, this.applied)) this.apply(target);
  }

  private targetOf(busy: ReadonlySet<number>): Share {
    // Nothing left anywhere: the share of partitions, ready for whichever partition fills first.
    if (busy.size === 0) return this.byPartitions();
    return { owned: this.owned.filter((p) => busy.has(p)).length, total: busy.size };
  }

  private byPartitions(): Share {
    return {
      owned: this.owned.length,
      total: Math.max(1, this.totalPartitions(), this.owned.length),
    };
  }

  private apply(share: Share): void {
    if (this.applied && !below(this.applied, share) && !below(share, this.applied)) return;
    this.applied = share;
    this.limiter.setShare(share.owned, share.total);
  }
}

/** a < b, as fractions. */
function below(a: Share, b: Share): boolean {
  return a.owned * b.total < b.owned * a.total;
}
