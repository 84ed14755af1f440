/**
 * Kafka's answer to each request the connector will make, asked without writing a record: for
 * `docstream config check --connect`. Each probe sends the request whose authorisation is in
 * question, shaped so that an authorised principal gets a harmless refusal instead of a change:
 * Fetch at the log end (Read on a topic), Produce of an empty batch, refused by the broker's record
 * validation after the ACL check (Write), CreateTopics with validate_only (Create), OffsetFetch
 * (Describe on a group), Heartbeat of an unknown member (Read on a group), InitProducerId of a new
 * transactional id (Write on TransactionalId: the coordinator keeps an empty entry for it until
 * `transactional.id.expiration.ms`). docs/deployment.md lists them.
 */
import type { Admin } from 'kafkajs';
import { connectKafka, errorChain, wrapKafka } from './errors.js';
import type { ConnectionSettings } from './security-hints.js';

/** How the broker answered one probe. */
export type ProbeAnswer =
  | { outcome: 'allowed' }
  /** The authorizer refused it; `code` is Kafka's error name (e.g. TOPIC_AUTHORIZATION_FAILED). */
  | { outcome: 'denied'; code: string; message: string }
  /** Another refusal (`code`), or no answer: nothing said about the ACL. */
  | { outcome: 'failed'; code: string; message: string }
  | { outcome: 'untried'; reason: string };

export interface TopicFacts {
  partitions: number;
  /** The fewest replicas of any partition. */
  replication: number;
}

/** The parts of kafkajs 2.2.4's Cluster (src/cluster/index.js) the probes use. */
export interface ProbeCluster {
  addTargetTopic(topic: string): Promise<void>;
  findTopicPartitionMetadata(topic: string): Array<{ partitionId: number; leader: number }>;
  findBroker(request: { nodeId: number }): Promise<ProbeBroker>;
  findControllerBroker(): Promise<ProbeBroker>;
}

/** The parts of kafkajs 2.2.4's Broker (src/broker/index.js) the probes use. */
interface ProbeBroker {
  produce(request: {
    topicData: Array<{ topic: string; partitions: Array<{ partition: number; messages: never[] }> }>;
    acks: number;
    timeout: number;
  }): Promise<unknown>;
  fetch(request: {
    replicaId: number;
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: Array<{
      topic: string;
      partitions: Array<{ partition: number; fetchOffset: string; maxBytes: number }>;
    }>;
  }): Promise<unknown>;
  heartbeat(request: { groupId: string; groupGenerationId: number; memberId: string }): Promise<unknown>;
  initProducerId(request: { transactionalId: string; transactionTimeout: number }): Promise<unknown>;
  findGroupCoordinator(request: {
    groupId: string;
    coordinatorType: number;
  }): Promise<{ coordinator: { nodeId: number } }>;
}

/** kafkajs' resource type code for topics in DescribeConfigs (ConfigResourceTypes.TOPIC). */
const TOPIC_RESOURCE = 2;
/** FindCoordinator's key types: a group's coordinator, a transactional id's. */
const GROUP_COORDINATOR = 0;
const TRANSACTION_COORDINATOR = 1;
const READ_COMMITTED = 1;

const DENIED = new Set([
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
]);

