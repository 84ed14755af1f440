/**
 * A "before the partitions are released" callback for kafkajs consumers, which have none.
 *
 * kafkajs re-joins its group as soon as it learns of a rebalance, and under the eager protocol a
 * join gives up every partition the member holds. docstream first records the submissions it created
 * for them (as Kafka Streams commits a task before handing it over), or their next owner submits them again.
 *
 * How: `ConsumerGroup.prototype.joinAndSync`, the one path every (re)join takes (start, rebalance,
 * unknown member, stale metadata), awaits the hook that the member's own partition assigner carries
 * under `BEFORE_REJOIN` before it joins. The hook bounds its own wait; the join then goes on as
 * kafkajs wrote it, the member heartbeating meanwhile (`keepAlive`). A join that fails leaves the
 * member marked to join again (`rejoinNeeded`). Applied only to the kafkajs version it was written
 * against; on any other nothing is wrapped and the Kafka client's start-up line (`unpatchedNotice`)
 * says so. Restarts rejoin as the crashed member: `rejoinAsCrashedMember`.
 */
import { installedKafkajsVersion, kafkajsInternal, PATCHED_KAFKAJS_VERSION } from './kafkajs-internals.js';

/** The property of a partition assigner that holds its member's hook. */
export const BEFORE_REJOIN = Symbol.for('docstream.beforeRejoin');

/** The kafkajs version whose `ConsumerGroup.joinAndSync` this wraps. */
export const REJOIN_BARRIER_KAFKAJS = PATCHED_KAFKAJS_VERSION;

export interface HasRejoinHook {
  [BEFORE_REJOIN]?: () => Promise<void>;
}

/** The coordinator connection of a group member, as far as heartbeats go. */
interface CoordinatorLike {
  heartbeat(request: { groupId: string; groupGenerationId: number; memberId: string }): Promise<unknown>;
}

interface ConsumerGroupLike {
  assigners: HasRejoinHook[];
  groupId?: string;
  generationId?: number | null;
  coordinator?: CoordinatorLike | null;
  sessionTimeout?: number;
  /** Set by a join; cleared by a leave that the coordinator took, or by UNKNOWN_MEMBER_ID. */
  memberId: string | null;
  /** The consumer's cluster: one per kafkajs consumer, kept across its restarts. */
  cluster: object;
  joinAndSync(): Promise<void>;
  heartbeat(options: { interval: number }): Promise<void>;
  [REJOIN_NEEDED]?: Error;
}

/** Set on a group member whose last join failed (the error it failed with); cleared by a join. */
const REJOIN_NEEDED = Symbol('docstream.rejoinNeeded');

let installed: boolean | undefined;

/** The last group member each consumer (by its cluster) joined with. */
const lastGroup = new WeakMap<object, ConsumerGroupLike>();

/**
 * Wraps kafkajs's `joinAndSync` once per process. Returns false (and wraps nothing) when the installed
 * kafkajs is not the version the wrapper was written for.
 */
export function installRejoinBarrier(version: string = installedKafkajsVersion()): boolean {
  if (installed) return true;
  if (version !== REJOIN_BARRIER_KAFKAJS) return (installed = false);
  const proto = kafkajsInternal<{ prototype: ConsumerGroupLike }>('consumer/consumerGroup.js').prototype;
  const joinAndSync = proto.joinAndSync;
  proto.joinAndSync = async function (this: ConsumerGroupLike) {
    const hooks = this.assigners.flatMap((assigner) => assigner[BEFORE_REJOIN] ?? []);
    if (hooks.length > 0) {
      const alive = keepAlive(this);
      try {
        // A hook that fails must not keep the member out of its group.
        for (const hook of hooks) await hook().catch(() => undefined);
      } finally {
        alive.stop();
      }
    }
    rejoinAsCrashedMember(this);
    try {
      await joinAndSync.call(this);
      delete this[REJOIN_NEEDED];
    } catch (err) {
      this[REJOIN_NEEDED] = err instanceof Error ? err : new Error(String(err));
      throw err;
    }
  };
  const heartbeat = proto.heartbeat;
  proto.heartbeat = function (this: ConsumerGroupLike, options: { interval: number }) {
    const failed = this[REJOIN_NEEDED];
    if (failed !== undefined) return Promise.reject(rejoinNeeded(failed));
    return heartbeat.call(this, options);
  };
  return (installed = true);
}

