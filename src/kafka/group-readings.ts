/**
 * A reading of a consumer group on its input topic (the topic's end offsets and the group's
 * committed offsets) in two Kafka requests, for the lag timer that reads twice a second while the
 * group has work (at a trickle, every request is kafkajs CPU a document pays for).
 *
 * Why kafkajs internals: through kafkajs's public admin the same reading costs five requests, and
 * no option changes it. The admin's client is built with `metadataMaxAge` 0, so every call
 * refreshes metadata (Metadata); `fetchTopicOffsets` lists both ends of the topic (two ListOffsets);
 * `fetchOffsets` asks for the group's coordinator on every call (FindCoordinator) before OffsetFetch.
 * Here the admin's own Cluster object (the one its calls use, captured in `adminWithCluster`) is
 * asked for what a reading needs: ListOffsets latest to the partitions' leaders and OffsetFetch to
 * the coordinator found last time, with the metadata and brokers the cluster already holds. When
 * and how it asks again is told at `GroupOffsetReader`.
 */
import type { Admin, Kafka } from 'kafkajs';
import { errorChain } from './errors.js';
import { internalsPatchable } from './kafkajs-internals.js';
import { retry } from '../util/retry.js';
import { optimisationOn } from '../util/optimisations.js';

/** A group's committed next offset on one partition (null: none), with the metadata committed beside it. */
export interface GroupCommit {
  offset: string | null;
  metadata: string | null;
}

export interface PartitionOffsets {
  partition: number;
  /** First offset still stored. */
  low: string;
  /** Offset the next record will get (high watermark). */
  high: string;
}

/** The parts of kafkajs 2.2.4's Cluster (src/cluster/index.js) a reading uses. */
export interface ReadingCluster {
  brokerPool: { metadata: unknown };
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findTopicPartitionMetadata(topic: string): Array<{ partitionId: number }>;
  fetchTopicsOffset(
    topics: Array<{ topic: string; fromBeginning: boolean; partitions: Array<{ partition: number }> }>,
  ): Promise<Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>>;
  findGroupCoordinator(request: { groupId: string }): Promise<ReadingBroker>;
  findBroker(request: { nodeId: number }): Promise<ReadingBroker>;
}

/** The parts of kafkajs 2.2.4's Broker (src/broker/index.js) a reading uses. */
export interface ReadingBroker {
  nodeId: number;
  offsetFetch(request: {
    groupId: string;
    topics: Array<{ topic: string; partitions: Array<{ partition: number }> }>;
  }): Promise<{ responses: CommittedOffsets }>;
}

type CommittedOffsets = Array<{
  topic: string;
  partitions: Array<{ partition: number; offset: string; metadata?: string | null }>;
}>;

export interface GroupReading {
  /** The input topic's partitions by number; `low` may be up to `lowMaxAgeMs` old (see the header). */
  ends: PartitionOffsets[];
  committed: Map<number, GroupCommit>;
}

interface ReaderOptions {
  /** How old the listed log start offsets may be (default 60 s). */
  lowMaxAgeMs?: number;
  /** How old the cluster's metadata may be before a reading refreshes it (default 5 min). */
  metadataMaxAgeMs?: number;
  /** Tries of one reading, the first included (default 3). */
  attempts?: number;
  now?: () => number;
}

const DEFAULT_LOW_MAX_AGE_MS = 60_000;
const DEFAULT_METADATA_MAX_AGE_MS = 300_000;

/** Answers after which the group's coordinator must be asked for again. */
const COORDINATOR_MOVED = new Set(['NOT_COORDINATOR_FOR_GROUP', 'GROUP_COORDINATOR_NOT_AVAILABLE']);
/** Answers after which the cluster's metadata (leaders, partitions, brokers) is stale. */
const METADATA_STALE = new Set([
  'NOT_LEADER_FOR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
]);
/** kafkajs errors that mean a broker is gone, unreachable, or not in the metadata the cluster holds. */
const BROKER_GONE = new Set([
  'KafkaJSBrokerNotFound',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSTopicMetadataNotLoaded',
  'KafkaJSMetadataNotLoaded',
]);

