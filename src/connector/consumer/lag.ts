/**
 * Consumer-lag gauges, refreshed on a timer: for each input partition this instance owns, the
 * distance from the group's committed offset to the end of the partition. The same reading of the
 * group's offsets goes to the group's share of the API limit (`onOffsets`).
 */
import type { GroupCommit, KafkaAdmin, PartitionOffsets } from '../../kafka/admin.js';
import type { Assignment } from '../../kafka/consumer.js';
import type { Logger } from '../../observability/logger.js';
import type { ConnectorMetrics } from '../../observability/metrics.js';

export interface LagSources {
  admin: Pick<KafkaAdmin, 'topicOffsets' | 'groupCommits'>;
  assignment: () => Assignment;
  topic: string;
  groupId: string;
  metrics: ConnectorMetrics;
  logger: Logger;
  /** Told every reading of the input topic's end offsets and the group's committed offsets. */
  onOffsets?: (ends: PartitionOffsets[], committed: Map<number, GroupCommit>) => void;
}

export async function updateLag(s: LagSources): Promise<void> {
  try {
    const owned = s.assignment()[s.topic] ?? [];
    const [ends, committed] = await Promise.all([
      s.admin.topicOffsets(s.topic),
      s.admin.groupCommits(s.groupId, s.topic),
    ]);
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
  } catch (err) {
    s.logger.debug({ err: (err as Error).message }, 'lag update failed');
  }
}
