/**
 * Consumer-lag gauges, refreshed on a timer: for each input partition this instance owns, the
 * distance from the group's committed offset to the end of the partition. The same reading of the
 * group's offsets goes to the group's share of the API limit (`onOffsets`).
 *
 * A reading is two Kafka requests (`KafkaAdmin.groupReading`: the topic's ends, the group's
 * commits); at the group share's pace (twice a second) they were most of what an idle instance sent.
 * While the whole group is idle, `ReadingPace` reads only every few seconds; anything this member
 * sees (a batch, a document in flight) makes the next tick read again.
 */
import type { GroupCommit, KafkaAdmin, PartitionOffsets } from '../../kafka/admin.js';
import { busyPartitions } from './group-share.js';
import type { Assignment } from '../../kafka/consumer.js';
import type { Logger } from '../../observability/logger.js';
import type { ConnectorMetrics } from '../../observability/metrics.js';

export interface LagSources {
  admin: Pick<KafkaAdmin, 'groupReading'>;
  assignment: () => Assignment;
  topic: string;
  groupId: string;
  metrics: ConnectorMetrics;
  logger: Logger;
  /** Told every reading of the input topic's end offsets and the group's committed offsets. */
  onOffsets?: (ends: PartitionOffsets[], committed: Map<number, GroupCommit>) => void;
}

/**
 * Reads the group's offsets, sets the gauges and tells `onOffsets`. Returns whether the whole group
 * was idle by that reading (no input partition with work, see `busyPartitions`); false when the
 * reading failed.
 */
export async function updateLag(s: LagSources): Promise<boolean> {
  try {
    const owned = s.assignment()[s.topic] ?? [];
    const { ends, committed } = await s.admin.groupReading(s.groupId, s.topic);
    s.metrics.consumerLag.reset();
    for (const { partition, high } of ends) {
      if (!owned.includes(partition)) continue;
      const at = committed.get(partition)?.offset ?? '0';
      s.metrics.consumerLag.set(
        { topic: s.topic, partition: String(partition) },
        Number(BigInt(high) - BigInt(at)),
      );
    }
    s.onOffsets?.(ends, committed);
    return busyPartitions(ends, committed).size === 0;
  } catch (err) {
    s.logger.debug({ err: (err as Error).message }, 'lag update failed');
    return false;
  }
}

/** What this member saw since the last reading: batches handled (a count that only grows), documents in flight. */
export interface MemberActivity {
  batches: number;
  inFlight: number;
}

/**
 * When the lag timer reads the group's offsets: every tick, unless the last reading found the whole
 * group idle and this member has seen nothing since (no batch, no document in flight); then once
 * every `idleEveryMs`. A member that gets work reads at its next tick; the others see that work at
 * their next idle reading at the latest, and hold no share they use meanwhile (an idle member makes
 * no API call).
 */
export class ReadingPace {
  private lastAt = Number.NEGATIVE_INFINITY;
  private groupIdle = false;
  private batches = -1;

  constructor(private readonly idleEveryMs: number) {}

  due(now: number, seen: MemberActivity): boolean {
    if (!this.groupIdle || seen.inFlight > 0 || seen.batches !== this.batches) return true;
    return now - this.lastAt >= this.idleEveryMs;
  }

  /** A reading taken at `now` (when it started), with what it found. */
  read(now: number, seen: MemberActivity, groupIdle: boolean): void {
    this.lastAt = now;
    this.batches = seen.batches;
    this.groupIdle = groupIdle && seen.inFlight === 0;
  }
}
