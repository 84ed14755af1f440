import fs from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../config/index.js';
import { ACL_RULES, aclsOf, DEFAULT_PRINCIPALS } from '../connector/acls.js';
import { webhookTopicConfigs } from '../connector/outputs/decision-deliveries.js';
import {
  chartTopology,
  formatTopologyScript,
  formatTopologyStrimzi,
  formatTopologyText,
  kubernetesName,
  strimziObjects,
  strimziUserName,
  toYamlStream,
  topologyOf,
} from './provisioning.js';

const config = (overrides: Record<string, Record<string, unknown>> = {}) =>
  loadConfig({ env: {}, files: [], overrides });
const principals = DEFAULT_PRINCIPALS;

interface StrimziDoc {
  kind: string;
  metadata: { name: string };
  spec: {
    topicName?: string;
    authentication?: unknown;
    authorization: { type: string; acls: unknown[] };
  };
}

describe('topologyOf', () => {
  test('every topic of the configuration, with the partitions, replication and configs docstream creates', () => {
    const c = config({ topics: { outputPartitions: 6, replicationFactor: 3, dlq: 'acme.dlq' } });
    const t = topologyOf(c, { principals, inputPartitions: 12 });
    const byKey = Object.fromEntries(t.topics.map((x) => [x.key, x]));
    expect(Object.keys(byKey).sort()).toEqual(
      [
        'arrived',
        'classification',
        'decision',
        'dlq',
        'feedback',
        'fraud',
        'quality',
        'redrives',
        'state',
        'webhooks',
      ].sort(),
    );
    expect(byKey.dlq).toMatchObject({ topic: 'acme.dlq', numPartitions: 6, replicationFactor: 3 });
    expect(byKey.dlq!.configs).toBeUndefined();
    // The state topic is co-partitioned with the input, the webhook topic has its window.
    expect(byKey.state).toMatchObject({
      numPartitions: 12,
      coPartitioned: true,
      configs: { 'cleanup.policy': 'compact' },
    });
    expect(byKey.webhooks!.configs).toEqual(webhookTopicConfigs(c.connector.deadlineMs));
    expect(byKey.redrives).toMatchObject({ numPartitions: 1, createdBy: 'dlq redrive' });
    expect(byKey.arrived).toMatchObject({ numPartitions: 6, input: true });
  });

  test('the subjects: the input schema by its producers, the outputs by run unless autoRegister is off', () => {
    const on = topologyOf(config(), { principals });
    expect(on.subjects.map((s) => [s.subject, s.schema])).toEqual([
      ['documents.arrived-value', 'DocumentArrived'],
      ['documents.fraud-value', 'FraudResult'],
      ['documents.quality-value', 'QualityResult'],
      ['documents.classification-value', 'ClassificationResult'],
      ['documents.decision-value', 'DecisionResult'],
      ['documents.dlq-value', 'DeadLetter'],
    ]);
    expect(on.subjects[1]!.registeredBy).toMatch(/^run/);
    const off = topologyOf(config({ registry: { autoRegister: false } }), { principals });
    expect(off.subjects[1]!.registeredBy).toMatch(/^you, before the first run/);
  });
});