/** What a failed try says about the cached coordinator and metadata. */
export function staleAfter(error: unknown): { coordinator: boolean; metadata: boolean; retriable: boolean } {
  const chain = errorChain(error);
  const types = chain.map((entry) => String(entry.type));
  const names = chain.map((entry) => String(entry.name));
  const brokerGone = names.some((name) => BROKER_GONE.has(name));
  const metadata = brokerGone || types.some((type) => METADATA_STALE.has(type));
  const coordinator = metadata || types.some((type) => COORDINATOR_MOVED.has(type));
  const retriable = coordinator || chain.some((entry) => entry.retriable === true);
  return { coordinator, metadata, retriable };
}

/** Kafka's committed offsets as docstream keeps them: -1 (none) as null, empty metadata as null. */
export function commitsOf(fetched: CommittedOffsets, topic: string): Map<number, GroupCommit> {
  const out = new Map<number, GroupCommit>();
  for (const entry of fetched.find((item) => item.topic === topic)?.partitions ?? []) {
    const offset = Number(entry.offset) < 0 ? null : entry.offset;
    out.set(entry.partition, { offset, metadata: offset === null ? null : entry.metadata || null });
  }
  return out;
}

/**
 * What kafkajs would redo on each call is redone on the answers that call for it: the coordinator
 * is asked for again after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or its broker gone or
 * unreachable; metadata is refreshed after a leader change, an unknown partition, a broker gone or
 * a connection error, when the cluster has none (a reconnected admin) and at least every five
 * minutes (kafkajs's default for its consumers). Then the reading is tried again; the coordinator
 * lookup keeps kafkajs's own retries.
 *
 * The log start offsets (`low`) change only when retention or a deletion removes records; a reading
 * lists them (a third request) when the last list is a minute old, not every time. They are for
 * telling whether a partition without a commit, or committed below its log start, has records left.
 */
export class GroupOffsetReader {
  private readonly coordinators = new Map<string, number>();
  /** When this reader last refreshed metadata (its first reading, if the cluster had some then). */
  private metadataAt: number | undefined;
  private metadataStale = false;
  private readonly lows = new Map<string, { at: number; byPartition: Map<number, string> }>();

  constructor(
    private readonly cluster: ReadingCluster,
    private readonly options: ReaderOptions = {},
  ) {}

  private now(): number {
    return (this.options.now ?? performance.now.bind(performance))();
  }

  /** The topic's ends and the group's commits; throws what the last try met when all tries failed. */
  read(groupId: string, topic: string): Promise<GroupReading> {
    return retry(
      async () => {
        try {
          return await this.tryRead(groupId, topic);
        } catch (error) {
          const stale = staleAfter(error);
          if (stale.coordinator) this.coordinators.delete(groupId);
          if (stale.metadata) this.metadataStale = true;
          throw error;
        }
      },
      {
        attempts: this.options.attempts ?? 3,
        backoff: { initialMs: 100, maxMs: 1_000 },
        classify: (error) => ({ retry: staleAfter(error).retriable }),
      },
    );
  }

  private async tryRead(groupId: string, topic: string): Promise<GroupReading> {
    const partitions = (await this.partitionsOf(topic)).map((partition) => ({ partition }));
    const [highs, committed, lows] = await Promise.all([
      this.cluster.fetchTopicsOffset([{ topic, fromBeginning: false, partitions }]),
      this.commits(groupId, topic, partitions),
      this.lowsOf(topic, partitions),
    ]);
    const ends = (highs.find((entry) => entry.topic === topic)?.partitions ?? [])
      .map(({ partition, offset }) => ({ partition, low: lows.get(partition) ?? '0', high: offset }))
      .sort((a, b) => a.partition - b.partition);
    return { ends, committed };
  }

