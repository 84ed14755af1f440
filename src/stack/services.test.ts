import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  jaegerConfig,
  kafkaClusterNodes,
  kafkaLog4j2Xml,
  kafkaNodeFiles,
  kafkaServerProperties,
  newClusterId,
  recordedClusterSize,
  registryUrl,
  serviceUnits,
} from './services.js';
import { DEFAULT_PORTS, defaultStackOptions, kafkaNodePorts } from './options.js';

function parseProperties(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.indexOf('=');
    out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

describe('kafkaServerProperties', () => {
  const props = parseProperties(
    kafkaServerProperties({ port: 19092, controllerPort: 19093, dataDir: '/run/kafka/data' }),
  );

  test('single-node KRaft broker and controller on the given ports', () => {
    expect(props).toMatchObject({
      'process.roles': 'broker,controller',
      'node.id': '1',
      'controller.quorum.bootstrap.servers': 'localhost:19093',
      listeners: 'PLAINTEXT://localhost:19092,CONTROLLER://localhost:19093',
      'advertised.listeners': 'PLAINTEXT://localhost:19092',
      'controller.listener.names': 'CONTROLLER',
      'log.dirs': '/run/kafka/data',
    });
  });

  test('replication factors and ISR fit one node; topics are created on demand', () => {
    expect(props).toMatchObject({
      'offsets.topic.replication.factor': '1',
      'transaction.state.log.replication.factor': '1',
      'transaction.state.log.min.isr': '1',
      'share.coordinator.state.topic.replication.factor': '1',
      'share.coordinator.state.topic.min.isr': '1',
      'group.initial.rebalance.delay.ms': '0',
      'auto.create.topics.enable': 'true',
      'num.partitions': '1',
    });
  });

  test('no authorizer unless asked; asked, the StandardAuthorizer with the plain listener a super user', () => {
    expect(props['authorizer.class.name']).toBeUndefined();
    const secured = parseProperties(
      kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: '/d', authorizer: true }),
    );
    expect(secured).toMatchObject({
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'super.users': 'User:ANONYMOUS',
      'allow.everyone.if.no.acl.found': 'false',
    });
  });

  test('backslashes in paths are escaped', () => {
    const p = parseProperties(kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: 'C:\\data' }));
    expect(p['log.dirs']).toBe('C:\\\\data');
  });
});

describe('kafkaServerProperties of a cluster node', () => {
  const nodes = [
    { kafka: 19092, controller: 19093 },
    { kafka: 19102, controller: 19103 },
    { kafka: 19112, controller: 19113 },
  ];
  const node2 = parseProperties(
    kafkaServerProperties({
      port: 19102,
      controllerPort: 19103,
      dataDir: '/run/kafka/node-2/data',
      cluster: { nodeId: 2, nodes },
    }),
  );

  test('its own id and listeners, a static quorum of every node, no bootstrap of its own', () => {
    expect(node2).toMatchObject({
      'process.roles': 'broker,controller',
      'node.id': '2',
      'controller.quorum.voters': '1@localhost:19093,2@localhost:19103,3@localhost:19113',
      listeners: 'PLAINTEXT://localhost:19102,CONTROLLER://localhost:19103',
      'advertised.listeners': 'PLAINTEXT://localhost:19102',
      'log.dirs': '/run/kafka/node-2/data',
    });
    expect(node2['controller.quorum.bootstrap.servers']).toBeUndefined();
  });

  test('topics and the internal ones replicated to 3, 2 in sync (one node may be lost)', () => {
    expect(node2).toMatchObject({
      'default.replication.factor': '3',
      'min.insync.replicas': '2',
      'offsets.topic.replication.factor': '3',
      'transaction.state.log.replication.factor': '3',
      'transaction.state.log.min.isr': '2',
      'share.coordinator.state.topic.replication.factor': '3',
      'share.coordinator.state.topic.min.isr': '2',
    });
  });

  test('the single node has none of the cluster settings', () => {
    const single = parseProperties(kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: '/d' }));
    expect(single['controller.quorum.voters']).toBeUndefined();
    expect(single['default.replication.factor']).toBeUndefined();
    expect(single['min.insync.replicas']).toBeUndefined();
  });
});

