/**
 * The Kafka part of `config check --connect`: the brokers with the configured security, each topic
 * of the topology (`connector/topology.ts`) against what the cluster holds, and each ACL the
 * connector needs (the table of `connector/acls.ts`), tried by the probes of `kafka/access-probes.ts`
 * (nothing is written).
 */
import { randomUUID } from 'node:crypto';
import { kafkaTlsOn } from '../config/effective.js';
import type { Config } from '../config/index.js';
import { aclsOf, type Acl } from '../connector/acls.js';
import { plannedTopics, type PlannedTopic } from '../connector/topology.js';
import type { KafkaAccessProbe, ProbeAnswer, TopicFacts } from '../kafka/access-probes.js';
import { kafkaClientOf } from '../kafka/client-from-config.js';
import { bounded, type Findings } from './findings.js';

/** `1 partition`, `3 partitions`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function answerText(answer: ProbeAnswer): string {
  if (answer.outcome === 'untried') return answer.reason;
  if (answer.outcome === 'allowed') return 'allowed';
  return `${answer.message} (${answer.code})`;
}

function isAnswer(value: unknown): value is ProbeAnswer {
  return typeof value === 'object' && value !== null && 'outcome' in value;
}

function securityText(config: Config): string {
  const k = config.kafka;
  const tls = kafkaTlsOn(k);
  const parts = [tls ? (k.sslCertFile !== '' ? 'mutual TLS' : 'TLS') : 'plaintext'];
  if (k.saslMechanism !== 'none') parts.push(`SASL ${k.saslMechanism.toUpperCase()}`);
  return parts.join(', ');
}

/** The `kafka-acls.sh` arguments that grant `operation` on a resource. */
function grant(operation: string, resource: string): string {
  return `grant ${operation} (kafka-acls.sh --add --allow-principal <principal> --operation ${operation} ${resource})`;
}

function topicFix(t: PlannedTopic): string {
  const configs = Object.entries(t.configs ?? {})
    .map(([k, v]) => ` --config ${k}=${v}`)
    .join('');
  return `kafka-topics.sh --create --topic ${t.topic} --partitions ${t.numPartitions} --replication-factor ${t.replicationFactor}${configs}`;
}

/** The setting that names a topic of the topology. */
const settingOf = (t: PlannedTopic) => `topics.${t.key}`;

function sameCleanup(actual: string | undefined, expected: string): boolean {
  const set = (v: string) =>
    new Set(
      v
        .replace(/[[\]\s]/g, '')
        .split(',')
        .filter(Boolean),
    );
  const a = set(actual ?? '');
  const e = set(expected);
  return a.size === e.size && [...e].every((x) => a.has(x));
}

/** What the checks ask of the Kafka probes (`kafka/access-probes.ts`). */
export type AccessProbe = Pick<
  KafkaAccessProbe,
  | 'connect'
  | 'disconnect'
  | 'brokerCount'
  | 'topic'
  | 'topicConfigs'
  | 'mayCreate'
  | 'mayRead'
  | 'mayWrite'
  | 'mayDescribeGroup'
  | 'mayJoinGroup'
  | 'mayUseTransactionalId'
>;

export interface KafkaFacts {
  /** The cluster's broker count, when the brokers answered. */
  brokers?: number;
}

