/**
 * Topic and consumer-group administration: idempotent topic creation, descriptions, a partition's
 * offsets (ListOffsets, by timestamp too), and a group's committed offsets, read and written from
 * outside the group. What `replay` makes of them is planned in `operator/replay-plan.ts`.
 */
import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import { connectKafka, errorChain, KafkaError, kafkaError, wrapKafka } from './errors.js';
import { retry } from '../util/retry.js';
import type { ConnectionSettings } from './security-hints.js';
import { advertisedAddressOf } from './sticky-assignor.js';
import {
  commitsOf,
  type GroupCommit,
  type GroupOffsetReader,
  type GroupReading,
  type PartitionOffsets,
} from './group-readings.js';

const { AssignerProtocol } = kafkajs;

/** kafkajs' resource type code for topics in DescribeConfigs (ConfigResourceTypes.TOPIC). */
const TOPIC_RESOURCE = 2;

interface TopicSpec {
  topic: string;
  numPartitions: number;
  /** Defaults to 1 (a single-broker cluster); production sets 3. */
  replicationFactor?: number;
  /** Topic configs, e.g. `{ 'cleanup.policy': 'compact' }`. */
  configs?: Record<string, string>;
}

interface TopicMismatch {
  topic: string;
  problem: string;
}

interface EnsureTopicsResult {
  created: string[];
  existing: string[];
  /** Existing topics whose partition count or configs differ from the spec (they are left as they are). */
  mismatches: TopicMismatch[];
}

interface PartitionInfo {
  partition: number;
  leader: number;
  replicas: number[];
  isr: number[];
}

interface TopicDescription {
  topic: string;
  partitions: PartitionInfo[];
  configs: Record<string, string>;
}

// Declared beside the reading that fills them, so that group-readings.ts imports nothing from here.
export type { GroupCommit, PartitionOffsets };

interface GroupDescription {
  groupId: string;
  /** Empty, Stable, PreparingRebalance, CompletingRebalance or Dead. */
  state: string;
  members: number;
}

/** One member of a consumer group as the coordinator describes it. */
export interface GroupMember {
  memberId: string;
  clientId: string;
  /** The member's address as the broker sees it (e.g. "/10.0.0.5"), without the leading slash. */
  clientHost: string;
  /** Partitions by topic the member holds in the current generation. */
  assignment: Record<string, number[]>;
  /** The metrics address the member announced in its join (`sticky-assignor.ts`), or null. */
  advertised: string | null;
}

export interface GroupMembers {
  groupId: string;
  state: string;
  /** The assignor the group runs (e.g. docstream-sticky, RoundRobinAssigner). */
  protocol: string;
  members: GroupMember[];
}

interface EnsureTopicsOptions {
  /** How long creation races and metadata propagation are waited out (default 60 s). */
  timeoutMs?: number;
}

const DEFAULT_ENSURE_TIMEOUT_MS = 60_000;
const ENSURE_FIRST_DELAY_MS = 100;
const ENSURE_MAX_DELAY_MS = 2_000;
const ALREADY_EXISTS = new Set(['TOPIC_ALREADY_EXISTS']);
/**
 * Broker answers that a later attempt can change: metadata not yet propagated to the broker asked,
 * a controller or leader moving, a request timing out.
 */
const TRANSIENT_TYPES = new Set([
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'NOT_CONTROLLER',
  'REQUEST_TIMED_OUT',
  'NOT_ENOUGH_REPLICAS',
  'TOPIC_ALREADY_EXISTS',
]);

function hasErrorType(error: unknown, types: Set<string>): boolean {
  return errorChain(error).some((entry) => types.has(String(entry.type)));
}

function isTransient(error: unknown): boolean {
  return errorChain(error).some(
    (entry) =>
      entry.retriable === true ||
      TRANSIENT_TYPES.has(String(entry.type)) ||
      entry.name === 'KafkaJSNumberOfRetriesExceeded' ||
      entry.name === 'KafkaJSConnectionError' ||
      entry.name === 'KafkaJSRequestTimeoutError',
  );
}