describe('cluster nodes', () => {
  const o = defaultStackOptions({
    runDir: '/run',
    ports: { ...DEFAULT_PORTS, kafka: 19092, kafkaController: 19093 },
  });

  test("node ports: node 1's, then + 10 per node, or the pairs given", () => {
    expect(kafkaNodePorts({ ...o, brokers: 3 })).toEqual([
      { kafka: 19092, controller: 19093 },
      { kafka: 19102, controller: 19103 },
      { kafka: 19112, controller: 19113 },
    ]);
    const given = [
      { kafka: 3000, controller: 3001 },
      { kafka: 4000, controller: 4001 },
    ];
    expect(kafkaNodePorts({ ...o, brokers: 3, nodePorts: given }).slice(1)).toEqual(given);
    expect(kafkaNodePorts({ ...o, brokers: 1, nodePorts: given })).toEqual([
      { kafka: 19092, controller: 19093 },
    ]);
  });

  test('each node its own pid file, directories, ports and label', () => {
    const units = kafkaClusterNodes(3);
    expect(units.map((u) => u.label)).toEqual(['kafka-1', 'kafka-2', 'kafka-3']);
    expect(units.map((u) => u.pidFile?.(o))).toEqual([
      '/run/kafka/node-1/kafka.pid',
      '/run/kafka/node-2/kafka.pid',
      '/run/kafka/node-3/kafka.pid',
    ]);
    expect(units[2]!.ports(o).map((p) => p.port)).toEqual([19112, 19113]);
    expect(units[1]!.endpoint(o)).toBe('localhost:19102');
    expect(kafkaNodeFiles('/run', 2).dataDir).toBe('/run/kafka/node-2/data');
  });

  test('the single node stays one unit, with the secured listeners, where it always was', () => {
    const [single, ...rest] = serviceUnits('kafka', o);
    expect(rest).toEqual([]);
    expect(single!.label).toBeUndefined();
    expect(single!.pidFile).toBeUndefined();
    expect(single!.ports(o).map((p) => p.port)).toEqual([19092, 19093, 9094, 9095, 9096]);
  });

  test('brokers unset: the layout the run dir holds (a cluster there and no single node, its nodes)', () => {
    const runDir = mkdtempSync(join(tmpdir(), 'docstream-cluster-'));
    try {
      const here = { ...o, runDir };
      expect(serviceUnits('kafka', here)).toHaveLength(1);
      for (const n of [1, 2, 3]) mkdirSync(kafkaNodeFiles(runDir, n).dir, { recursive: true });
      expect(recordedClusterSize(runDir)).toBe(3);
      expect(serviceUnits('kafka', here).map((u) => u.label)).toEqual(['kafka-1', 'kafka-2', 'kafka-3']);
      expect(serviceUnits('kafka', { ...here, brokers: 1 })).toHaveLength(1);
      mkdirSync(join(runDir, 'kafka', 'data'));
      expect(serviceUnits('kafka', here)).toHaveLength(1);
    } finally {
      rmSync(runDir, { recursive: true, force: true });
    }
  });
});

describe('kafkaLog4j2Xml', () => {
  test('logs to the given file, XML-escaped', () => {
    const xml = kafkaLog4j2Xml('/run/a&b/kafka.log');
    expect(xml).toContain('fileName="/run/a&amp;b/kafka.log"');
    expect(xml).toContain('<Root level="INFO"><AppenderRef ref="file"/></Root>');
  });
});

describe('newClusterId', () => {
  test('22 URL-safe base64 characters (16 bytes), never starting with "-", random', () => {
    const ids = new Set(Array.from({ length: 200 }, () => newClusterId()));
    expect(ids.size).toBe(200);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
  });
});

test('registryUrl', () => {
  expect(
    registryUrl({
      ports: {
        kafka: 1,
        kafkaController: 2,
        kafkaScramTls: 5,
        kafkaMtls: 6,
        kafkaOauth: 7,
        registry: 8081,
        registryManagement: 3,
        s3: 4,
        jaegerOtlp: 9,
        jaegerQuery: 10,
        jaegerQueryGrpc: 11,
      },
    }),
  ).toBe('http://localhost:8081/apis/ccompat/v7');
});

test('jaegerConfig: OTLP/HTTP in, in-memory storage, query API, all on loopback', () => {
  const yaml = jaegerConfig({
    ports: { ...DEFAULT_PORTS, jaegerOtlp: 14318, jaegerQuery: 26686, jaegerQueryGrpc: 26685 },
  });
  expect(yaml).toContain('endpoint: 127.0.0.1:14318');
  expect(yaml).toContain('endpoint: 127.0.0.1:26686');
  expect(yaml).toContain('endpoint: 127.0.0.1:26685');
  expect(yaml).toContain('receivers: [otlp]');
  expect(yaml).toContain('memory:');
  // Every endpoint it opens is on loopback.
  for (const m of yaml.matchAll(/endpoint: (\S+)/g)) expect(m[1]).toMatch(/^127\.0\.0\.1:/);
});
