/**
 * Consumer-lag and rate-limiter gauges, refreshed on a timer: for each input partition this instance
 * owns, the distance from the group's committed offset to the end of the partition.
 */
import type { KafkaAdmin } from '../kafka/admin.js';
import type { Assignment } from '../kafka/consumer.js';
import type { Logger } from '../observability/logger.js';
import type { ConnectorMetrics } from '../observability/metrics.js';

interface LagSources {
  admin: Pick<KafkaAdmin, 'topicOffsets' | 'groupOffsets'>;
  assignment: () => Assignment;
  limiterRate: () => number;
  topic: string;
  groupId: string;
  metrics: ConnectorMetrics;
  logger: Logger;
}

export async function updateLag(s: LagSources): Promise<void> {
  try {
    const owned = s.assignment()[s.topic] ?? [];
    const [ends, committed] = await Promise.all([
      s.admin.topicOffsets(s.topic),
      s.admin.groupOffsets(s.groupId, s.topic),
    ]);
    s.metrics.consumerLag.reset();
    for (const { partition, high } of ends) {
      if (!owned.includes(partition)) continue;
      const at = committed.get(partition) ?? '0';
      s.metrics.consumerLag.set(
        { topic: s.topic, partition: String(partition) },
        Number(BigInt(high) - BigInt(at)),
      );
    }
    s.metrics.limiterRate.set(s.limiterRate());
  } catch (err) {
    s.logger.debug({ err: (err as Error).message }, 'lag update failed');
  }
}
