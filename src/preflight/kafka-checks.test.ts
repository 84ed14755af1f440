import { loadConfig } from '../config/index.js';
import type { ProbeAnswer, TopicFacts } from '../kafka/access-probes.js';
import { Findings } from './findings.js';
import { checkKafka, type AccessProbe } from './kafka-checks.js';

const ALLOWED: ProbeAnswer = { outcome: 'allowed' };

/** A cluster as the probes would find it: topics by name, answers by request. */
function fakeProbe(
  cluster: {
    brokers?: number;
    topics?: Record<string, TopicFacts & { configs?: Record<string, string> }>;
    create?: ProbeAnswer;
    write?: (topic: string) => ProbeAnswer;
    transactionalIds?: ProbeAnswer;
  } = {},
): AccessProbe {
  const topics = cluster.topics ?? {};
  return {
    connect: async () => undefined,
    disconnect: async () => undefined,
    brokerCount: async () => cluster.brokers ?? 1,
    topic: async (name) => {
      const t = topics[name];
      return t ? { partitions: t.partitions, replication: t.replication } : null;
    },
    topicConfigs: async (name, names) =>
      Object.fromEntries(
        names
          .filter((n) => topics[name]?.configs?.[n] !== undefined)
          .map((n) => [n, topics[name]!.configs![n]!]),
      ),
    mayCreate: async () => cluster.create ?? ALLOWED,
    mayRead: async () => ALLOWED,
    mayWrite: async (topic) => cluster.write?.(topic) ?? ALLOWED,
    mayDescribeGroup: async () => ALLOWED,
    mayJoinGroup: async () => ALLOWED,
    mayUseTransactionalId: async () => cluster.transactionalIds ?? ALLOWED,
  };
}

const config = (overrides: Record<string, Record<string, unknown>> = {}) =>
  loadConfig({ env: {}, files: [], overrides: { topics: { outputPartitions: 3 }, ...overrides } });

const inputs = {
  'documents.arrived': { partitions: 3, replication: 1 },
  'documents.feedback': { partitions: 3, replication: 1 },
};

async function run(c: ReturnType<typeof config>, probe: AccessProbe): Promise<Findings> {
  const findings = new Findings();
  await checkKafka(c, findings, 1000, () => probe);
  return findings;
}

const notOk = (f: Findings) =>
  f.all.filter((x) => x.status !== 'ok').map((x) => [x.status, x.subject, x.detail]);

describe('the Kafka part of config check --connect', () => {
  it('plans the missing topics as created when the principal may create them', async () => {
    const f = await run(config(), fakeProbe({ topics: inputs }));
    expect(notOk(f)).toEqual([]);
    expect(f.all.find((x) => x.subject === 'docstream.state')!.detail).toBe(
      'does not exist; will be created at first start (3 partitions, replication factor 1; Create allowed)',
    );
  });

  it('names a topic the principal may not create, with the command that creates it', async () => {
    const denied: ProbeAnswer = { outcome: 'denied', code: 'TOPIC_AUTHORIZATION_FAILED', message: 'no' };
    const f = await run(config(), fakeProbe({ topics: inputs, create: denied }));
    expect(f.all.find((x) => x.subject === 'docstream.state')).toEqual(
      expect.objectContaining({
        status: 'missing',
        detail: expect.stringContaining(
          'may not create it (TOPIC_AUTHORIZATION_FAILED): create it (kafka-topics.sh --create --topic docstream.state --partitions 3 --replication-factor 1 --config cleanup.policy=compact), or grant Create',
        ),
      }),
    );
  });

  it('names a replication factor the cluster cannot hold', async () => {
    const tooMany: ProbeAnswer = { outcome: 'failed', code: 'INVALID_REPLICATION_FACTOR', message: 'x' };
    const f = await run(
      config({ topics: { outputPartitions: 3, replicationFactor: 3 } }),
      fakeProbe({ topics: inputs, create: tooMany }),
    );
    expect(f.all.find((x) => x.subject === 'documents.fraud')!.detail).toMatch(
      /replication factor 3 cannot be created on 1 broker: set topics\.replicationFactor to at most 1/,
    );
  });

  it('names a state topic that is not compacted or not co-partitioned, with the commands that fix it', async () => {
    const f = await run(
      config(),
      fakeProbe({
        topics: {
          ...inputs,
          'docstream.state': { partitions: 1, replication: 1, configs: { 'cleanup.policy': 'delete' } },
        },
      }),
    );
    const state = f.all.find((x) => x.subject === 'docstream.state')!;
    expect(state.status).toBe('missing');
    expect(state.detail).toMatch(
      /has 1 partition but the input topic has 3: they must be co-partitioned \(kafka-topics\.sh --alter --topic docstream\.state --partitions 3\)/,
    );
    expect(state.detail).toMatch(
      /cleanup\.policy is delete, docstream needs compact \(kafka-configs\.sh --alter .*--add-config cleanup\.policy=compact\)/,
    );
  });

  it('warns on a topic of one replica on a cluster of several brokers', async () => {
    const f = await run(config(), fakeProbe({ brokers: 3, topics: inputs }));
    expect(notOk(f)).toEqual(
      expect.arrayContaining([
        ['warning', 'documents.arrived', expect.stringMatching(/^has 1 replica on a cluster of 3 brokers/)],
      ]),
    );
  });

  it('asks for the transactional ids only with exactly-once, under the prefix in use', async () => {
    const denied: ProbeAnswer = {
      outcome: 'denied',
      code: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
      message: 'no',
    };
    const once = await run(config(), fakeProbe({ topics: inputs, transactionalIds: denied }));
    expect(notOk(once)).toEqual([]);
    const eos = await run(
      config({ connector: { delivery: 'exactly-once' } }),
      fakeProbe({ topics: inputs, transactionalIds: denied }),
    );
    expect(notOk(eos)).toEqual([
      [
        'missing',
        'Write on transactional ids docstream-documents.arrived-*',
        expect.stringContaining(
          '--transactional-id docstream-documents.arrived- --resource-pattern-type prefixed',
        ),
      ],
    ]);
  });

  it('checks nothing further when the brokers do not answer, and says so', async () => {
    const down: AccessProbe = {
      ...fakeProbe(),
      connect: () => Promise.reject(new Error('kafka.brokers: nothing accepts connections')),
    };
    const f = await run(config(), down);
    expect(f.all).toEqual([
      expect.objectContaining({
        status: 'missing',
        part: 'kafka',
        detail: 'kafka.brokers: nothing accepts connections; topics and ACLs not checked',
      }),
    ]);
  });
});
