/**
 * A sticky, co-partitioned partition assignor for kafkajs' (eager) group protocol.
 *
 * kafkajs 2.2.4 ships only round-robin, which is not sticky: one member more moves most partitions,
 * and every partition that moves stops its documents and drops its state, and its new owner restores
 * the state and resumes them. Here every member says, in its join's user data, which partitions it
 * holds and when it got them; the leader keeps each partition with its previous owner as far as
 * balance allows and hands out only the rest (`assignSticky` tells how). The eager protocol stays
 * (every member rejoins on every rebalance), but a member that gets back what it held keeps its
 * running documents and state: the consumer's join diff (`consumer.ts`) tells the connector only
 * what was added and removed.
 */
import { BEFORE_REJOIN, type HasRejoinHook } from './rejoin-barrier.js';
import kafkajs from 'kafkajs';
import type { Assigner, GroupMember, GroupMemberAssignment, PartitionAssigner } from 'kafkajs';

const { AssignerProtocol } = kafkajs;

/** The protocol name members announce; the group runs it once every member supports it. */
export const STICKY_PROTOCOL = 'docstream-sticky';
const PROTOCOL_VERSION = 1;
const CLAIM_VERSION = 1;

/** Partitions by topic. */
export type TopicPartitions = Record<string, number[]>;

/** What a member held when it joined: its assignment and when that assignment reached it. */
export interface StickyClaim {
  /** Milliseconds since the epoch, on the member's clock (stands for the generation: `assignSticky`). */
  assignedAt: number;
  assignment: TopicPartitions;
}

export interface StickyMember {
  memberId: string;
  /** The topics the member subscribes to. */
  topics: readonly string[];
  /** null: the member holds nothing (a new member, or one whose claim could not be read). */
  claim: StickyClaim | null;
  /** The member is stopping: it is given nothing while another member can take its share. */
  leaving?: boolean;
}

/**
 * The user data a member joins with: its claim as compact JSON (a few bytes per partition), the
 * address of its metrics endpoint when it has one (`m`, read by `docstream status`), and `l: 1` when
 * it is stopping (`leaving`). Members that do not know a field ignore it; a member holding nothing
 * sends `{v, m}` or `{v, l}`, which reads as no claim.
 */
export function encodeClaim(
  claim: StickyClaim | null,
  advertised: string | null = null,
  leaving = false,
): Buffer {
  const extra = { ...(advertised ? { m: advertised } : {}), ...(leaving ? { l: 1 } : {}) };
  if (claim === null)
    return Object.keys(extra).length > 0
      ? Buffer.from(JSON.stringify({ v: CLAIM_VERSION, ...extra }))
      : Buffer.alloc(0);
  return Buffer.from(
    JSON.stringify({ v: CLAIM_VERSION, at: claim.assignedAt, a: claim.assignment, ...extra }),
  );
}

/** Whether a member joined saying it is stopping (`encodeClaim`'s `l`). */
export function leavingOf(userData: Buffer | null | undefined): boolean {
  if (!userData || userData.length === 0) return false;
  try {
    return (JSON.parse(userData.toString('utf8')) as { l?: unknown }).l === 1;
  } catch {
    return false;
  }
}

/** The metrics address a member announced in its user data (`encodeClaim`), or null. */
export function advertisedAddressOf(userData: Buffer | null | undefined): string | null {
  if (!userData || userData.length === 0) return null;
  try {
    const raw = JSON.parse(userData.toString('utf8')) as { m?: unknown };
    return typeof raw.m === 'string' && raw.m.length > 0 ? raw.m : null;
  } catch {
    return null;
  }
}

/**
 * A member's claim from its user data; null when there is none or it cannot be read (a member of
 * another version): that member's partitions are then handed out as if it held none.
 */
