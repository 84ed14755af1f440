/**
 * `docstream topology`: the whole of what a platform team provisions for docstream, from the
 * effective configuration, read from the tables (`src/connector/topology.ts` for the topics and
 * their configs, `src/connector/acls.ts` for the ACLs): as text, as a kafka-topics.sh and
 * kafka-acls.sh script, as Strimzi KafkaTopic and KafkaUser manifests, or as JSON.
 */
import { loadConfig, type Config } from '../config/index.js';
import {
  ACL_RULES,
  aclsOf,
  DEFAULT_PRINCIPALS,
  type Acl,
  type AclPrincipals,
  type AclRole,
} from '../connector/acls.js';
import { deliveryWindowMs, webhookTopicConfigs } from '../connector/outputs/decision-deliveries.js';
import {
  INPUT_VALUE_SCHEMA,
  topologyTable,
  topologyTopics,
  type TopologyTopic,
} from '../connector/topology.js';
import { READER_GROUP_PREFIXES } from '../kafka/reader-groups.js';
import type { AvroSchemaName } from '../serde/avro-schemas.js';

export interface Subject {
  subject: string;
  schema: AvroSchemaName;
  registeredBy: string;
  readBy: string;
}

export interface Topology {
  delivery: Config['connector']['delivery'];
  topics: TopologyTopic[];
  subjects: Subject[];
  principals: AclPrincipals;
  acls: Acl[];
}

export interface TopologyOptions {
  principals: AclPrincipals;
  /** The input topic's partitions (the state topic has as many); default topics.outputPartitions. */
  inputPartitions?: number;
}

export function topologyOf(config: Config, options: TopologyOptions): Topology {
  const t = config.topics;
  const topics = topologyTopics(
    t,
    config.connector.deadlineMs,
    options.inputPartitions ?? t.outputPartitions,
  );
  const outputsBy = config.registry.autoRegister
    ? 'run, at start (registry.autoRegister; it sets a compatibility level where the subject has none)'
    : 'you, before the first run (registry.autoRegister is false: run only looks the schema up)';
  const subjects: Subject[] = [
    {
      subject: `${t.arrived}-value`,
      schema: INPUT_VALUE_SCHEMA,
      registeredBy: 'the producers of the input (docstream send, with registry.autoRegister)',
      readBy: 'run (the input may also be JSON, with no schema)',
    },
    ...topics
      .filter((topic) => topic.schema !== null)
      .map((topic) => ({
        subject: `${topic.topic}-value`,
        schema: topic.schema!,
        registeredBy: outputsBy,
        readBy: `the consumers of ${topic.topic}; inspect and dlq`,
      })),
  ];
  return {
    delivery: config.connector.delivery,
    topics,
    subjects,
    principals: options.principals,
    acls: aclsOf(config, options.principals),
  };
}

const ROLE_TITLE: Record<AclRole, string> = {
  connector: 'the connector: run',
  operator: 'an operator: send, inspect, status, dlq list, dlq redrive, replay',
};

