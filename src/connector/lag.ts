/**
 * Consumer-lag and rate-limiter gauges, refreshed on a timer: for each input partition this instance
 * owns, the distance from the group's committed offset to the end of the partition. The same read
 * gives this instance its share of the group's API limit by pending work (`workShare`).
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
  /** Told this instance's share of the group's pending work (see `workShare`). */
  onShare?: (owned: number, total: number) => void;
}

/**
 * This instance's share of the group's pending work, in units the rate limiter divides its
 * configured rate by: each input partition counts its records not yet committed by the group (its
 * backlog, documents in flight included) plus one. A member whose partitions hold more of the
 * backlog gets more of the API limit, so a skewed key distribution does not leave a member idle
 * while another waits on its share; with no backlog anywhere it is the share of partitions. Every
 * member computes it from the same offsets, so the shares add up to about the whole limit (the
 * adaptive limiter below the ceiling absorbs the difference of members reading at other moments).
 */
export function workShare(
  ends: Array<{ partition: number; low: string; high: string }>,
  committed: Map<number, string | null>,
  owned: readonly number[],
): { owned: number; total: number } {
  let mine = 0;
  let total = 0;
  for (const { partition, low, high } of ends) {
    const from = BigInt(committed.get(partition) ?? low);
    const start = from > BigInt(low) ? from : BigInt(low);
    const pending = Number(BigInt(high) > start ? BigInt(high) - start : 0n) + 1;
    total += pending;
    if (owned.includes(partition)) mine += pending;
  }
  return { owned: mine, total: Math.max(1, total) };
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
    if (s.onShare) {
      const share = workShare(ends, committed, owned);
      s.onShare(share.owned, share.total);
    }
    s.metrics.limiterRate.set(s.limiterRate());
  } catch (err) {
    s.logger.debug({ err: (err as Error).message }, 'lag update failed');
  }
}
