/**
 * Replay's offset planning: where a reset of the connector's group on the input topic would move
 * each partition (to the earliest or latest record, to a time, or to named offsets), and applying
 * that plan. Planned first, so that a dry run shows exactly what a real run would change; the plan
 * is read from Kafka (`KafkaAdmin`'s offsets and commits) and applied as one commit of the group's
 * offsets from outside the group, which Kafka allows only while the group has no active member.
 */
import type { KafkaAdmin, PartitionOffsets } from '../kafka/admin.js';

export type OffsetResetTarget =
  | { kind: 'earliest' }
  | { kind: 'latest' }
  /** The first record at or after this time (milliseconds since the epoch); the end when none. */
  | { kind: 'timestamp'; timestamp: number }
  /** Explicit next offsets per partition; partitions not named keep their offsets. */
  | { kind: 'offsets'; offsets: Record<number, string> };

export interface PartitionReset {
  partition: number;
  /** The committed next offset, or null when the group has none for this partition. */
  current: string | null;
  target: string;
  low: string;
  high: string;
}

export interface OffsetResetPlan {
  groupId: string;
  topic: string;
  target: OffsetResetTarget;
  partitions: PartitionReset[];
  applied: boolean;
}

/** A target the topic cannot take (an unknown partition, an offset outside the partition). */
export class OffsetResetError extends Error {
  override name = 'OffsetResetError';
}

type PlanningAdmin = Pick<KafkaAdmin, 'topicOffsets' | 'groupOffsets' | 'offsetsForTimestamp'>;

/** What `resetOffsets` would commit, per partition, without changing anything. */
export async function planOffsetReset(
  admin: PlanningAdmin,
  groupId: string,
  topic: string,
  target: OffsetResetTarget,
): Promise<OffsetResetPlan> {
  const [bounds, committed] = await Promise.all([
    admin.topicOffsets(topic),
    admin.groupOffsets(groupId, topic),
  ]);
  let targets: Map<number, string>;
  switch (target.kind) {
    case 'earliest':
      targets = new Map(bounds.map((entry) => [entry.partition, entry.low]));
      break;
    case 'latest':
      targets = new Map(bounds.map((entry) => [entry.partition, entry.high]));
      break;
    case 'timestamp':
      targets = await admin.offsetsForTimestamp(topic, target.timestamp);
      break;
    case 'offsets':
      targets = explicitTargets(topic, target.offsets, bounds);
      break;
  }
  const partitions: PartitionReset[] = [];
  for (const entry of bounds) {
    const next = targets.get(entry.partition);
    if (next === undefined) continue;
    partitions.push({
      partition: entry.partition,
      current: committed.get(entry.partition) ?? null,
      target: next,
      low: entry.low,
      high: entry.high,
    });
  }
  return { groupId, topic, target, partitions, applied: false };
}

/**
 * Plans the reset and, unless `dryRun`, commits the planned offsets for the group. The group must
 * have no active member (stop the connector first): `KafkaAdmin.commitGroupOffsets` refuses otherwise.
 */
export async function resetOffsets(
  admin: PlanningAdmin & Pick<KafkaAdmin, 'commitGroupOffsets'>,
  groupId: string,
  topic: string,
  target: OffsetResetTarget,
  options: { dryRun?: boolean } = {},
): Promise<OffsetResetPlan> {
  const plan = await planOffsetReset(admin, groupId, topic, target);
  if (options.dryRun === true || plan.partitions.length === 0) return plan;
  await admin.commitGroupOffsets(
    groupId,
    topic,
    new Map(plan.partitions.map((entry) => [entry.partition, entry.target])),
  );
  return { ...plan, applied: true };
}

function explicitTargets(
  topic: string,
  offsets: Record<number, string>,
  bounds: PartitionOffsets[],
): Map<number, string> {
  const byPartition = new Map(bounds.map((entry) => [entry.partition, entry]));
  const out = new Map<number, string>();
  for (const [key, offset] of Object.entries(offsets)) {
    const partition = Number(key);
    const range = byPartition.get(partition);
    if (!range) throw new OffsetResetError(`topic ${topic} has no partition ${key}`);
    if (!/^\d+$/.test(offset)) {
      throw new OffsetResetError(`offset ${offset} for partition ${partition} is not a non-negative integer`);
    }
    if (BigInt(offset) < BigInt(range.low) || BigInt(offset) > BigInt(range.high)) {
      throw new OffsetResetError(
        `offset ${offset} for partition ${partition} is outside ${range.low}..${range.high} of ${topic}`,
      );
    }
    out.set(partition, offset);
  }
  return out;
}