function configText(configs: Record<string, string> | undefined): string {
  const entries = Object.entries(configs ?? {});
  return entries.length === 0 ? '-' : entries.map(([k, v]) => `${k}=${v}`).join(' ');
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

function partitionsText(topic: TopologyTopic, topics: readonly TopologyTopic[]): string {
  const input = topics.find((x) => x.key === 'arrived')!;
  return topic.coPartitioned ? `${topic.numPartitions} (as ${input.topic})` : String(topic.numPartitions);
}

function createdByText(topic: TopologyTopic): string {
  if (topic.createdBy === 'dlq redrive') return 'dlq redrive, on first use';
  return topic.input ? 'run, when missing (an input: usually yours)' : 'run, when missing';
}

export function formatTopologyText(t: Topology): string {
  const lines: string[] = [`docstream topology (connector.delivery ${t.delivery})`, '', 'Topics'];
  lines.push(
    ...table([
      ['  topic', 'partitions', 'replication', 'configs', 'created by'],
      ...t.topics.map((topic) => [
        `  ${topic.topic}`,
        partitionsText(topic, t.topics),
        String(topic.replicationFactor),
        configText(topic.configs),
        createdByText(topic),
      ]),
    ]),
  );
  lines.push('', 'Schema registry subjects (TopicNameStrategy)');
  lines.push(
    ...table([
      ['  subject', 'schema', 'registered by'],
      ...t.subjects.map((s) => [`  ${s.subject}`, s.schema, s.registeredBy]),
    ]),
  );
  for (const role of ['connector', 'operator'] as const) {
    lines.push('', `ACLs of ${t.principals[role]} (${ROLE_TITLE[role]}), allow, any host`);
    // One entry per rule of the table: its resources, operations and why.
    const groups: Acl[][] = [];
    for (const a of t.acls.filter((x) => x.role === role)) {
      const last = groups.at(-1);
      const same =
        last?.[0]?.why === a.why && last[0].resourceType === a.resourceType && last[0].pattern === a.pattern;
      if (same) last.push(a);
      else groups.push([a]);
    }
    for (const group of groups) {
      const first = group[0]!;
      lines.push(
        `  ${first.operations.join(', ')} on ${first.resourceType} ${group.map((a) => a.name).join(', ')}${first.pattern === 'PREFIXED' ? ' (prefixed)' : ''}`,
        `      ${first.why}`,
      );
    }
  }
  if (t.delivery !== 'exactly-once') {
    lines.push(
      '',
      'No transactional id: connector.delivery at-least-once (exactly-once adds Write on the prefixed TransactionalId <connector.transactionalIdPrefix>-).',
    );
  }
  lines.push(
    '',
    'Read and Write imply Describe. Create is needed only for topics not created beforehand; DescribeConfigs lets run check the configs above.',
  );
  return lines.join('\n');
}

/** A word the shell passes on as it is, quoted when it holds anything else. */
function sh(word: string): string {
  return /^[A-Za-z0-9._:/=,@+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

const ACL_FLAG: Record<Acl['resourceType'], string> = {
  Topic: '--topic',
  Group: '--group',
  TransactionalId: '--transactional-id',
};

export function formatTopologyScript(t: Topology, bootstrap: string): string {
  const lines = [
    '#!/bin/sh',
    `# docstream topology (connector.delivery ${t.delivery}): topics, then ACLs.`,
    "# BOOTSTRAP: the brokers; COMMAND_CONFIG: a properties file with the admin client's security settings.",
    'set -eu',
    `BOOTSTRAP="\${BOOTSTRAP:-${bootstrap}}"`,
    'topics() { kafka-topics.sh --bootstrap-server "$BOOTSTRAP" ${COMMAND_CONFIG:+--command-config "$COMMAND_CONFIG"} "$@"; }',
    'acls() { kafka-acls.sh --bootstrap-server "$BOOTSTRAP" ${COMMAND_CONFIG:+--command-config "$COMMAND_CONFIG"} --add "$@"; }',
    '',
  ];
  for (const topic of t.topics) {
    const configs = Object.entries(topic.configs ?? {}).flatMap(([k, v]) => ['--config', sh(`${k}=${v}`)]);
    lines.push(
      [
        'topics --create --if-not-exists --topic',
        sh(topic.topic),
        '--partitions',
        String(topic.numPartitions),
        '--replication-factor',
        String(topic.replicationFactor),
        ...configs,
      ].join(' '),
    );
  }
  for (const role of ['connector', 'operator'] as const) {
    lines.push('', `# ${t.principals[role]}: ${ROLE_TITLE[role]}`);
    for (const a of t.acls.filter((x) => x.role === role)) {
      lines.push(
        [
          'acls --allow-principal',
          sh(a.principal),
          ...a.operations.flatMap((op) => ['--operation', op]),
          ACL_FLAG[a.resourceType],
          sh(a.name),
          ...(a.pattern === 'PREFIXED' ? ['--resource-pattern-type', 'prefixed'] : []),
        ].join(' '),
      );
    }
  }
  return lines.join('\n');
}

export interface StrimziOptions {
  /** The Kafka resource the objects belong to (label strimzi.io/cluster). */
  cluster: string;
  /** KafkaUser spec.authentication.type; `none`: the users authenticate otherwise (no authentication block). */
  authentication: 'scram-sha-512' | 'tls' | 'tls-external' | 'none';
}

/** A Kubernetes object name from a topic name: lower case, `.` and `_` as `-`. */
export function kubernetesName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** The KafkaUser name of a principal: Strimzi's users are `User:<name>`. */
export function strimziUserName(principal: string): string {
  const m = /^User:([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(principal);
  if (!m) {
    throw new Error(
      `principal ${principal}: a Strimzi KafkaUser is User:<name>, the name in lower case (a-z, 0-9, '-', '.') (CN=... principals come from TLS certificates Strimzi issues as User:CN=<name>; give --connector-principal User:<name>)`,
    );
  }
  return m[1]!;
}

const STRIMZI_RESOURCE: Record<Acl['resourceType'], string> = {
  Topic: 'topic',
  Group: 'group',
  TransactionalId: 'transactionalId',
};

export function strimziObjects(t: Topology, o: StrimziOptions): Array<Record<string, unknown>> {
  const labels = { 'strimzi.io/cluster': o.cluster };
  const topics = t.topics.map((topic) => ({
    apiVersion: 'kafka.strimzi.io/v1beta2',
    kind: 'KafkaTopic',
    metadata: { name: kubernetesName(topic.topic), labels },
    spec: {
      topicName: topic.topic,
      partitions: topic.numPartitions,
      replicas: topic.replicationFactor,
      ...(topic.configs ? { config: topic.configs } : {}),
    },
  }));
  const users = (['connector', 'operator'] as const).map((role) => ({
    apiVersion: 'kafka.strimzi.io/v1beta2',
    kind: 'KafkaUser',
    metadata: { name: strimziUserName(t.principals[role]), labels },
    spec: {
      ...(o.authentication === 'none' ? {} : { authentication: { type: o.authentication } }),
      authorization: {
        type: 'simple',
        acls: t.acls
          .filter((a) => a.role === role)
          .map((a) => ({
            resource: {
              type: STRIMZI_RESOURCE[a.resourceType],
              name: a.name,
              patternType: a.pattern === 'PREFIXED' ? 'prefix' : 'literal',
            },
            operations: [...a.operations],
            host: '*',
          })),
      },
    },
  }));
  return [...topics, ...users];
}

/** A YAML scalar: plain where YAML reads it back as the same string, else JSON-quoted (valid YAML). */
function yamlScalar(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const s = String(value);
  const plain =
    /^[A-Za-z_/][A-Za-z0-9._/-]*$/.test(s) &&
    !/^(true|false|yes|no|on|off|null|y|n)$/i.test(s) &&
    !/^[0-9.+-]/.test(s);
  return plain ? s : JSON.stringify(s);
}

function yamlLines(value: unknown, indent: string): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      if (item !== null && typeof item === 'object') {
        const [first, ...rest] = yamlLines(item, `${indent}  `);
        return [`${indent}- ${first!.trimStart()}`, ...rest];
      }
      return [`${indent}- ${yamlScalar(item)}`];
    });
  }
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => {
    if (v !== null && typeof v === 'object') {
      if (Array.isArray(v) && v.length === 0) return [`${indent}${yamlScalar(k)}: []`];
      return [`${indent}${yamlScalar(k)}:`, ...yamlLines(v, Array.isArray(v) ? indent : `${indent}  `)];
    }
    return [`${indent}${yamlScalar(k)}: ${yamlScalar(v)}`];
  });
}

