/**
 * A "before the partitions are released" callback for kafkajs consumers, which have none.
 *
 * kafkajs re-joins its group as soon as it learns of a rebalance, and under the eager protocol a
 * join gives up every partition the member holds. docstream must first record what it did for them
 * (the submissions it created), as Kafka Streams commits a task before it hands the task over;
 * otherwise the next owner reads no state and submits the same documents again.
 *
 * How: `ConsumerGroup.prototype.joinAndSync`, the one path every (re)join takes (start, rebalance,
 * unknown member, stale metadata), awaits the hook that the member's own partition assigner carries
 * under `BEFORE_REJOIN` before it joins. The hook bounds its own wait; the join then goes on as
 * kafkajs wrote it. Applied only to the kafkajs version it was written against; on any other the
 * consumer joins without the barrier, `installRejoinBarrier` says so, and the Kafka client's one
 * start-up line (`unpatchedNotice`) names it.
 */
import { installedKafkajsVersion, kafkajsInternal, PATCHED_KAFKAJS_VERSION } from './kafkajs-internals.js';

/** The property of a partition assigner that holds its member's hook. */
export const BEFORE_REJOIN = Symbol.for('docstream.beforeRejoin');

/** The kafkajs version whose `ConsumerGroup.joinAndSync` this wraps. */
export const REJOIN_BARRIER_KAFKAJS = PATCHED_KAFKAJS_VERSION;

export interface HasRejoinHook {
  [BEFORE_REJOIN]?: () => Promise<void>;
}

interface ConsumerGroupLike {
  assigners: HasRejoinHook[];
  joinAndSync(): Promise<void>;
}

let installed: boolean | undefined;

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
    for (const assigner of this.assigners) {
      const hook = assigner[BEFORE_REJOIN];
      // A hook that fails must not keep the member out of its group.
      if (hook) await hook().catch(() => undefined);
    }
    return joinAndSync.call(this);
  };
  return (installed = true);
}

/** Whether the barrier is in place (after `installRejoinBarrier`). */
export function rejoinBarrierInstalled(): boolean {
  return installed === true;
}
