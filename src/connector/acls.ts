/**
 * The one table of the Kafka ACLs docstream's two principals need: the connector's (`run`) and an
 * operator's (`send`, `inspect`, `status`, `dlq list`, `dlq redrive`, `replay`), by the requests each
 * command makes. `docstream topology` prints it, docs/deployment.md shows that output, and the
 * authorizer test grants exactly it. Read and Write imply Describe in Kafka, so Describe is listed
 * only where nothing else is granted.
 */
import { transactionalIdPrefixOf } from '../config/effective.js';
import type { Config } from '../config/index.js';
import { READER_GROUP_PREFIXES, type ReaderGroup } from '../kafka/reader-groups.js';
import type { TopicKey } from './topology.js';

export type AclRole = 'connector' | 'operator';
export type AclOperation = 'Read' | 'Write' | 'Create' | 'Describe' | 'DescribeConfigs';

type AclResource =
  | { type: 'topic'; topics: readonly TopicKey[] }
  /** kafka.groupId */
  | { type: 'group' }
  | { type: 'reader-groups'; readers: readonly ReaderGroup[] }
  /** connector.transactionalIdPrefix, or `<kafka.groupId>-<topics.arrived>` */
  | { type: 'transactional-ids' };

interface AclRule {
  role: AclRole;
  resource: AclResource;
  operations: readonly AclOperation[];
  /** The commands that need it. */
  commands: readonly string[];
  why: string;
  /** Needed only with connector.delivery exactly-once. */
  exactlyOnce?: true;
}

const OUTPUTS: readonly TopicKey[] = ['fraud', 'quality', 'classification', 'decision'];

export const ACL_RULES: readonly AclRule[] = [
  {
    role: 'connector',
    resource: { type: 'topic', topics: ['arrived', 'feedback'] },
    operations: ['Read', 'Create'],
    commands: ['run'],
    why: 'the inputs, consumed in the group; the input re-read by partition and offset to resume a document; created at start when missing (local use)',
  },
  {
    role: 'connector',
    resource: { type: 'topic', topics: [...OUTPUTS, 'dlq'] },
    operations: ['Write', 'Create', 'DescribeConfigs'],
    commands: ['run'],
    why: 'results and dead letters; created at start when missing; max.message.bytes read at start',
  },
  {
    role: 'connector',
    resource: { type: 'topic', topics: ['state', 'webhooks'] },
    operations: ['Read', 'Write', 'Create', 'DescribeConfigs'],
    commands: ['run'],
    why: 'state records written and restored per partition; webhook deliveries recorded and tailed; created at start when missing; cleanup.policy and retention checked at start',
  },
  {
    role: 'connector',
    resource: { type: 'group' },
    operations: ['Read'],
    commands: ['run'],
    why: "the connector's group: join, commit, read its own offsets (lag, the group's API share)",
  },
  {
    role: 'connector',
    resource: { type: 'reader-groups', readers: ['changelog', 'recordReader', 'webhookView'] },
    operations: ['Read'],
    commands: ['run'],
    why: 'groups of one reader each, never committed: the state restore, the input re-reader, the webhook view',
  },
  {
    role: 'connector',
    resource: { type: 'transactional-ids' },
    operations: ['Write'],
    commands: ['run'],
    why: 'one transactional id per input partition (<prefix>-<partition>)',
    exactlyOnce: true,
  },
  {
    role: 'operator',
    resource: { type: 'topic', topics: ['arrived', 'feedback'] },
    operations: ['Read', 'Write'],
    commands: ['send', 'dlq redrive', 'replay', 'inspect', 'status'],
    why: 'send and dlq redrive write the inputs; dlq redrive and replay re-read records by offset; inspect and status read the offsets',
  },
  {
    role: 'operator',
    resource: { type: 'topic', topics: [...OUTPUTS, 'dlq'] },
    operations: ['Read'],
    commands: ['inspect', 'dlq list', 'dlq redrive'],
    why: "inspect reads a document's results and dead letters; dlq list and dlq redrive read the dead letters",
  },
  {
    role: 'operator',
    resource: { type: 'topic', topics: ['state'] },
    operations: ['Read', 'Write'],
    commands: ['inspect', 'dlq redrive', 'replay'],
    why: "the documents' state (inspect, dlq redrive); replay reads and writes its replay markers",
  },
  {
    role: 'operator',
    resource: { type: 'topic', topics: ['redrives'] },
    operations: ['Read', 'Write', 'Create', 'DescribeConfigs'],
    commands: ['dlq redrive'],
    why: 'the markers of re-driven dead letters, so that none is sent twice; created on first use',
  },
  {
    role: 'operator',
    resource: { type: 'group' },
    operations: ['Read'],
    commands: ['replay', 'status', 'inspect'],
    why: "replay resets the connector group's offsets; status and inspect describe its members and offsets",
  },
  {
    role: 'operator',
    resource: { type: 'reader-groups', readers: ['operator', 'recordReader', 'changelog'] },
    operations: ['Read'],
    commands: ['inspect', 'dlq list', 'dlq redrive', 'replay'],
    why: 'groups of one reader each, never committed: topics read to their end, records re-read by offset, replay markers',
  },
];

export type AclResourceType = 'Topic' | 'Group' | 'TransactionalId';

/** One ACL as Kafka stores it (allow, any host). */
export interface Acl {
  role: AclRole;
  principal: string;
  resourceType: AclResourceType;
  name: string;
  pattern: 'LITERAL' | 'PREFIXED';
  operations: readonly AclOperation[];
  commands: readonly string[];
  why: string;
}

export interface AclPrincipals {
  connector: string;
  operator: string;
}

export const DEFAULT_PRINCIPALS: AclPrincipals = {
  connector: 'User:docstream',
  operator: 'User:docstream-operator',
};

/**
 * The ACLs of the table for this configuration: topic and group names resolved, the transactional
 * ids only with exactly-once delivery. One entry per resource, in the table's order.
 */
export function aclsOf(config: Config, principals: AclPrincipals = DEFAULT_PRINCIPALS): Acl[] {
  const exactlyOnce = config.connector.delivery === 'exactly-once';
  return ACL_RULES.filter((rule) => !rule.exactlyOnce || exactlyOnce).flatMap((rule): Acl[] => {
    const base = {
      role: rule.role,
      principal: principals[rule.role],
      operations: rule.operations,
      commands: rule.commands,
      why: rule.why,
    };
    const r = rule.resource;
    switch (r.type) {
      case 'topic':
        return r.topics.map((key) => ({
          ...base,
          resourceType: 'Topic' as const,
          name: config.topics[key],
          pattern: 'LITERAL' as const,
        }));
      case 'group':
        return [
          {
            ...base,
            resourceType: 'Group' as const,
            name: config.kafka.groupId,
            pattern: 'LITERAL' as const,
          },
        ];
      case 'reader-groups':
        return r.readers.map((reader) => ({
          ...base,
          resourceType: 'Group' as const,
          name: `${READER_GROUP_PREFIXES[reader]}-`,
          pattern: 'PREFIXED' as const,
        }));
      case 'transactional-ids':
        return [
          {
            ...base,
            resourceType: 'TransactionalId' as const,
            name: `${transactionalIdPrefixOf(config)}-`,
            pattern: 'PREFIXED' as const,
          },
        ];
    }
  });
}
