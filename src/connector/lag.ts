/**
 * Consumer-lag and rate-limiter gauges, refreshed on a timer: for each input partition this instance
 * owns, the distance from the group's committed offset to the end of the partition. The same read
 * covers every partition of the group, so it also tells how the group's remaining work is split
 * (`onGroupLag`: the lag of this instance's partitions and of all of them), which weights the
 * group's shared API limit (`ConsumerLoop.weighShare`).
 */
import type { KafkaAdmin } from '../kafka/admin.js';
import type { Assignment } from '../kafka/consumer.js';
import type { Logger } from '../observability/logger.js';
import type { ConnectorMetrics } from '../observability/metrics.js';

export interface LagSources {
  admin: Pick<KafkaAdmin, 'topicOffsets' | 'groupOffsets'>;
  assignment: () => Assignment;
  limiterRate: () => number;
  topic: string;
  groupId: string;
  metrics: ConnectorMetrics;
  logger: Logger;
  /** Records not yet committed: on this instance's input partitions, and on all of them. */
  onGroupLag?: (ownedLag: number, totalLag: number) => void;
}

export async function updateLag(s: LagSources): Promise<void> {
  try {
    const owned = s.assignment()[s.topic] ?? [];
    const [ends, committed] = await Promise.all([
      s.admin.topicOffsets(s.topic),
      s.admin.groupOffsets(s.groupId, s.topic),
    ]);
    s.metrics.consumerLag.reset();
    let ownedLag = 0;
    let totalLag = 0;
    for (const { partition, low, high } of ends) {
      // Never committed: everything still in the partition is left to do.
      const at = committed.get(partition) ?? low;
      const lag = Math.max(0, Number(BigInt(high) - BigInt(at)));
      totalLag += lag;
      if (!owned.includes(partition)) continue;
      ownedLag += lag;
      s.metrics.consumerLag.set({ topic: s.topic, partition: String(partition) }, lag);
    }
    s.onGroupLag?.(ownedLag, totalLag);
    s.metrics.limiterRate.set(s.limiterRate());
  } catch (err) {
    s.logger.debug({ err: (err as Error).message }, 'lag update failed');
  }
}