describe('aclsOf', () => {
  test('transactional ids only with exactly-once, under the configured prefix or the default one', () => {
    const ids = (c: ReturnType<typeof config>) =>
      aclsOf(c).filter((a) => a.resourceType === 'TransactionalId');
    expect(ids(config())).toEqual([]);
    expect(ids(config({ connector: { delivery: 'exactly-once' } }))).toMatchObject([
      {
        principal: 'User:docstream',
        name: 'docstream-documents.arrived-',
        pattern: 'PREFIXED',
        operations: ['Write'],
      },
    ]);
    expect(
      ids(config({ connector: { delivery: 'exactly-once', transactionalIdPrefix: 'acme-tx' } }))[0]!.name,
    ).toBe('acme-tx-');
  });

  test("names from the configuration; the readers' groups prefixed; each principal its own", () => {
    const acls = aclsOf(config({ kafka: { groupId: 'acme' }, topics: { arrived: 'in' } }), {
      connector: 'User:c',
      operator: 'User:o',
    });
    expect(acls.filter((a) => a.role === 'connector').every((a) => a.principal === 'User:c')).toBe(true);
    expect(acls.filter((a) => a.role === 'operator').every((a) => a.principal === 'User:o')).toBe(true);
    expect(acls.find((a) => a.role === 'connector' && a.name === 'in')!.operations).toEqual([
      'Read',
      'Create',
    ]);
    expect(
      acls.filter((a) => a.resourceType === 'Group' && a.pattern === 'LITERAL').map((a) => a.name),
    ).toEqual(['acme', 'acme']);
    expect(acls.filter((a) => a.role === 'connector' && a.pattern === 'PREFIXED').map((a) => a.name)).toEqual(
      ['docstream-changelog-', 'docstream-record-reader-', 'docstream-webhook-view-'],
    );
    // The operator writes the inputs (send, dlq redrive) and never an output.
    const operatorWrites = acls.filter((a) => a.role === 'operator' && a.operations.includes('Write'));
    expect(operatorWrites.map((a) => a.name)).toEqual([
      'in',
      'documents.feedback',
      'docstream.state',
      'docstream.redrives',
    ]);
  });

  test('every rule says which commands need it and why', () => {
    for (const rule of ACL_RULES) {
      expect(rule.commands.length).toBeGreaterThan(0);
      expect(rule.why.length).toBeGreaterThan(20);
    }
  });
});

