import { kafkaLog4j2Xml, kafkaServerProperties, newClusterId, registryUrl } from './services.js';

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

  test('backslashes in paths are escaped', () => {
    const p = parseProperties(kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: 'C:\\data' }));
    expect(p['log.dirs']).toBe('C:\\\\data');
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
      },
    }),
  ).toBe('http://localhost:8081/apis/ccompat/v7');
});