/** The broker's own words, e.g. "This server does not host this topic-partition (UNKNOWN_TOPIC_OR_PARTITION)". */
function describeAnswer(error: unknown): string {
  const chain = errorChain(error);
  const typed = chain.find((entry) => typeof entry.type === 'string');
  const text = error instanceof Error ? error.message : String(error);
  return typed ? `${String(typed.message ?? text)} (${String(typed.type)})` : text;
}

/** States in which a group has no members, so its offsets may be changed from outside. */
export const INACTIVE_GROUP_STATES = new Set(['Empty', 'Dead']);

export class KafkaAdmin {
  private readonly admin: Admin;
  /** The client's brokers and protocol, so that a failed first connection names the setting. */
  private readonly connection: ConnectionSettings | undefined;
  /** Readings of a group in two requests (`group-readings.ts`); without it, through the public admin. */
  private readonly readings: GroupOffsetReader | undefined;

  constructor(admin: Admin, connection?: ConnectionSettings, readings?: GroupOffsetReader) {
    this.admin = admin;
    this.connection = connection;
    this.readings = readings;
  }

  /** Calls `listener` with the API name (e.g. "ListOffsets") of every request this client sends. */
  onRequest(listener: (apiName: string) => void): () => void {
    return this.admin.on(this.admin.events.REQUEST, (event) => listener(event.payload.apiName));
  }

  connect(): Promise<void> {
    return connectKafka('connecting the admin client', this.connection, () => this.admin.connect());
  }

  disconnect(): Promise<void> {
    return wrapKafka('disconnecting the admin client', () => this.admin.disconnect());
  }

  async listTopics(): Promise<string[]> {
    return wrapKafka('listing topics', () => this.admin.listTopics());
  }

  /**
   * Whether a topic exists as this principal sees it. Kafka lists only the topics a principal may
   * Describe, so a topic missing from `listTopics` may exist behind an ACL: asked by name, the
   * broker says which (UNKNOWN_TOPIC_OR_PARTITION or TOPIC_AUTHORIZATION_FAILED).
   */
  async topicPresence(topic: string): Promise<'exists' | 'missing' | 'not-authorized'> {
    if ((await this.listTopics()).includes(topic)) return 'exists';
    try {
      await this.admin.fetchTopicMetadata({ topics: [topic] });
      return 'exists';
    } catch (error) {
      const types = errorChain(error).map((e) => e.type);
      if (types.includes('TOPIC_AUTHORIZATION_FAILED')) return 'not-authorized';
      if (types.includes('UNKNOWN_TOPIC_OR_PARTITION')) return 'missing';
      throw kafkaError(error, `describing topic ${topic}`);
    }
  }