/** Runs the Kafka checks into `findings`; each request is bounded by `timeoutMs`. */
export async function checkKafka(
  config: Config,
  findings: Findings,
  timeoutMs: number,
  /** The probes' client; replaceable in tests. */
  probeOf: () => AccessProbe = () =>
    kafkaClientOf(config, {
      clientId: 'docstream-config-check',
      timeouts: { connectionTimeoutMs: timeoutMs, requestTimeoutMs: timeoutMs, retries: 0 },
    }).accessProbe(),
): Promise<KafkaFacts> {
  const brokersText = config.kafka.brokers.join(',');
  let probe: AccessProbe;
  try {
    probe = probeOf();
  } catch (error) {
    findings.missing('kafka', brokersText, `${(error as Error).message}; topics and ACLs not checked`);
    return {};
  }
  try {
    let brokers: number;
    try {
      await bounded(probe.connect(), timeoutMs, `connecting to ${brokersText}`);
      brokers = await bounded(probe.brokerCount(), timeoutMs, 'describing the cluster');
    } catch (error) {
      findings.missing('kafka', brokersText, `${(error as Error).message}; topics and ACLs not checked`);
      return {};
    }
    findings.ok(
      'kafka',
      brokersText,
      `connected (${securityText(config)}); the cluster has ${brokers} broker${brokers === 1 ? '' : 's'}`,
    );
    await checkTopics(config, probe, findings, timeoutMs, brokers);
    await checkGroups(config, probe, findings, timeoutMs);
    return { brokers };
  } finally {
    await probe.disconnect();
  }
}

async function checkTopics(
  config: Config,
  probe: AccessProbe,
  findings: Findings,
  timeoutMs: number,
  brokers: number,
): Promise<void> {
  const ask = <T>(work: Promise<T>, what: string) => bounded(work, timeoutMs, what);
  const deadlineMs = config.connector.deadlineMs;
  const input = await ask(probe.topic(config.topics.arrived), `describing ${config.topics.arrived}`).catch(
    (error: unknown) =>
      ({ outcome: 'failed', code: 'timeout', message: (error as Error).message }) as ProbeAnswer,
  );
  const inputPartitions =
    input !== null && !isAnswer(input) ? input.partitions : config.topics.outputPartitions;
  for (const planned of plannedTopics(config.topics, deadlineMs, inputPartitions)) {
    const name = planned.topic;
    let facts: TopicFacts | null | ProbeAnswer;
    try {
      facts = planned.key === 'arrived' ? input : await ask(probe.topic(name), `describing ${name}`);
    } catch (error) {
      findings.missing('topics', name, (error as Error).message);
      continue;
    }
    if (isAnswer(facts)) {
      findings.missing(
        'topics',
        name,
        facts.outcome === 'denied'
          ? `the principal may not describe it (${facts.code}): ${grant('Describe', `--topic ${name}`)}, or the Read or Write it needs (either implies Describe)`
          : `describing it failed: ${answerText(facts)}`,
      );
      continue;
    }
    if (facts === null) {
      await plannedCreate(planned, probe, findings, timeoutMs, brokers);
      continue;
    }
    await existingTopic(planned, facts, probe, findings, timeoutMs, brokers);
    await topicAcls(planned, connectorAcls(config), probe, findings, timeoutMs);
  }
}

async function plannedCreate(
  planned: PlannedTopic,
  probe: AccessProbe,
  findings: Findings,
  timeoutMs: number,
  brokers: number,
): Promise<void> {
  const name = planned.topic;
  if (planned.key === 'arrived') {
    // Created empty at start (meant for local use): producers writing elsewhere would never be read.
    findings.missing(
      'topics',
      name,
      `does not exist: check ${settingOf(planned)} (the topic your producers write), or create it (${topicFix(planned)})`,
    );
    return;
  }
  const answer = await bounded(
    probe.mayCreate(planned),
    timeoutMs,
    `validating the creation of ${name}`,
  ).catch(
    (error: unknown) =>
      ({ outcome: 'failed', code: 'timeout', message: (error as Error).message }) as ProbeAnswer,
  );
  const shape = `${planned.numPartitions} partitions, replication factor ${planned.replicationFactor}`;
  if (answer.outcome === 'allowed') {
    findings.ok('topics', name, `does not exist; will be created at first start (${shape}; Create allowed)`);
  } else if (answer.outcome === 'denied') {
    findings.missing(
      'topics',
      name,
      `does not exist and the principal may not create it (${answer.code}): create it (${topicFix(planned)}), or ${grant('Create', `--topic ${name}`)}`,
    );
  } else if (answer.outcome === 'failed' && answer.code === 'INVALID_REPLICATION_FACTOR') {
    findings.missing(
      'topics',
      name,
      `does not exist, and replication factor ${planned.replicationFactor} cannot be created on ${brokers} broker${brokers === 1 ? '' : 's'}: set topics.replicationFactor to at most ${brokers}`,
    );
  } else {
    findings.missing(
      'topics',
      name,
      `does not exist, and its creation would fail: ${answer.outcome === 'failed' ? `${answer.message} (${answer.code})` : answer.reason}; create it (${topicFix(planned)})`,
    );
  }
}