describe('renderings', () => {
  const t = topologyOf(config({ connector: { delivery: 'exactly-once' } }), { principals });

  test('text: topics, subjects and both principals, each ACL with its why', () => {
    const text = formatTopologyText(t);
    expect(text).toMatch(
      /^ {2}docstream\.state +3 \(as documents\.arrived\) +1 +cleanup\.policy=compact +run, when missing$/m,
    );
    expect(text).toMatch(/^ {2}documents\.dlq-value +DeadLetter +run, at start/m);
    expect(text).toContain('ACLs of User:docstream (the connector: run)');
    expect(text).toContain(
      'ACLs of User:docstream-operator (an operator: send, inspect, status, dlq list, dlq redrive, replay)',
    );
    expect(text).toMatch(/^ {2}Write on TransactionalId docstream-documents\.arrived- \(prefixed\)$/m);
    expect(text).not.toContain('No transactional id');
    expect(formatTopologyText(topologyOf(config(), { principals }))).toContain('No transactional id');
  });

  test('script: one kafka-topics.sh create per topic, one kafka-acls.sh add per ACL', () => {
    const script = formatTopologyScript(t, 'kafka-1:9093');
    const lines = script.split('\n');
    expect(lines[0]).toBe('#!/bin/sh');
    expect(script).toContain('BOOTSTRAP="${BOOTSTRAP:-kafka-1:9093}"');
    expect(lines.filter((l) => l.startsWith('topics --create'))).toHaveLength(t.topics.length);
    expect(lines.filter((l) => l.startsWith('acls '))).toHaveLength(t.acls.length);
    expect(script).toContain(
      'topics --create --if-not-exists --topic docstream.webhooks --partitions 1 --replication-factor 1 --config cleanup.policy=compact,delete --config retention.ms=1200000 --config segment.ms=1200000',
    );
    expect(script).toContain(
      'acls --allow-principal User:docstream --operation Write --transactional-id docstream-documents.arrived- --resource-pattern-type prefixed',
    );
    expect(script).toContain(
      'acls --allow-principal User:docstream-operator --operation Read --operation Write --topic documents.arrived',
    );
  });

  test('script: names the shell would split or expand are quoted', () => {
    const odd = topologyOf(config({ topics: { dlq: "dead letters's" } }), { principals });
    expect(formatTopologyScript(odd, 'k:9092')).toContain(`--topic 'dead letters'\\''s'`);
  });

  test('strimzi: a KafkaTopic per topic and a KafkaUser per principal, read back as YAML', () => {
    const text = formatTopologyStrimzi(t, { cluster: 'prod', authentication: 'scram-sha-512' });
    const docs = parseAllDocuments(text).map((d) => d.toJS() as unknown as StrimziDoc);
    expect(docs).toEqual(strimziObjects(t, { cluster: 'prod', authentication: 'scram-sha-512' }));
    const topics = docs.filter((d) => d.kind === 'KafkaTopic');
    expect(topics).toHaveLength(t.topics.length);
    expect(topics.find((d) => d.spec.topicName === 'docstream.webhooks')).toEqual({
      apiVersion: 'kafka.strimzi.io/v1beta2',
      kind: 'KafkaTopic',
      metadata: { name: 'docstream-webhooks', labels: { 'strimzi.io/cluster': 'prod' } },
      spec: {
        topicName: 'docstream.webhooks',
        partitions: 1,
        replicas: 1,
        config: { 'cleanup.policy': 'compact,delete', 'retention.ms': '1200000', 'segment.ms': '1200000' },
      },
    });
    const users = docs.filter((d) => d.kind === 'KafkaUser');
    expect(users.map((u) => u.metadata.name)).toEqual(['docstream', 'docstream-operator']);
    expect(users[0]!.spec.authentication).toEqual({ type: 'scram-sha-512' });
    expect(users[0]!.spec.authorization.type).toBe('simple');
    expect(users[0]!.spec.authorization.acls).toContainEqual({
      resource: { type: 'transactionalId', name: 'docstream-documents.arrived-', patternType: 'prefix' },
      operations: ['Write'],
      host: '*',
    });
    const none = strimziObjects(t, { cluster: 'prod', authentication: 'none' });
    expect((none.at(-1)!.spec as Record<string, unknown>).authentication).toBeUndefined();
  });

  test('strimzi: names Kubernetes takes, principals a KafkaUser can be', () => {
    expect(kubernetesName('Docstream.State_v2')).toBe('docstream-state-v2');
    expect(strimziUserName('User:docstream-operator')).toBe('docstream-operator');
    expect(() => strimziUserName('User:CN=docstream')).toThrow(/a Strimzi KafkaUser is User:<name>/);
  });

  test('YAML: strings that would read back as something else are quoted', () => {
    const text = toYamlStream([
      { a: 'true', b: '1200000', c: '*', d: 'compact,delete', e: [], f: [{ g: 'x' }] },
    ]);
    expect(parseAllDocuments(text)[0]!.toJS()).toEqual({
      a: 'true',
      b: '1200000',
      c: '*',
      d: 'compact,delete',
      e: [],
      f: [{ g: 'x' }],
    });
  });
});

test("the Helm chart's copy of the tables (files/topology.json) is what the tables say", () => {
  const file = JSON.parse(fs.readFileSync('deploy/helm/docstream/files/topology.json', 'utf8')) as unknown;
  // Regenerate: npm run build, then node -e "import('./dist/operator/provisioning.js').then((m) =>
  // console.log(JSON.stringify(m.chartTopology(), null, 2)))" > deploy/helm/docstream/files/topology.json
  expect(file).toEqual(chartTopology());
});

test('docs/deployment.md shows what docstream topology prints for the default configuration', () => {
  const page = fs.readFileSync('docs/deployment.md', 'utf8');
  const shown = /<!-- topology:begin -->\n```text\n([\s\S]*?)\n```\n<!-- topology:end -->/.exec(page);
  expect(shown).not.toBeNull();
  expect(shown![1]).toBe(formatTopologyText(topologyOf(config(), { principals })));
});
