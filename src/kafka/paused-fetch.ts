/**
 * Lets a kafkajs 2.2.4 consumer with nothing to fetch sleep until something can change that, instead
 * of waking every `maxWaitTime`.
 *
 * Why: when no partition a consumer holds is active, kafkajs's `ConsumerGroup.fetch`
 * (src/consumer/consumerGroup.js: `if (!requests.length) { await sleep(this.maxWaitTime); return [] }`)
 * sleeps `maxWaitTime` and returns nothing; its Runner heartbeats if one is due and calls it again.
 * The state and input readers (`partition-reader.ts`, with a short maxWaitTime so that a resume is
 * fetched at once) keep every partition paused while idle, so an idle `docstream run` would wake many
 * times a second for nothing (docs/performance.md). A longer maxWaitTime would delay every resume (a
 * restore's start, a resumed document's read) by as much.
 *
 * What the replacement does, keeps and does not keep is told at `fixPausedFetchLoops`.
 */
import { internalsPatchable, kafkajsInternal } from './kafkajs-internals.js';
import { optimisationOn } from '../util/optimisations.js';

interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/** The fields of kafkajs's ConsumerGroup the replacement uses. */
export interface ConsumerGroupLike {
  maxWaitTime: number;
  /** When the group's coordinator was last heard from; a heartbeat is due `heartbeatInterval` later. */
  lastRequest: number;
  cluster: { refreshMetadataIfNecessary(): Promise<void> };
  subscriptionState: { active(): TopicPartitions[]; assigned(): TopicPartitions[] };
  checkForStaleAssignment(): void;
  filterPartitionsByNode(nodeId: number, topicPartitions: TopicPartitions[]): TopicPartitions[];
  seekOffsets(topicPartitions: TopicPartitions[]): Promise<void>;
  recoverFromFetch(error: unknown): Promise<void>;
  fetch(nodeId: number): Promise<unknown[]>;
  resume(topicPartitions: TopicPartitions[]): void;
}

/** The fields of kafkajs's Runner the replacement uses. */
export interface RunnerLike {
  consumerGroup: ConsumerGroupLike;
  heartbeatInterval: number;
  fetch(nodeId: number): Promise<unknown[]>;
  stop(): Promise<void>;
}

interface IdleWait {
  timer: NodeJS.Timeout | undefined;
  /** The fetches sleeping in it. */
  sleepers: Array<() => void>;
}

/** Per consumer group: what may end an idle wait, and the idle wait its fetchers (one per broker) share. */
interface IdleWaitState {
  /** Counts the wakes, so that a fetch that was woken before its idle wait began does not idle wait. */
  wakes: number;
  /** Brokers (node ids) whose fetcher's last fetch may have returned batches: one round before an idle wait. */
  fetched: Set<number>;
  heartbeatIntervalMs?: number;
  idleWait?: IdleWait;
}

const states = new WeakMap<ConsumerGroupLike, IdleWaitState>();

function stateOf(group: ConsumerGroupLike): IdleWaitState {
  let state = states.get(group);
  if (!state) {
    state = { wakes: 0, fetched: new Set() };
    states.set(group, state);
  }
  return state;
}

function endIdleWait(state: IdleWaitState): void {
  const current = state.idleWait;
  if (!current) return;
  state.idleWait = undefined;
  clearTimeout(current.timer);
  for (const sleeper of current.sleepers) sleeper();
}

/** Ends the group's idle wait, if any, and any idle wait about to begin in a fetch already under way. */
function wake(group: ConsumerGroupLike): void {
  const state = stateOf(group);
  state.wakes += 1;
  endIdleWait(state);
}

function anyActive(group: ConsumerGroupLike): boolean {
  return group.subscriptionState.active().some(({ partitions }) => partitions.length > 0);
}

/** When the idle wait ends without a wake: the next heartbeat's due time, maxWaitTime from now at least. */
function idleWaitUntil(group: ConsumerGroupLike, heartbeatIntervalMs: number | undefined): number {
  const now = Date.now();
  const floor = now + group.maxWaitTime;
  if (heartbeatIntervalMs === undefined) return floor;
  // kafkajs sends the heartbeat once `now >= lastRequest + interval`.
  return Math.max(floor, group.lastRequest + heartbeatIntervalMs);
}

function waitIdle(group: ConsumerGroupLike, state: IdleWaitState): Promise<void> {
  return new Promise((resolve) => {
    if (state.idleWait) {
      state.idleWait.sleepers.push(resolve);
      return;
    }
    const until = idleWaitUntil(group, state.heartbeatIntervalMs);
    const current: IdleWait = { timer: undefined, sleepers: [resolve] };
    state.idleWait = current;
    const check = (): void => {
      // A timer may fire a little before Date.now() reaches its time: the heartbeat would not be due.
      const left = until - Date.now();
      if (left > 0) current.timer = setTimeout(check, left);
      else endIdleWait(state);
    };
    check();
  });
}

