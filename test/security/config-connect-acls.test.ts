/**
 * `docstream config check --connect` (the built CLI) against a broker with Kafka's authorizer on
 * (`startPrivateKafka({ authorizer: true })`): with the topics made by the admin and the connector's
 * ACLs of the one table (`src/connector/acls.ts`, as `docstream topology` prints them) granted to
 * User:docstream, every Kafka check is ok; with one ACL removed (Write on the state topic, whose Read still lets it be described),
 * that one is named, denied, with the grant that fixes it, and the command exits 1; so are the
 * transactional ids with exactly-once, which the at-least-once table does not grant. The probes write nothing: the topics' end offsets do not move.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import kafkajs from 'kafkajs';
import type { Acl } from 'kafkajs';
import { aclsOf, DEFAULT_PRINCIPALS } from '../../src/connector/acls.js';
import { plannedTopics } from '../../src/connector/topology.js';
import type { Finding } from '../../src/preflight/index.js';
import { E2E } from '../harness/e2e.js';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

const { Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } =
  kafkajs;

const CLI = path.resolve('dist/cli/index.js');

interface Report {
  code: number | null;
  findings: Finding[];
}

function check(file: string): Promise<Report> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  const child = spawn(
    process.execPath,
    [CLI, 'config', 'check', '--connect', '--json', '--timeout', '5', '-c', file],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      try {
        resolve({ code, findings: (JSON.parse(stdout) as { findings: Finding[] }).findings });
      } catch {
        reject(new Error(`no JSON report (exit ${code}): ${stdout}\n${stderr}`));
      }
    });
  });
}

/** Runs the check until `done` holds for its report (the broker applies ACLs from its metadata log). */
async function checkUntil(file: string, done: (r: Report) => boolean): Promise<Report> {
  let last: Report | undefined;
  for (let i = 0; i < 20; i++) {
    last = await check(file);
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return last!;
}

const kafkaFindings = (r: Report) => r.findings.filter((f) => ['kafka', 'topics', 'acls'].includes(f.part));

describe('config check --connect against a broker with the authorizer on', () => {
  let kafka: PrivateKafka;
  let env: E2E;
  let admin: ReturnType<InstanceType<typeof Kafka>['admin']>;
  let file: string;
  let connection: Record<string, Record<string, unknown>>;
  let groupRead: typeof stateWrite;
  let stateWrite: Acl & { resourceType: number; resourcePatternType: number; operation: number };
  let topics: string[];

  beforeAll(async () => {
    kafka = await startPrivateKafka({ authorizer: true });
    env = new E2E(2, { brokers: kafka.brokers });
    await env.start();
    admin = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const config = env.config();
    const planned = plannedTopics(config.topics, config.connector.deadlineMs, config.topics.outputPartitions);
    topics = planned.map((p) => p.topic);
    await admin.createTopics({
      waitForLeaders: true,
      topics: planned
        .filter((p) => !p.input)
        .map((p) => ({
          topic: p.topic,
          numPartitions: p.numPartitions,
          replicationFactor: 1,
          configEntries: Object.entries(p.configs ?? {}).map(([name, value]) => ({ name, value })),
        })),
    });
    // The connector's ACLs of the one table (`docstream topology` prints it), for this test's names.
    const principal = `User:${kafka.secure.scramTls.username}`;
    const OPERATION = {
      Read: AclOperationTypes.READ,
      Write: AclOperationTypes.WRITE,
      Create: AclOperationTypes.CREATE,
      Describe: AclOperationTypes.DESCRIBE,
      DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
    };
    const RESOURCE = {
      Topic: AclResourceTypes.TOPIC,
      Group: AclResourceTypes.GROUP,
      TransactionalId: AclResourceTypes.TRANSACTIONAL_ID,
    };
    const acl = aclsOf(config, { ...DEFAULT_PRINCIPALS, connector: principal })
      .filter((a) => a.role === 'connector')
      .flatMap((a) =>
        a.operations.map((operation) => ({
          resourceType: RESOURCE[a.resourceType],
          resourceName: a.name,
          resourcePatternType:
            a.pattern === 'PREFIXED' ? ResourcePatternTypes.PREFIXED : ResourcePatternTypes.LITERAL,
          principal,
          host: '*',
          operation: OPERATION[operation],
          permissionType: AclPermissionTypes.ALLOW,
        })),
      );
    await admin.createAcls({ acl });
    groupRead = acl.find(
      (a) => a.resourceType === AclResourceTypes.GROUP && a.resourceName === config.kafka.groupId,
    )!;
    stateWrite = acl.find(
      (a) => a.resourceName === config.topics.state && a.operation === AclOperationTypes.WRITE,
    )!;
    const s = kafka.secure;
    connection = {
      kafka: {
        brokers: [s.scramTls.bootstrap],
        sslCaFile: s.caFile,
        saslMechanism: 'scram-sha-512',
        saslUsername: s.scramTls.username,
        saslPassword: s.scramTls.password,
      },
    };
    file = env.writeConfig(connection);
  }, 180_000);

  afterAll(async () => {
    await admin?.disconnect();
    await env?.stop();
    await kafka?.remove();
  });

  it('finds every right the connector needs when the documented ACLs are granted, and writes nothing', async () => {
    const ends = async () =>
      Promise.all(topics.map(async (t) => (await admin.fetchTopicOffsets(t)).map((p) => p.high).join(',')));
    const before = await ends();
    const r = await checkUntil(file, (x) => x.code === 0);
    expect(kafkaFindings(r).filter((f) => f.status !== 'ok')).toEqual([]);
    expect(r.code).toBe(0);
    const tried = r.findings.filter((f) => f.part === 'acls').map((f) => f.subject);
    expect(tried).toEqual(
      expect.arrayContaining([
        `Read on topic ${env.topics.arrived}`,
        `Write on topic ${env.topics.dlq}`,
        `Write on topic ${env.topics.state}`,
        `Read on group ${env.config().kafka.groupId}`,
        'Read on groups docstream-changelog-*',
        'Read on groups docstream-webhook-view-*',
      ]),
    );
    expect(await ends()).toEqual(before);
  }, 120_000);

  it('with exactly-once, names the transactional ids the at-least-once grants lack', async () => {
    const eos = env.writeConfig({ ...connection, connector: { delivery: 'exactly-once' } });
    const r = await check(eos);
    expect(r.code).toBe(1);
    expect(kafkaFindings(r).filter((f) => f.status !== 'ok')).toEqual([
      {
        part: 'acls',
        subject: `Write on transactional ids ${env.config().kafka.groupId}-${env.topics.arrived}-*`,
        status: 'missing',
        detail: expect.stringMatching(
          /denied \(TRANSACTIONAL_ID_AUTHORIZATION_FAILED\): grant Write \(kafka-acls\.sh .*--transactional-id .* --resource-pattern-type prefixed\)/,
        ),
      },
    ]);
  }, 60_000);

  it('names the one ACL removed, with the grant that fixes it, and exits 1', async () => {
    await admin.deleteAcls({ filters: [stateWrite] });
    const r = await checkUntil(file, (x) => x.code === 1);
    expect(r.code).toBe(1);
    expect(kafkaFindings(r).filter((f) => f.status !== 'ok')).toEqual([
      {
        part: 'acls',
        subject: `Write on topic ${env.topics.state}`,
        status: 'missing',
        detail: expect.stringMatching(
          new RegExp(
            `denied \\(TOPIC_AUTHORIZATION_FAILED\\): grant Write \\(kafka-acls\\.sh .*--operation Write --topic ${env.topics.state.replace(/\./g, '\\.')}\\)`,
          ),
        ),
      },
    ]);
  }, 120_000);

  it("names the connector group's Read and Describe once its ACL is removed too", async () => {
    const group = env.config().kafka.groupId;
    await admin.deleteAcls({ filters: [groupRead] });
    const r = await checkUntil(file, (x) =>
      x.findings.some((f) => f.subject === `Read on group ${group}` && f.status === 'missing'),
    );
    expect(r.code).toBe(1);
    expect(
      kafkaFindings(r)
        .filter((f) => f.status !== 'ok')
        .map((f) => [f.subject, f.detail]),
    ).toEqual([
      [`Write on topic ${env.topics.state}`, expect.stringMatching(/^denied \(TOPIC_AUTHORIZATION_FAILED\)/)],
      [
        `Describe on group ${group}`,
        expect.stringMatching(/^denied \(GROUP_AUTHORIZATION_FAILED\): grant Read .*--group /),
      ],
      [
        `Read on group ${group}`,
        expect.stringMatching(/^denied \(GROUP_AUTHORIZATION_FAILED\): grant Read .*--group /),
      ],
    ]);
  }, 120_000);
});