export function decodeClaim(userData: Buffer | null | undefined): StickyClaim | null {
  if (!userData || userData.length === 0) return null;
  try {
    const raw = JSON.parse(userData.toString('utf8')) as { v?: unknown; at?: unknown; a?: unknown };
    if (raw.v !== CLAIM_VERSION || typeof raw.at !== 'number' || !Number.isFinite(raw.at)) return null;
    if (typeof raw.a !== 'object' || raw.a === null || Array.isArray(raw.a)) return null;
    const assignment: TopicPartitions = {};
    for (const [topic, partitions] of Object.entries(raw.a as Record<string, unknown>)) {
      if (!Array.isArray(partitions)) return null;
      assignment[topic] = partitions.filter((p): p is number => Number.isInteger(p) && p >= 0);
    }
    return { assignedAt: raw.at, assignment };
  } catch {
    return null;
  }
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The assignment of `partitionsOf` (partition numbers per topic) to `members`: balanced within one
 * partition number per member, co-partitioned, keeping valid previous owners. Every member appears
 * in the result (possibly with nothing).
 *
 * Co-partitioning: the unit of assignment is a partition *number*. Partition p of every subscribed
 * topic goes to one member, so that input partition p, the state partition p its changelog reader
 * restores, and feedback partition p stay together (topics with fewer partitions simply have no p).
 * Round-robin gave that only when the partition count was a multiple of the member count.
 *
 * Balance: with U partition numbers and M members, every member gets ⌊U/M⌋ or ⌈U/M⌉ (exactly U mod M
 * of them the larger). A previous owner keeps up to its quota; the members allowed ⌈U/M⌉ are first
 * those that held more than ⌊U/M⌋, so the number of partitions that change owner is the least any
 * balanced assignment allows (a member joining N → N+1 moves ⌊U/(N+1)⌋ or ⌈U/(N+1)⌉; a member leaving
 * moves only its own partitions). Everything is ordered (member ids, partition numbers), so every
 * leader computes the same result from the same claims.
 *
 * Stale claims: a member that was dropped from the group (a session timeout) may still claim what a
 * newer generation gave another member. The claim that wins is the most recent one (`assignedAt`,
 * the member's clock when the assignment reached it; ties by member id). kafkajs does not hand its
 * group generation id to a member (its join event drops it, and the assignment's user data), so the
 * member's clock stands in for it: members of one generation receive it within milliseconds, and a
 * newer generation comes at least a rebalance later. Clocks further apart than that could let a stale
 * claim win one partition, which costs one move, never correctness: the leader gives every partition
 * to exactly one member whatever the claims say.
 */
export function assignSticky(
  members: readonly StickyMember[],
  partitionsOf: Readonly<Record<string, readonly number[]>>,
): Map<string, TopicPartitions> {
  // A stopping member takes no partition, not even its own, while another member can take them:
  // a stop that meets a rebalance hands its partitions on then, and is given none it must prepare.
  const staying = members.filter((m) => !m.leaving);
  if (staying.length > 0 && staying.length < members.length) {
    const out = assignSticky(staying, partitionsOf);
    for (const m of members) if (m.leaving) out.set(m.memberId, {});
    return out;
  }
  const sorted = [...members].sort((a, b) => byId(a.memberId, b.memberId));
  const out = new Map<string, TopicPartitions>(sorted.map((m) => [m.memberId, {}]));
  if (sorted.length === 0) return out;
  const topics = Object.keys(partitionsOf).sort(byId);
  const units = [...new Set(topics.flatMap((t) => partitionsOf[t] ?? []))].sort((a, b) => a - b);
  const unitSet = new Set(units);

  // Each partition number's previous owner: the most recent claim on any of its topic partitions.
  const owner = new Map<number, { memberId: string; at: number }>();
  for (const m of sorted) {
    if (!m.claim) continue;
    const claimed = new Set<number>();
    for (const [topic, partitions] of Object.entries(m.claim.assignment)) {
      if (!(topic in partitionsOf)) continue;
      for (const p of partitions) if (unitSet.has(p)) claimed.add(p);
    }
    for (const p of claimed) {
      const held = owner.get(p);
      // Members are visited in id order: on equal times the smaller id keeps it.
      if (!held || m.claim.assignedAt > held.at)
        owner.set(p, { memberId: m.memberId, at: m.claim.assignedAt });
    }
  }
  const claims = new Map<string, number[]>(sorted.map((m) => [m.memberId, []]));
  for (const p of units) {
    const held = owner.get(p);
    if (held) claims.get(held.memberId)!.push(p);
  }

  // Quotas: ⌊U/M⌋ each, and U mod M members one more, first those that held more than ⌊U/M⌋ (the
  // most first), so that as many partitions as possible stay where they are.
  const base = Math.floor(units.length / sorted.length);
  let extra = units.length % sorted.length;
  const quota = new Map<string, number>(sorted.map((m) => [m.memberId, base]));
  const byHeld = [...sorted].sort(
    (a, b) => claims.get(b.memberId)!.length - claims.get(a.memberId)!.length || byId(a.memberId, b.memberId),
  );
  for (const m of byHeld) {
    if (extra === 0) break;
    quota.set(m.memberId, base + 1);
    extra -= 1;
  }

  const unitsOf = new Map<string, number[]>();
  const kept = new Set<number>();
  for (const m of sorted) {
    const keep = claims.get(m.memberId)!.slice(0, quota.get(m.memberId)!);
    for (const p of keep) kept.add(p);
    unitsOf.set(m.memberId, keep);
  }
  const free = units.filter((p) => !kept.has(p));
  let next = 0;
  for (const m of sorted) {
    const mine = unitsOf.get(m.memberId)!;
    while (mine.length < quota.get(m.memberId)! && next < free.length) mine.push(free[next++]!);
    mine.sort((a, b) => a - b);
  }

  // Partition p of each topic goes to the owner of number p; a topic its owner does not subscribe
  // to (members of different versions) goes to the subscribed member holding the fewest of it.
  const ownerOf = new Map<number, string>();
  for (const [memberId, mine] of unitsOf) for (const p of mine) ownerOf.set(p, memberId);
  for (const topic of topics) {
    const subscribed = sorted.filter((m) => m.topics.includes(topic));
    if (subscribed.length === 0) continue;
    const subscribedIds = new Set(subscribed.map((m) => m.memberId));
    const count = new Map<string, number>(subscribed.map((m) => [m.memberId, 0]));
    const strays: number[] = [];
    for (const p of [...(partitionsOf[topic] ?? [])].sort((a, b) => a - b)) {
      const memberId = ownerOf.get(p)!;
      if (!subscribedIds.has(memberId)) {
        strays.push(p);
        continue;
      }
      (out.get(memberId)![topic] ??= []).push(p);
      count.set(memberId, count.get(memberId)! + 1);
    }
    for (const p of strays) {
      const least = subscribed.reduce((a, b) => (count.get(b.memberId)! < count.get(a.memberId)! ? b : a));
      (out.get(least.memberId)![topic] ??= []).push(p);
      count.set(least.memberId, count.get(least.memberId)! + 1);
    }
  }
  for (const assignment of out.values()) {
    for (const partitions of Object.values(assignment)) partitions.sort((a, b) => a - b);
  }
  return out;
}

/** The least number of partition numbers that must change owner for any balanced assignment. */
export function minimumMoves(
  previousOwner: ReadonlyMap<number, string>,
  memberIds: readonly string[],
  units: readonly number[],
): number {
  if (memberIds.length === 0) return 0;
  const members = new Set(memberIds);
  const held = new Map<string, number>(memberIds.map((m) => [m, 0]));
  let owned = 0;
  for (const p of units) {
    const o = previousOwner.get(p);
    if (o === undefined) continue;
    owned += 1;
    if (members.has(o)) held.set(o, held.get(o)! + 1);
  }
  const base = Math.floor(units.length / memberIds.length);
  let extra = units.length % memberIds.length;
  let keepable = 0;
  for (const h of [...held.values()].sort((a, b) => b - a)) {
    const q = extra > 0 ? base + 1 : base;
    if (extra > 0) extra -= 1;
    keepable += Math.min(h, q);
  }
  return owned - keepable;
}

/**
 * The assigner kafkajs runs: `claim` is asked at every join for what this member holds now (and
 * `advertised` for its metrics address, `leaving` whether it is stopping); the leader's `assign`
 * reads every member's claim, topics and leaving flag from the join's metadata.
 */
export function stickyAssigner(
  claim: () => StickyClaim | null,
  advertised: () => string | null = () => null,
  beforeRejoin?: () => Promise<void>,
  leaving: () => boolean = () => false,
): PartitionAssigner {
  return ({ cluster }): Assigner & HasRejoinHook => ({
    // The member's barrier before it gives its partitions up (`rejoin-barrier.ts`).
    ...(beforeRejoin ? { [BEFORE_REJOIN]: beforeRejoin } : {}),
    name: STICKY_PROTOCOL,
    version: PROTOCOL_VERSION,
    protocol({ topics }) {
      return {
        name: STICKY_PROTOCOL,
        metadata: AssignerProtocol.MemberMetadata.encode({
          version: PROTOCOL_VERSION,
          topics,
          userData: encodeClaim(claim(), advertised(), leaving()),
        }),
      };
    },
    assign({ members, topics }): Promise<GroupMemberAssignment[]> {
      const partitionsOf: Record<string, number[]> = {};
      for (const topic of topics) {
        partitionsOf[topic] = cluster.findTopicPartitionMetadata(topic).map((m) => m.partitionId);
      }
      const result = assignSticky(members.map(memberOf(topics)), partitionsOf);
      return Promise.resolve(
        [...result].map(([memberId, assignment]) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({
            version: PROTOCOL_VERSION,
            assignment,
            userData: Buffer.alloc(0),
          }),
        })),
      );
    },
  });
}

/** A member as the join reports it; metadata that cannot be read counts as subscribed to `topics`, holding nothing. */
function memberOf(topics: string[]): (member: GroupMember) => StickyMember {
  return ({ memberId, memberMetadata }) => {
    try {
      const metadata = AssignerProtocol.MemberMetadata.decode(memberMetadata);
      const userData = metadata?.userData;
      return {
        memberId,
        topics: metadata?.topics ?? topics,
        claim: decodeClaim(userData),
        leaving: leavingOf(userData),
      };
    } catch {
      return { memberId, topics, claim: null };
    }
  };
}
