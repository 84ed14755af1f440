import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Kafka, logLevel } from 'kafkajs';
import { uniqueName } from './harness/topics.js';

const CLI = resolve('dist/cli/index.js');
const reuse = process.env.DOCSTREAM_TEST_STACK === 'reuse';
/** Services the default run dir runs (set by the global setup); the others are reused from elsewhere. */
const managedServices = (process.env.DOCSTREAM_TEST_STACK_MANAGED ?? '').split(',').filter(Boolean);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, ...env }, timeout: 300_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

function listen(port = 0): Promise<Server> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(port, () => ok(server));
  });
}

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => listen(0)));
  const ports = servers.map((s) => {
    const addr = s.address();
    if (addr === null || typeof addr === 'string') throw new Error('no port');
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
  return ports;
}

/** Port flags for a stack of its own, on ports nothing listens on. */
async function freePortFlags(): Promise<string[]> {
  const ports = await freePorts(5);
  const flags = ['--kafka-port', '--kafka-controller-port', '--registry-port', '--registry-management-port'];
  return [...flags, '--s3-port'].flatMap((flag, i) => [flag, String(ports[i])]);
}

const brokers = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
const registryUrl = process.env.DOCSTREAM_REGISTRY_URL ?? 'http://localhost:8081/apis/ccompat/v7';
const s3Endpoint = process.env.DOCSTREAM_BLOBS_S3_ENDPOINT ?? 'http://localhost:9002';

describe('docstream stack (CLI)', () => {
  const managed = managedServices.length > 0 ? test : test.skip;
  const only = ['--services', managedServices.join(',')];

  managed('up is idempotent: a second up reports the services already running', async () => {
    for (let i = 0; i < 2; i++) {
      const run = await cli(['stack', 'up', ...only]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      for (const s of managedServices)
        expect(run.stdout).toMatch(new RegExp(`^${s}: already running \\(pid \\d+`, 'm'));
      expect(run.stdout).toContain('stack: already running, nothing to start');
    }
  });

  managed('status lists every service healthy and exits 0', async () => {
    const run = await cli(['stack', 'status', ...only]);
    expect(run.code).toBe(0);
    for (const s of managedServices)
      expect(run.stdout).toMatch(new RegExp(`^${s}\\s+pid \\d+\\s+port \\S+\\s+healthy$`, 'm'));
  });

  test('env prints the exports', async () => {
    const run = await cli(['stack', 'env', '--kafka-port', '19092']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('export DOCSTREAM_KAFKA_BROKERS=localhost:19092\n');
    expect(run.stdout).toMatch(/^export DOCSTREAM_REGISTRY_URL=http:\/\/localhost:\d+\/apis\/ccompat\/v7$/m);
    expect(run.stdout).toMatch(/^export DOCSTREAM_BLOBS_S3_ENDPOINT=http:\/\/localhost:\d+$/m);
    expect(run.stdout).toContain('export AWS_ACCESS_KEY_ID=test\n');
  });

  describe('with a separate run dir', () => {
    let runDir: string;
    beforeEach(() => {
      runDir = mkdtempSync(join(tmpdir(), 'docstream-stack-test-'));
    });
    afterEach(() => rmSync(runDir, { recursive: true, force: true }));

    test('up fails before starting anything when a port is taken, naming the service and the port', async () => {
      const [kafka, controller, registry, management, s3] = (await freePorts(5)) as [
        number,
        number,
        number,
        number,
        number,
      ];
      const taken = await listen(kafka);
      try {
        const run = await cli([
          'stack',
          'up',
          '--run-dir',
          runDir,
          '--timeout',
          '30',
          '--kafka-port',
          String(kafka),
          '--kafka-controller-port',
          String(controller),
          '--registry-port',
          String(registry),
          '--registry-management-port',
          String(management),
          '--s3-port',
          String(s3),
        ]);
        expect(run.code).not.toBe(0);
        expect(run.stderr).toContain(`kafka: port ${kafka} is already in use by another process`);
        // nothing was started from this run dir
        const pidFiles = existsSync(runDir)
          ? readdirSync(runDir, { recursive: true }).filter((f) => String(f).endsWith('.pid'))
          : [];
        expect(pidFiles).toEqual([]);
      } finally {
        await new Promise((ok) => taken.close(ok));
      }
      // and the shared stack is untouched
      if (!reuse) expect((await cli(['stack', 'status'])).code).toBe(0);
    });

    test('status of a run dir with nothing running exits 3', async () => {
      const run = await cli(['stack', 'status', '--run-dir', runDir, ...(await freePortFlags())]);
      expect(run.code).toBe(3);
      expect(run.stdout).toMatch(/^kafka\s+pid -\s+port \S+\s+stopped$/m);
    });

    test('status warns of too many partition directories; down --wipe removes them and says so', async () => {
      const data = join(runDir, 'kafka', 'data');
      for (let i = 0; i < 2001; i++) mkdirSync(join(data, `t-${i}`), { recursive: true });
      const portFlags = await freePortFlags();

      const status = await cli(['stack', 'status', '--run-dir', runDir, ...portFlags]);
      expect(status.code).toBe(3);
      expect(status.stdout).toContain(`kafka: warning: 2,001 partition directories in ${data}`);
      expect(status.stdout).toContain('`docstream stack down --wipe`');

      const down = await cli(['stack', 'down', '--wipe', '--run-dir', runDir, ...portFlags]);
      expect(down.stderr).toBe('');
      expect(down.code).toBe(0);
      expect(down.stdout).toContain(
        `kafka: removed ${join(runDir, 'kafka')} (2,001 partition directories, 0.0 MB)`,
      );
      expect(down.stdout).toMatch(/^stack: wiped; the next `docstream stack up` starts afresh$/m);
      expect(existsSync(runDir)).toBe(false);
    });

    test('bad input gives a clear message and a non-zero exit', async () => {
      const run = await cli(['stack', 'up', '--run-dir', runDir, '--s3-port', 'nope']);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain("option '--s3-port <port>' argument 'nope' is invalid");
    });
  });
});

describe('the stack services work', () => {
  test('kafka: produce and consume a message', async () => {
    const kafka = new Kafka({ clientId: 'stack-test', brokers, logLevel: logLevel.NOTHING });
    const topic = uniqueName('stack-test');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'k', value: 'hello stack' }] });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('stack-test-group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const value = await new Promise<string>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error('no message within 30 s')), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer);
          ok(message.value?.toString() ?? '');
        },
      });
    });
    await consumer.disconnect();
    expect(value).toBe('hello stack');
  });

  test('registry: register an Avro schema through the Confluent-compatible API', async () => {
    const subject = `${uniqueName('stack-test')}-value`;
    const schema = JSON.stringify({ type: 'record', name: 'T', fields: [{ name: 'a', type: 'string' }] });
    const res = await fetch(`${registryUrl}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema }),
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: number };
    expect(typeof id).toBe('number');
    const byId = await fetch(`${registryUrl}/schemas/ids/${id}`);
    expect(byId.status).toBe(200);
    expect(JSON.parse(((await byId.json()) as { schema: string }).schema)).toEqual(JSON.parse(schema));
  });

  test('s3: put and get an object', async () => {
    const s3 = new S3Client({
      endpoint: s3Endpoint,
      region: process.env.AWS_REGION ?? 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const Bucket = uniqueName('stack-test');
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(
      new PutObjectCommand({ Bucket, Key: 'a/b.txt', Body: 'hello s3', ContentType: 'text/plain' }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket, Key: 'a/b.txt' }));
    expect(await got.Body?.transformToString()).toBe('hello s3');
    s3.destroy();
  });
});