  /**
   * Creates the topics that do not exist and checks the ones that do. Never changes an existing
   * topic: a wrong partition count or config is reported in `mismatches` for the caller to judge.
   *
   * Several instances may run this at once on new topics: creation races ("already exists") and
   * the answers of a broker whose metadata has not caught up yet ("does not host this
   * topic-partition", "leader not available") are retried with back-off until every partition of
   * every topic has a leader, within `timeoutMs`. Then, or on an answer no retry can change
   * (invalid config, replication factor, authorisation), a KafkaError names the topics and the
   * broker's answer.
   */
  async ensureTopics(specs: TopicSpec[], options: EnsureTopicsOptions = {}): Promise<EnsureTopicsResult> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_ENSURE_TIMEOUT_MS;
    const names = specs.map((spec) => spec.topic);
    const created = new Set<string>();
    /** Why the last try did not end it: the broker's answer, or the partitions still without a leader. */
    let problem = '';
    let attempts = 0;
    const notReady = new Error('topics not ready yet');
    try {
      await retry(
        async (tries) => {
          attempts = tries;
          let doing = `listing topics`;
          try {
            const listed = new Set(await this.admin.listTopics());
            for (const spec of specs) {
              if (listed.has(spec.topic) || created.has(spec.topic)) continue;
              doing = `creating topic ${spec.topic}`;
              // One topic per request: kafkajs reports "already exists" for a request as a whole.
              const made = await this.admin
                .createTopics({
                  waitForLeaders: false,
                  topics: [
                    {
                      topic: spec.topic,
                      numPartitions: spec.numPartitions,
                      replicationFactor: spec.replicationFactor ?? 1,
                      configEntries: Object.entries(spec.configs ?? {}).map(([name, value]) => ({
                        name,
                        value,
                      })),
                    },
                  ],
                })
                .catch((error: unknown) => {
                  if (hasErrorType(error, ALREADY_EXISTS)) return false;
                  throw error;
                });
              if (made) created.add(spec.topic);
            }
            doing = `waiting for leaders of ${names.join(', ')}`;
            const leaderless = await this.leaderlessPartitions(names);
            if (leaderless.length === 0) return;
            problem = `partitions without a leader yet: ${leaderless.join(', ')}`;
          } catch (error) {
            if (!isTransient(error)) {
              throw new KafkaError(`${doing}: ${describeAnswer(error)}`, { retriable: false, cause: error });
            }
            problem = `${doing}: ${describeAnswer(error)}`;
          }
          throw notReady;
        },
        {
          budgetMs: timeoutMs,
          lastTryAtBudget: true,
          backoff: { initialMs: ENSURE_FIRST_DELAY_MS, maxMs: ENSURE_MAX_DELAY_MS },
          classify: (error) => (error === notReady ? { retry: true } : { retry: false }),
        },
      );
    } catch (error) {
      if (error !== notReady) throw error;
      throw new KafkaError(
        `topics ${names.join(', ')} not ready after ${attempts} attempts in ${timeoutMs} ms; last answer: ${problem}`,
        { retriable: true },
      );
    }
    const present = specs.filter((spec) => !created.has(spec.topic));
    const mismatches: TopicMismatch[] = [];
    for (const spec of present) {
      const description = await this.describeTopic(spec.topic, Object.keys(spec.configs ?? {}));
      if (description.partitions.length !== spec.numPartitions) {
        mismatches.push({
          topic: spec.topic,
          problem: `has ${description.partitions.length} partitions, expected ${spec.numPartitions}`,
        });
      }
      for (const [name, value] of Object.entries(spec.configs ?? {})) {
        if (description.configs[name] !== value) {
          mismatches.push({
            topic: spec.topic,
            problem: `${name} is ${description.configs[name] ?? 'unset'}, expected ${value}`,
          });
        }
      }
    }
    return {
      created: names.filter((name) => created.has(name)),
      existing: present.map((spec) => spec.topic),
      mismatches,
    };
  }

  /** `topic/partition` of every partition without a leader; throws while a topic is unknown. */
  private async leaderlessPartitions(topics: string[]): Promise<string[]> {
    const metadata = await this.admin.fetchTopicMetadata({ topics });
    const out: string[] = [];
    for (const topic of topics) {
      const found = metadata.topics.find((entry) => entry.name === topic);
      if (!found || found.partitions.length === 0) {
        out.push(`${topic}/*`);
        continue;
      }
      for (const partition of found.partitions) {
        if (partition.leader < 0) out.push(`${topic}/${partition.partitionId}`);
      }
    }
    return out;
  }

  /**
   * `max.message.bytes` of each topic as the broker applies it (the topic's own value, else the
   * broker's default), for `KafkaProducer.setTopicLimits`.
   */
  async maxMessageBytes(topics: string[]): Promise<Record<string, number>> {
    if (topics.length === 0) return {};
    const described = await wrapKafka(`reading max.message.bytes of ${topics.join(', ')}`, () =>
      this.admin.describeConfigs({
        includeSynonyms: false,
        resources: topics.map((name) => ({
          type: TOPIC_RESOURCE,
          name,
          configNames: ['max.message.bytes'],
        })),
      }),
    );
    const out: Record<string, number> = {};
    for (const resource of described.resources) {
      const entry = resource.configEntries.find((config) => config.configName === 'max.message.bytes');
      const value = Number(entry?.configValue);
      if (Number.isSafeInteger(value) && value > 0) out[resource.resourceName] = value;
    }
    return out;
  }

  /** Deletes the named topics that exist (idempotent: a topic already gone is not an error). */
  async deleteTopics(topics: string[]): Promise<void> {
    const existing = new Set(await this.listTopics());
    const present = topics.filter((topic) => existing.has(topic));
    if (present.length === 0) return;
    await wrapKafka(`deleting topics ${present.join(', ')}`, () =>
      this.admin.deleteTopics({ topics: present }),
    );
  }

  async partitionCount(topic: string): Promise<number> {
    return (await this.describeTopic(topic, [])).partitions.length;
  }

  /** Partitions of a topic and the named configs (all configs when `configNames` is omitted). */
  async describeTopic(topic: string, configNames?: string[]): Promise<TopicDescription> {
    const metadata = await wrapKafka(`describing topic ${topic}`, () =>
      this.admin.fetchTopicMetadata({ topics: [topic] }),
    );
    const found = metadata.topics.find((entry) => entry.name === topic);
    if (!found) throw new KafkaError(`topic ${topic} does not exist`, { retriable: false });
    const partitions = found.partitions
      .map((entry) => ({
        partition: entry.partitionId,
        leader: entry.leader,
        replicas: entry.replicas,
        isr: entry.isr,
      }))
      .sort((a, b) => a.partition - b.partition);
    const configs: Record<string, string> = {};
    if (configNames === undefined || configNames.length > 0) {
      const described = await wrapKafka(`describing configs of topic ${topic}`, () =>
        this.admin.describeConfigs({
          includeSynonyms: false,
          resources: [
            { type: TOPIC_RESOURCE, name: topic, ...(configNames !== undefined ? { configNames } : {}) },
          ],
        }),
      );
      for (const resource of described.resources) {
        for (const entry of resource.configEntries) configs[entry.configName] = entry.configValue;
      }
    }
    return { topic, partitions, configs };
  }

  async topicOffsets(topic: string): Promise<PartitionOffsets[]> {
    const offsets = await wrapKafka(`fetching offsets of topic ${topic}`, () =>
      this.admin.fetchTopicOffsets(topic),
    );
    return offsets
      .map((entry) => ({ partition: entry.partition, low: entry.low, high: entry.high }))
      .sort((a, b) => a.partition - b.partition);
  }

  /** The group's committed next offsets for a topic; null for partitions it never committed. */
  async groupOffsets(groupId: string, topic: string): Promise<Map<number, string | null>> {
    const commits = await this.groupCommits(groupId, topic);
    return new Map([...commits].map(([partition, c]) => [partition, c.offset]));
  }

  /** The group's committed next offsets for a topic with the metadata committed beside them. */
  async groupCommits(groupId: string, topic: string): Promise<Map<number, GroupCommit>> {
    const fetched = await wrapKafka(`fetching offsets of group ${groupId}`, () =>
      this.admin.fetchOffsets({ groupId, topics: [topic] }),
    );
    return commitsOf(fetched, topic);
  }

  /**
   * The topic's end offsets and the group's commits on it, for a timer that reads them often: two
   * requests a reading where `topicOffsets` and `groupCommits` together cost five, and a `low` that
   * may be up to a minute old (`group-readings.ts`).
   */
  async groupReading(groupId: string, topic: string): Promise<GroupReading> {
    const readings = this.readings;
    if (readings === undefined) {
      const [ends, committed] = await Promise.all([
        this.topicOffsets(topic),
        this.groupCommits(groupId, topic),
      ]);
      return { ends, committed };
    }
    return wrapKafka(`reading offsets of group ${groupId} on ${topic}`, () => readings.read(groupId, topic));
  }

  async describeGroup(groupId: string): Promise<GroupDescription> {
    const described = await wrapKafka(`describing group ${groupId}`, () =>
      this.admin.describeGroups([groupId]),
    );
    const group = described.groups.find((entry) => entry.groupId === groupId);
    return { groupId, state: group?.state ?? 'Dead', members: group?.members.length ?? 0 };
  }

  /**
   * The group's members with their assignments and what they announced when they joined; an
   * assignment or metadata that cannot be read (another client's format) reads as empty.
   */
  async describeGroupMembers(groupId: string): Promise<GroupMembers> {
    const described = await wrapKafka(`describing group ${groupId}`, () =>
      this.admin.describeGroups([groupId]),
    );
    const group = described.groups.find((entry) => entry.groupId === groupId);
    const members = (group?.members ?? []).map((m) => {
      let assignment: Record<string, number[]> = {};
      let advertised: string | null = null;
      try {
        const decoded = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
        if (decoded) assignment = decoded.assignment;
      } catch {
        // Not a consumer's assignment: shown as holding nothing.
      }
      try {
        advertised = advertisedAddressOf(AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData);
      } catch {
        advertised = null;
      }
      for (const partitions of Object.values(assignment)) partitions.sort((a, b) => a - b);
      return {
        memberId: m.memberId,
        clientId: m.clientId,
        clientHost: m.clientHost.replace(/^\//, ''),
        assignment,
        advertised,
      };
    });
    members.sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
    return { groupId, state: group?.state ?? 'Dead', protocol: group?.protocol ?? '', members };
  }

  /**
   * Deletes the records of `partition` below `offset` (the log start moves there), as retention
   * would; used to test what happens to pointers at records that are gone.
   */
  async deleteRecordsBefore(topic: string, partition: number, offset: string): Promise<void> {
    await wrapKafka(`deleting records of ${topic}[${partition}] below ${offset}`, () =>
      // kafkajs finds the partition's leader in metadata it must have loaded first.
      this.admin
        .fetchTopicMetadata({ topics: [topic] })
        .then(() => this.admin.deleteTopicRecords({ topic, partitions: [{ partition, offset }] })),
    );
  }

  /**
   * The first offset at or after `timestamp` (milliseconds since the epoch) of each partition of
   * `topic`; a partition with no such record answers its end offset (ListOffsets by timestamp).
   */
  async offsetsForTimestamp(topic: string, timestamp: number): Promise<Map<number, string>> {
    const found = await wrapKafka(`looking up offsets of ${topic} at ${timestamp}`, () =>
      this.admin.fetchTopicOffsetsByTimestamp(topic, timestamp),
    );
    return new Map(found.map((entry) => [entry.partition, entry.offset]));
  }

  /**
   * Commits next offsets for a group from outside it. The group must have no active member:
   * Kafka lets only a group's own members commit while it has any, so this refuses first, with a
   * message that says what to do.
   */
  async commitGroupOffsets(groupId: string, topic: string, offsets: Map<number, string>): Promise<void> {
    if (offsets.size === 0) return;
    const group = await this.describeGroup(groupId);
    if (!INACTIVE_GROUP_STATES.has(group.state)) {
      throw new KafkaError(
        `group ${groupId} is ${group.state} with ${group.members} member(s); stop its consumers before resetting offsets`,
        { retriable: false },
      );
    }
    await wrapKafka(`committing offsets of group ${groupId} on ${topic}`, () =>
      this.admin.setOffsets({
        groupId,
        topic,
        partitions: [...offsets].map(([partition, offset]) => ({ partition, offset })),
      }),
    );
  }
}

/** The error for a topic this principal may not Describe (`topicPresence`): the ACL to grant, by name. */
export function topicNotAuthorized(topic: string, setting: string): KafkaError {
  return new KafkaError(
    `topic ${topic} (${setting}): not authorized (TOPIC_AUTHORIZATION_FAILED): Kafka's ACLs do not give this principal Describe (Read or Write) on it; \`docstream topology\` prints the ACLs each command needs`,
    { retriable: false },
  );
}