/** kafkajs's ConsumerGroup class (the module its consumers load: same path, same module). */
export function consumerGroupClass(): { prototype: ConsumerGroupLike } {
  return kafkajsInternal('consumer/consumerGroup.js');
}

/** kafkajs's Runner class, which drives a consumer group's fetch loop. */
export function runnerClass(): { prototype: RunnerLike } {
  return kafkajsInternal('consumer/runner.js');
}

let fixed = false;

/**
 * Puts the replacements on kafkajs's ConsumerGroup and Runner, once per process, on kafkajs 2.2.4 only.
 *
 * Only while no partition of the consumer is active (all paused, or none assigned): `fetch` does what
 * kafkajs's does before it looks for work (the metadata refresh when due, the check for partitions
 * added to a subscribed topic, which rejoins; pending seeks and the group's offsets, so a resumed
 * partition is fetched at once), then waits idle until the next heartbeat is due (never less than
 * maxWaitTime, as before) and returns nothing. A resume, the Runner's stop (stop, disconnect, a
 * crash) and a failed fetch of another broker's fetcher end the idle wait at once. What is kept:
 * - heartbeats on time (the idle wait ends when one is due), so the session holds and a rebalance is
 *   noticed at the next heartbeat, as before (then within maxWaitTime after it was due);
 * - no wait added to a resume, nor to a stop (the `ConsumerGroup.resume` and `Runner.stop` of
 *   kafkajs wake the idle wait);
 * - everything else: while any partition is active, kafkajs's own `fetch` runs unchanged.
 * It applies to every kafkajs consumer of the process: the main consumer pauses all it holds during
 * an outage of the API (it then heartbeats as before and resumes without waiting out its
 * maxWaitTime), and a member holding no partition waits idle until its heartbeat, which is where it learns
 * of a rebalance. Not kept: a change of the cluster's brokers while nothing is active is acted on at
 * the next heartbeat rather than within maxWaitTime (kafkajs rebuilds its per-broker fetchers on it).
 *
 * The first fetch of a broker's fetcher that finds nothing active after one that fetched returns at
 * once, empty, and only the next one waits idle. kafkajs's fetcher loop (src/consumer/fetcher.js) keeps
 * the batches of its last fetch in its suspended frame while it awaits the next fetch: V8 leaves a
 * finished loop iteration's registers as they were. An idle wait right after the last batches of a restore
 * would keep them (decoded records and their fetch buffers) reachable until the next heartbeat, past
 * the full collection `restore-garbage.ts` asks for, and then as garbage in the old generation of an
 * idle process for good. The empty round overwrites them first.
 */
export function fixPausedFetchLoops(): void {
  if (fixed) return;
  fixed = true;
  if (!internalsPatchable() || !optimisationOn('kafkajs-paused-fetch')) return;
  const group = consumerGroupClass().prototype;
  const fetch = group.fetch;
  group.fetch = async function (this: ConsumerGroupLike, nodeId: number) {
    const state = stateOf(this);
    if (anyActive(this)) {
      state.fetched.add(nodeId);
      return fetch.call(this, nodeId);
    }
    const wakes = state.wakes;
    try {
      // What kafkajs's fetch does before it looks for work, in its order and with its recovery.
      await this.cluster.refreshMetadataIfNecessary();
      this.checkForStaleAssignment();
      await this.seekOffsets(this.filterPartitionsByNode(nodeId, this.subscriptionState.assigned()));
    } catch (error) {
      await this.recoverFromFetch(error);
      return [];
    }
    // Resumed meanwhile: fetch it now.
    if (anyActive(this)) {
      state.fetched.add(nodeId);
      return fetch.call(this, nodeId);
    }
    // The fetcher still holds what its last fetch returned: an empty round lets go of it before an idle wait.
    if (state.fetched.delete(nodeId)) return [];
    if (state.wakes === wakes) await waitIdle(this, state);
    return [];
  };
  const resume = group.resume;
  group.resume = function (this: ConsumerGroupLike, topicPartitions: TopicPartitions[]) {
    resume.call(this, topicPartitions);
    wake(this);
  };
  const runner = runnerClass().prototype;
  const runnerFetch = runner.fetch;
  runner.fetch = async function (this: RunnerLike, nodeId: number) {
    stateOf(this.consumerGroup).heartbeatIntervalMs = this.heartbeatInterval;
    try {
      return await runnerFetch.call(this, nodeId);
    } catch (error) {
      // The other brokers' fetchers are waited for before the group rejoins or the consumer crashes.
      wake(this.consumerGroup);
      throw error;
    }
  };
  const stop = runner.stop;
  runner.stop = function (this: RunnerLike) {
    // kafkajs's stop marks the Runner stopped before it waits for the fetchers: wake them after.
    const stopped = stop.call(this);
    wake(this.consumerGroup);
    return stopped;
  };
}