/** Kafka's error name in a failure (`type` of kafkajs' protocol errors), or the error's name. */
function codeOf(error: unknown): string {
  for (const entry of errorChain(error)) if (typeof entry.type === 'string') return entry.type;
  return error instanceof Error ? error.name : 'unknown';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The answer of a request that an authorised principal gets refused with one of `harmless`. */
async function probe(send: () => Promise<unknown>, harmless: readonly string[] = []): Promise<ProbeAnswer> {
  try {
    await send();
    return { outcome: 'allowed' };
  } catch (error) {
    const code = codeOf(error);
    if (harmless.includes(code)) return { outcome: 'allowed' };
    if (DENIED.has(code)) return { outcome: 'denied', code, message: messageOf(error) };
    return { outcome: 'failed', code, message: messageOf(error) };
  }
}

const NO_CLUSTER: ProbeAnswer = {
  outcome: 'untried',
  reason: 'kafkajs is not the version whose internals the probe was written for',
};

export class KafkaAccessProbe {
  constructor(
    private readonly admin: Admin,
    private readonly cluster: ProbeCluster | undefined,
    private readonly connection: ConnectionSettings,
  ) {}

  connect(): Promise<void> {
    return connectKafka('connecting to the brokers', this.connection, () => this.admin.connect());
  }

  async disconnect(): Promise<void> {
    await this.admin.disconnect().catch(() => undefined);
  }

  /** How many brokers the cluster has (Metadata). */
  async brokerCount(): Promise<number> {
    const described = await wrapKafka('describing the cluster', () => this.admin.describeCluster());
    return described.brokers.length;
  }

  /** The topic's partitions and replication; null when it does not exist; a denial as an error. */
  async topic(topic: string): Promise<TopicFacts | null | ProbeAnswer> {
    try {
      const metadata = await this.admin.fetchTopicMetadata({ topics: [topic] });
      const found = metadata.topics.find((entry) => entry.name === topic);
      if (!found) return null;
      return {
        partitions: found.partitions.length,
        replication: Math.min(...found.partitions.map((p) => p.replicas.length)),
      };
    } catch (error) {
      const code = codeOf(error);
      if (code === 'UNKNOWN_TOPIC_OR_PARTITION') return null;
      return DENIED.has(code)
        ? { outcome: 'denied', code, message: messageOf(error) }
        : { outcome: 'failed', code, message: messageOf(error) };
    }
  }

  /** The named configs of a topic as the broker applies them (DescribeConfigs). */
  async topicConfigs(topic: string, names: string[]): Promise<Record<string, string> | ProbeAnswer> {
    try {
      const described = await this.admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: names }],
      });
      const configs: Record<string, string> = {};
      for (const resource of described.resources) {
        for (const entry of resource.configEntries) configs[entry.configName] = entry.configValue;
      }
      return configs;
    } catch (error) {
      const code = codeOf(error);
      return DENIED.has(code)
        ? { outcome: 'denied', code, message: messageOf(error) }
        : { outcome: 'failed', code, message: messageOf(error) };
    }
  }

  /** CreateTopics with validate_only: Create, the replication factor and the configs, nothing made. */
  mayCreate(spec: {
    topic: string;
    numPartitions: number;
    replicationFactor: number;
    configs?: Record<string, string>;
  }): Promise<ProbeAnswer> {
    return probe(() =>
      this.admin.createTopics({
        validateOnly: true,
        waitForLeaders: false,
        topics: [
          {
            topic: spec.topic,
            numPartitions: spec.numPartitions,
            replicationFactor: spec.replicationFactor,
            configEntries: Object.entries(spec.configs ?? {}).map(([name, value]) => ({ name, value })),
          },
        ],
      }),
    );
  }

  /** The leader of the topic's first partition, from metadata already loaded by `topic`. */
  private async leaderOf(topic: string): Promise<ProbeBroker> {
    const cluster = this.cluster!;
    await cluster.addTargetTopic(topic);
    const first = cluster.findTopicPartitionMetadata(topic).find((p) => p.partitionId === 0);
    if (!first || first.leader < 0) throw new Error(`partition 0 of ${topic} has no leader`);
    return cluster.findBroker({ nodeId: first.leader });
  }

  /**
   * The coordinator of a group or transactional id, asked of one broker: FindCoordinator's own
   * answer (an authorisation failure among them), which kafkajs' cluster replaces by "not found".
   */
  private async coordinatorOf(key: string, coordinatorType: number): Promise<ProbeBroker> {
    const cluster = this.cluster!;
    const broker = await cluster.findControllerBroker();
    const { coordinator } = await broker.findGroupCoordinator({ groupId: key, coordinatorType });
    return cluster.findBroker({ nodeId: coordinator.nodeId });
  }

  /** Read on the topic: a Fetch of partition 0 at its end offset, waiting for nothing. */
  async mayRead(topic: string): Promise<ProbeAnswer> {
    if (!this.cluster) return NO_CLUSTER;
    return probe(async () => {
      const [first] = await this.admin.fetchTopicOffsets(topic);
      const broker = await this.leaderOf(topic);
      await broker.fetch({
        replicaId: -1,
        isolationLevel: READ_COMMITTED,
        maxWaitTime: 0,
        minBytes: 0,
        maxBytes: 1024,
        topics: [{ topic, partitions: [{ partition: 0, fetchOffset: first?.high ?? '0', maxBytes: 1024 }] }],
      });
    });
  }

  /**
   * Write on the topic: a Produce of a batch without records to partition 0. The broker checks the
   * ACL first, then refuses the batch itself (INVALID_RECORD): nothing is appended.
   */
  async mayWrite(topic: string): Promise<ProbeAnswer> {
    if (!this.cluster) return NO_CLUSTER;
    return probe(async () => {
      const broker = await this.leaderOf(topic);
      await broker.produce({
        topicData: [{ topic, partitions: [{ partition: 0, messages: [] }] }],
        acks: -1,
        timeout: 5_000,
      });
    }, ['INVALID_RECORD', 'CORRUPT_MESSAGE']);
  }

  /** Describe on the group: the group's committed offsets (OffsetFetch of all its topics). */
  mayDescribeGroup(groupId: string): Promise<ProbeAnswer> {
    return probe(async () => {
      // FindCoordinator first, for its own answer to a denial (see `coordinatorOf`).
      if (this.cluster) await this.coordinatorOf(groupId, GROUP_COORDINATOR);
      await this.admin.fetchOffsets({ groupId });
    });
  }

  /**
   * Read on the group: a Heartbeat of a member the coordinator does not know. The coordinator checks
   * the ACL first, then answers UNKNOWN_MEMBER_ID; the group and its members are left as they are.
   */
  async mayJoinGroup(groupId: string): Promise<ProbeAnswer> {
    if (!this.cluster) return NO_CLUSTER;
    return probe(async () => {
      const coordinator = await this.coordinatorOf(groupId, GROUP_COORDINATOR);
      await coordinator.heartbeat({ groupId, groupGenerationId: -1, memberId: 'docstream-config-check' });
    }, ['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'GROUP_ID_NOT_FOUND']);
  }

  /** Describe and Write on the transactional id: InitProducerId at its transaction coordinator. */
  async mayUseTransactionalId(transactionalId: string): Promise<ProbeAnswer> {
    if (!this.cluster) return NO_CLUSTER;
    return probe(async () => {
      const coordinator = await this.coordinatorOf(transactionalId, TRANSACTION_COORDINATOR);
      await coordinator.initProducerId({ transactionalId, transactionTimeout: 60_000 });
    });
  }
}
