import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  authorizerFromEnv,
  defaultPorts,
  DEFAULT_PORTS,
  defaultStackOptions,
  parseNodePorts,
  selectedServices,
  validateOptions,
} from './options.js';
import { defaultCacheDir, defaultRunDir } from './paths.js';
import { progressLine, stripAnsi } from './artifacts.js';
import { stackEnv } from './index.js';

describe('directories', () => {
  test('XDG dirs, explicit overrides, home fallbacks', () => {
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/xdg/cache' })).toBe('/xdg/cache/docstream');
    expect(defaultCacheDir({}, '/home/u')).toBe('/home/u/.cache/docstream');
    expect(defaultCacheDir({ DOCSTREAM_STACK_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x' })).toBe('/c');
    expect(defaultRunDir({ XDG_STATE_HOME: '/xdg/state' })).toBe('/xdg/state/docstream/stack');
    expect(defaultRunDir({}, '/home/u')).toBe('/home/u/.local/state/docstream/stack');
    expect(defaultRunDir({ DOCSTREAM_STACK_RUN_DIR: '/r' })).toBe('/r');
    expect(defaultRunDir({})).toBe(join(homedir(), '.local/state/docstream/stack'));
  });
});

describe('ports', () => {
  test('defaults and environment overrides', () => {
    expect(defaultPorts({})).toEqual({
      kafka: 9092,
      kafkaController: 9093,
      kafkaScramTls: 9094,
      kafkaMtls: 9095,
      kafkaOauth: 9096,
      registry: 8081,
      registryManagement: 9001,
      s3: 9002,
      jaegerOtlp: 4318,
      jaegerQuery: 16686,
      jaegerQueryGrpc: 16685,
    });
    expect(defaultPorts({ DOCSTREAM_STACK_KAFKA_PORT: '19092', DOCSTREAM_STACK_S3_PORT: '' })).toMatchObject({
      kafka: 19092,
      s3: 9002,
    });
    expect(() => defaultPorts({ DOCSTREAM_STACK_REGISTRY_PORT: '80a' })).toThrow(
      /DOCSTREAM_STACK_REGISTRY_PORT=80a/,
    );
  });

  test('validation: range, duplicates, timeout, services', () => {
    const ok = defaultStackOptions({ ports: { ...DEFAULT_PORTS } });
    expect(validateOptions(ok)).toEqual([]);
    expect(validateOptions({ ...ok, ports: { ...DEFAULT_PORTS, s3: 70000 } })).toEqual([
      'port s3 must be an integer between 1 and 65535 (got 70000)',
    ]);
    expect(validateOptions({ ...ok, ports: { ...DEFAULT_PORTS, registry: 9092 } })).toEqual([
      'ports kafka and registry are both 9092',
    ]);
    expect(validateOptions({ ...ok, timeoutMs: 0 })).toEqual(['timeout must be a positive number']);
    expect(validateOptions({ ...ok, services: ['kafka', 'zk' as never] })[0]).toMatch(/unknown service 'zk'/);
  });

  test('authorizer: from DOCSTREAM_STACK_KAFKA_AUTHORIZER, the single node only', () => {
    expect(authorizerFromEnv({})).toBeUndefined();
    expect(authorizerFromEnv({ DOCSTREAM_STACK_KAFKA_AUTHORIZER: 'true' })).toBe(true);
    expect(authorizerFromEnv({ DOCSTREAM_STACK_KAFKA_AUTHORIZER: '0' })).toBe(false);
    expect(() => authorizerFromEnv({ DOCSTREAM_STACK_KAFKA_AUTHORIZER: 'yes' })).toThrow(
      /DOCSTREAM_STACK_KAFKA_AUTHORIZER=yes is not true, false, 1 or 0/,
    );
    const ok = defaultStackOptions({ ports: { ...DEFAULT_PORTS } });
    expect(validateOptions({ ...ok, authorizer: true })).toEqual([]);
    expect(validateOptions({ ...ok, authorizer: true, brokers: 3 })).toEqual([
      'the authorizer needs the single node (its principals come from the SCRAM-over-TLS listener): drop --brokers',
    ]);
  });

  test("brokers: 1 or 3; a cluster takes its nodes' ports into the duplicate check", () => {
    const ok = defaultStackOptions({ ports: { ...DEFAULT_PORTS } });
    expect(validateOptions({ ...ok, brokers: 3 })).toEqual([]);
    expect(validateOptions({ ...ok, brokers: 2 })).toEqual(['brokers must be 1 or 3 (got 2)']);
    expect(
      validateOptions({
        ...ok,
        brokers: 3,
        nodePorts: [
          { kafka: 8081, controller: 9103 },
          { kafka: 9112, controller: 9113 },
        ],
      }),
    ).toEqual(['ports registry and kafka node 2 are both 8081']);
    expect(validateOptions({ ...ok, brokers: 3, nodePorts: [{ kafka: 9102, controller: 9103 }] })).toEqual([
      'a 3-node cluster takes the ports of nodes 2-3: 2 kafka:controller pairs (got 1)',
    ]);
    // One node: the node ports are not used, so not checked.
    expect(validateOptions({ ...ok, nodePorts: [{ kafka: 8081, controller: 8081 }] })).toEqual([]);
  });

  test('node ports as kafka:controller pairs', () => {
    expect(parseNodePorts('19102:19103, 19112:19113')).toEqual([
      { kafka: 19102, controller: 19103 },
      { kafka: 19112, controller: 19113 },
    ]);
    expect(() => parseNodePorts('19102')).toThrow(/'19102' is not a kafka:controller port pair/);
  });

  test('service selection keeps the start order', () => {
    expect(selectedServices({})).toEqual(['kafka', 'registry', 's3']);
    expect(selectedServices({ services: ['s3', 'kafka'] })).toEqual(['kafka', 's3']);
  });
});

test('stackEnv of a cluster lists every node', () => {
  expect(stackEnv({ ports: { ...DEFAULT_PORTS }, brokers: 3 })[0]).toBe(
    'export DOCSTREAM_KAFKA_BROKERS=localhost:9092,localhost:9102,localhost:9112',
  );
});

test('stackEnv', () => {
  expect(stackEnv({ ports: { ...DEFAULT_PORTS } })).toEqual([
    'export DOCSTREAM_KAFKA_BROKERS=localhost:9092',
    'export DOCSTREAM_REGISTRY_URL=http://localhost:8081/apis/ccompat/v7',
    'export DOCSTREAM_BLOBS_S3_ENDPOINT=http://localhost:9002',
    'export AWS_ACCESS_KEY_ID=test',
    'export AWS_SECRET_ACCESS_KEY=test',
    'export AWS_REGION=us-east-1',
  ]);
});

describe('download progress lines', () => {
  test('maven and pip downloads are shown, other lines hidden', () => {
    expect(
      progressLine(
        '[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/4.1.1/kafka_2.13-4.1.1.jar (6.2 MB at 9 MB/s)',
      ),
    ).toBe('downloaded kafka_2.13-4.1.1.jar (6.2 MB at 9 MB/s)');
    expect(progressLine('  Downloading moto-5.2.5-py3-none-any.whl (7.2 MB)')).toBe(
      'downloaded moto-5.2.5-py3-none-any.whl (7.2 MB)',
    );
    expect(progressLine('[INFO] BUILD SUCCESS')).toBeUndefined();
    expect(progressLine('Collecting moto==5.2.5')).toBeUndefined();
  });

  test('stripAnsi', () => {
    expect(stripAnsi('\u001b[1mBUILD\u001b[m ok')).toBe('BUILD ok');
  });
});

describe('services', () => {
  test('Jaeger only when named; down stops it too', () => {
    expect(selectedServices({})).toEqual(['kafka', 'registry', 's3']);
    expect(selectedServices({}, true)).toEqual(['kafka', 'registry', 's3', 'jaeger']);
    expect(selectedServices({ services: ['jaeger'] })).toEqual(['jaeger']);
  });
});