  /** The topic's partitions by the metadata the cluster holds, refreshed when stale, missing or old. */
  private async partitionsOf(topic: string): Promise<number[]> {
    // Adds the topic to those the cluster keeps metadata of; refreshes only when it was not yet one.
    await this.cluster.addTargetTopic(topic);
    const now = this.now();
    this.metadataAt ??= now;
    const old = now - this.metadataAt >= (this.options.metadataMaxAgeMs ?? DEFAULT_METADATA_MAX_AGE_MS);
    let known = this.cluster.brokerPool.metadata ? this.cluster.findTopicPartitionMetadata(topic) : [];
    if (this.metadataStale || old || known.length === 0) {
      await this.cluster.refreshMetadata();
      this.metadataStale = false;
      this.metadataAt = now;
      known = this.cluster.findTopicPartitionMetadata(topic);
    }
    return known.map((entry) => entry.partitionId).sort((a, b) => a - b);
  }

  private async commits(
    groupId: string,
    topic: string,
    partitions: Array<{ partition: number }>,
  ): Promise<Map<number, GroupCommit>> {
    const nodeId = this.coordinators.get(groupId);
    const coordinator =
      nodeId === undefined
        ? await this.cluster.findGroupCoordinator({ groupId })
        : await this.cluster.findBroker({ nodeId });
    this.coordinators.set(groupId, coordinator.nodeId);
    const { responses } = await coordinator.offsetFetch({ groupId, topics: [{ topic, partitions }] });
    return commitsOf(responses, topic);
  }

  private async lowsOf(
    topic: string,
    partitions: Array<{ partition: number }>,
  ): Promise<Map<number, string>> {
    const now = this.now();
    const listed = this.lows.get(topic);
    const fresh =
      listed !== undefined &&
      now - listed.at < (this.options.lowMaxAgeMs ?? DEFAULT_LOW_MAX_AGE_MS) &&
      partitions.every(({ partition }) => listed.byPartition.has(partition));
    if (fresh) return listed.byPartition;
    const answer = await this.cluster.fetchTopicsOffset([{ topic, fromBeginning: true, partitions }]);
    const byPartition = new Map(
      (answer.find((entry) => entry.topic === topic)?.partitions ?? []).map((p) => [p.partition, p.offset]),
    );
    this.lows.set(topic, { at: now, byPartition });
    return byPartition;
  }
}

const CREATE_CLUSTER = 'private:Kafka:createCluster';

/**
 * `kafka.admin()`, and the Cluster object the admin is built on (kafkajs keeps it private: the
 * client's cluster factory is wrapped for the one call). No cluster when kafkajs is not the version
 * this was written for, or no longer has that factory: readings then go through the public admin.
 */
export function adminWithCluster(kafka: Kafka): { admin: Admin; cluster: ReadingCluster | undefined } {
  if (!optimisationOn('kafkajs-group-readings')) return { admin: kafka.admin(), cluster: undefined };
  return adminAndCluster<ReadingCluster>(kafka);
}

/**
 * `kafka.admin()` and its Cluster object, typed by the caller as the parts it uses; no cluster on
 * another kafkajs version. `adminWithCluster` and the access probes (`access-probes.ts`) use it.
 */
export function adminAndCluster<C>(kafka: Kafka): { admin: Admin; cluster: C | undefined } {
  if (!internalsPatchable()) return { admin: kafka.admin(), cluster: undefined };
  const holder = kafka as unknown as Record<symbol, unknown>;
  const key = Object.getOwnPropertySymbols(holder).find((symbol) => symbol.description === CREATE_CLUSTER);
  const create = key === undefined ? undefined : holder[key];
  if (key === undefined || typeof create !== 'function') return { admin: kafka.admin(), cluster: undefined };
  let cluster: C | undefined;
  holder[key] = (...args: unknown[]) => (cluster = (create as (...a: unknown[]) => C)(...args));
  try {
    const admin = kafka.admin();
    return { admin, cluster };
  } finally {
    holder[key] = create;
  }
}