interface ProtocolErrorClass {
  new (e: { type: string; code: number; retriable: boolean; message: string }): Error;
}

/**
 * The error a member whose last join failed gets at its next heartbeat, so that it joins again, as
 * Kafka's Java consumer keeps `rejoinNeeded` set until a join succeeds. kafkajs's runner tries a
 * failed join's fetch again without joining; a member whose id was cleared (UNKNOWN_MEMBER_ID) then
 * sends no heartbeat (kafkajs sends none without a member id), learns of no rebalance and fetches
 * on its old assignment for good, its commits refused. The error has REBALANCE_IN_PROGRESS's type:
 * the runner's "the group is rebalancing" path, which joins (through this barrier) and fetches again.
 * Joins that keep failing run out the runner's retries and crash the consumer, which restarts.
 */
function rejoinNeeded(failed: Error): Error {
  const { KafkaJSProtocolError } = kafkajsInternal<{ KafkaJSProtocolError: ProtocolErrorClass }>('errors.js');
  return new KafkaJSProtocolError({
    type: 'REBALANCE_IN_PROGRESS',
    code: 27,
    retriable: false,
    message: `the member's last join of its group failed (${failed.message}): joining again`,
  });
}

/** Heartbeats per session timeout while a barrier waits (Kafka's clients send about three). */
const HEARTBEATS_PER_SESSION = 3;

/** Answers that say the member is gone: no later heartbeat of this generation can help. */
const MEMBER_GONE = new Set(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'FENCED_INSTANCE_ID']);

/**
 * Heartbeats of the member's current generation every third of its session, until `stop`: nothing
 * else heartbeats inside a join, and a barrier longer than the session would otherwise have the
 * coordinator expire the member and hand its partitions on before their creates are recorded. A
 * coordinator preparing a rebalance answers REBALANCE_IN_PROGRESS and still renews the member's
 * session (it waits up to the rebalance timeout for the member's join), so the member is neither
 * expired nor its partitions handed on while the barrier records their creates. Nothing is sent for
 * a member that has not joined yet (no member id, generation or coordinator); a member the
 * coordinator no longer knows stops heartbeating; any other failure is tried again at the next beat.
 */
export function keepAlive(group: ConsumerGroupLike): { stop(): void } {
  const { memberId, generationId, coordinator, groupId } = group;
  if (!memberId || generationId == null || !coordinator || !groupId) return { stop: () => undefined };
  const every = Math.max(100, Math.floor((group.sessionTimeout ?? 30_000) / HEARTBEATS_PER_SESSION));
  let gone = false;
  let sending = false;
  const beat = () => {
    if (gone || sending) return;
    sending = true;
    coordinator
      .heartbeat({ groupId, groupGenerationId: generationId, memberId })
      .catch((err: unknown) => {
        if (MEMBER_GONE.has((err as { type?: string }).type ?? '')) gone = true;
      })
      .finally(() => (sending = false));
  };
  const timer = setInterval(beat, every);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * A restart after a crash whose leave did not reach the coordinator rejoins as that member. After a
 * crash kafkajs starts a new `ConsumerGroup` (no member id) on the consumer's same cluster object.
 * When the crashed one could not leave (the broker was away: its member id is still set), the
 * coordinator keeps that member (a restarted broker reloads it) until its session times out, and a
 * join as a new member waits that whole session timeout before the rebalance completes. So the new
 * group's first join sends the crashed member's id, as Kafka's own clients keep their member id
 * across a lost coordinator. If the coordinator no longer knows it (the session expired meanwhile),
 * kafkajs's join gets UNKNOWN_MEMBER_ID, forgets the id and joins again as a new member.
 */
function rejoinAsCrashedMember(group: ConsumerGroupLike): void {
  if (typeof group.cluster !== 'object' || group.cluster === null) return;
  const previous = lastGroup.get(group.cluster);
  lastGroup.set(group.cluster, group);
  if (!group.memberId && previous !== undefined && previous !== group && previous.memberId) {
    group.memberId = previous.memberId;
  }
}

/** Whether the barrier is in place (after `installRejoinBarrier`). */
export function rejoinBarrierInstalled(): boolean {
  return installed === true;
}