async function existingTopic(
  planned: PlannedTopic,
  facts: TopicFacts,
  probe: AccessProbe,
  findings: Findings,
  timeoutMs: number,
  brokers: number,
): Promise<void> {
  const name = planned.topic;
  const problems: string[] = [];
  const risks: string[] = [];
  if (planned.key === 'state' && facts.partitions < planned.numPartitions) {
    problems.push(
      `has ${count(facts.partitions, 'partition')} but the input topic has ${planned.numPartitions}: they must be co-partitioned (kafka-topics.sh --alter --topic ${name} --partitions ${planned.numPartitions})`,
    );
  } else if (facts.partitions !== planned.numPartitions && !planned.input) {
    risks.push(`has ${count(facts.partitions, 'partition')}, the topology says ${planned.numPartitions}`);
  }
  if (facts.replication === 1 && brokers > 1) {
    risks.push(
      `has 1 replica on a cluster of ${brokers} brokers: a broker lost loses its records (raise it with kafka-reassign-partitions.sh)`,
    );
  } else if (facts.replication < planned.replicationFactor) {
    risks.push(
      `has ${facts.replication} replica${facts.replication === 1 ? '' : 's'}, topics.replicationFactor is ${planned.replicationFactor}`,
    );
  }
  const expected = planned.configs ?? {};
  const names = Object.keys(expected);
  // The inputs are only read; of a topic docstream writes, boot reads max.message.bytes.
  const configs: Record<string, string> | ProbeAnswer = planned.input
    ? {}
    : await bounded(
        probe.topicConfigs(name, names.length > 0 ? names : ['max.message.bytes']),
        timeoutMs,
        `describing the configs of ${name}`,
      ).catch(
        (error: unknown) =>
          ({ outcome: 'failed', code: 'timeout', message: (error as Error).message }) as ProbeAnswer,
      );
  if (isAnswer(configs)) {
    const why =
      configs.outcome === 'denied'
        ? `the principal may not read its configs (${configs.code}): ${grant('DescribeConfigs', `--topic ${name}`)}`
        : `its configs could not be read: ${answerText(configs)}`;
    // Required at start for the state and webhook topics; for the others boot warns and applies
    // kafka.maxMessageBytes to every topic.
    if (names.length > 0) problems.push(why);
    else risks.push(`${why}; without it kafka.maxMessageBytes is taken as the topic's record limit`);
  } else {
    for (const [key, value] of Object.entries(expected)) {
      const actual = configs[key];
      const same = key === 'cleanup.policy' ? sameCleanup(actual, value) : actual === value;
      if (!same) {
        problems.push(
          `${key} is ${actual ?? 'unset'}, docstream needs ${value} (kafka-configs.sh --alter --entity-type topics --entity-name ${name} --add-config ${key}=${value.includes(',') ? `[${value}]` : value})`,
        );
      }
    }
  }
  const shape = `${facts.partitions} partition${facts.partitions === 1 ? '' : 's'}, ${facts.replication} replica${facts.replication === 1 ? '' : 's'}${
    names.length > 0 && !isAnswer(configs)
      ? `, ${Object.entries(configs)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
      : ''
  }`;
  if (problems.length > 0) findings.missing('topics', name, `${shape}: ${problems.join('; ')}`);
  else findings.ok('topics', name, `exists (${shape})`);
  for (const risk of risks) findings.warning('topics', name, risk);
}

/** The connector's ACLs of the table (`connector/acls.ts`) for this configuration. */
function connectorAcls(config: Config): Acl[] {
  return aclsOf(config).filter((acl) => acl.role === 'connector');
}

/** Read and Write on the topic, as far as the ACL table grants them to the connector. */
async function topicAcls(
  planned: PlannedTopic,
  acls: readonly Acl[],
  probe: AccessProbe,
  findings: Findings,
  timeoutMs: number,
): Promise<void> {
  const name = planned.topic;
  const granted = acls
    .filter((acl) => acl.resourceType === 'Topic' && acl.name === name)
    .flatMap((acl) => acl.operations);
  for (const operation of (['Read', 'Write'] as const).filter((op) => granted.includes(op))) {
    const work = operation === 'Read' ? probe.mayRead(name) : probe.mayWrite(name);
    const tried =
      operation === 'Read' ? 'a Fetch at the log end' : 'a Produce of an empty batch, nothing appended';
    const answer = await bounded(work, timeoutMs, `${operation} on ${name}`).catch(
      (error: unknown) =>
        ({ outcome: 'failed', code: 'timeout', message: (error as Error).message }) as ProbeAnswer,
    );
    report(findings, `${operation} on topic ${name}`, answer, tried, grant(operation, `--topic ${name}`));
  }
}

function report(findings: Findings, subject: string, answer: ProbeAnswer, tried: string, fix: string): void {
  switch (answer.outcome) {
    case 'allowed':
      findings.ok('acls', subject, `allowed (${tried})`);
      return;
    case 'denied':
      findings.missing('acls', subject, `denied (${answer.code}): ${fix}`);
      return;
    case 'failed':
      findings.missing('acls', subject, `not answered: ${answer.message} (${answer.code})`);
      return;
    case 'untried':
      findings.warning('acls', subject, `not tried: ${answer.reason}`);
  }
}

async function checkGroups(
  config: Config,
  probe: AccessProbe,
  findings: Findings,
  timeoutMs: number,
): Promise<void> {
  const ask = (work: Promise<ProbeAnswer>, what: string) =>
    bounded(work, timeoutMs, what).catch(
      (error: unknown) =>
        ({ outcome: 'failed', code: 'timeout', message: (error as Error).message }) as ProbeAnswer,
    );
  for (const acl of connectorAcls(config)) {
    if (acl.resourceType === 'Group' && acl.pattern === 'LITERAL') {
      report(
        findings,
        `Describe on group ${acl.name}`,
        await ask(probe.mayDescribeGroup(acl.name), `Describe on group ${acl.name}`),
        'its committed offsets fetched',
        `${grant('Read', `--group ${acl.name}`)}; Read implies Describe`,
      );
      report(
        findings,
        `Read on group ${acl.name}`,
        await ask(probe.mayJoinGroup(acl.name), `Read on group ${acl.name}`),
        'a heartbeat of an unknown member, the group left as it is',
        grant('Read', `--group ${acl.name}`),
      );
    } else if (acl.resourceType === 'Group') {
      const id = `${acl.name}config-check`;
      report(
        findings,
        `Read on groups ${acl.name}*`,
        await ask(probe.mayJoinGroup(id), `Read on group ${id}`),
        `a heartbeat to ${id}`,
        grant('Read', `--group ${acl.name} --resource-pattern-type prefixed`),
      );
    } else if (acl.resourceType === 'TransactionalId') {
      const id = `${acl.name}config-check-${randomUUID().slice(0, 8)}`;
      report(
        findings,
        `Write on transactional ids ${acl.name}*`,
        await ask(probe.mayUseTransactionalId(id), `InitProducerId for ${id}`),
        `InitProducerId for the throwaway id ${id}`,
        grant('Write', `--transactional-id ${acl.name} --resource-pattern-type prefixed`),
      );
    }
  }
}