/** The objects as one YAML stream, `---` between documents. */
export function toYamlStream(objects: ReadonlyArray<Record<string, unknown>>): string {
  return objects.map((o) => yamlLines(o, '').join('\n')).join('\n---\n');
}

export function formatTopologyStrimzi(t: Topology, o: StrimziOptions): string {
  return toYamlStream(strimziObjects(t, o));
}

/**
 * The tables as the Helm chart reads them (`deploy/helm/docstream/files/topology.json`, which its
 * strimzi templates resolve against the chart's config): the topics by kind, the ACL rules, and the
 * configuration's defaults for the keys the chart may leave out. A unit test keeps the file equal.
 */
export function chartTopology(): Record<string, unknown> {
  const d = loadConfig({ env: {}, files: [] });
  const { outputPartitions, replicationFactor, ...names } = d.topics;
  return {
    about:
      'Generated from src/connector/topology.ts and acls.ts (chartTopology in src/operator/provisioning.ts); do not edit.',
    defaults: {
      topics: { ...names, outputPartitions, replicationFactor },
      kafka: { groupId: d.kafka.groupId },
      connector: {
        deadlineMs: d.connector.deadlineMs,
        delivery: d.connector.delivery,
        transactionalIdPrefix: d.connector.transactionalIdPrefix,
      },
    },
    principals: DEFAULT_PRINCIPALS,
    webhookWindowMarginMs: deliveryWindowMs(0),
    topics: topologyTable().map((spec) => ({
      key: spec.key,
      partitions: spec.partitions,
      configs:
        spec.cleanup === 'compact'
          ? { 'cleanup.policy': 'compact' }
          : spec.cleanup === 'deliveries'
            ? { 'cleanup.policy': webhookTopicConfigs(0)['cleanup.policy'] }
            : {},
      webhookWindow: spec.cleanup === 'deliveries',
    })),
    acls: ACL_RULES.map((rule) => {
      const r = rule.resource;
      return {
        role: rule.role,
        exactlyOnce: rule.exactlyOnce === true,
        operations: rule.operations,
        resource:
          r.type === 'topic'
            ? { type: 'topic', topics: r.topics }
            : r.type === 'group'
              ? { type: 'group' }
              : r.type === 'reader-groups'
                ? { type: 'group', prefixes: r.readers.map((x) => `${READER_GROUP_PREFIXES[x]}-`) }
                : { type: 'transactionalId' },
      };
    }),
  };
}
