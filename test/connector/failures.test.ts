/**
 * Issue 12 on the real stack: every record ends and nothing stalls a partition. A 700 KB event is
 * dead-lettered (cut to fit, pointing at the original) while the ordinary events after it on the same
 * partition finish; personal data never reaches the dead-letter topic; a registry outage (a loopback
 * proxy in front of the shared registry answering 503, then dropping connections) pauses the input
 * without a dead letter and resumes; an unknown schema id costs one dead letter per record and one lookup;
 * three instances started at once on new topics all run; a start-up failure names what failed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { prefixedTopics } from '../../src/config/index.js';
import type { Connector } from '../../src/connector/connector.js';
import { Connector as ConnectorClass, StartupError } from '../../src/connector/connector.js';
import { RecordReader } from '../../src/kafka/record-reader.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { silentLogger } from '../../src/observability/logger.js';
import { Registry } from '../../src/serde/registry.js';
import { E2E, REGISTRY_URL, arrival, waitFor } from '../harness/e2e.js';
import { forward } from '../harness/proxy.js';
import { uniqueName } from '../harness/topics.js';

const MARKER = 'PII-MARKER-c9d2e1';
const DLQ_LIMIT = 300_000;

/** A loopback proxy in front of the registry that can answer 503 or drop every connection. */
async function registryProxy() {
  const upstream = new URL(REGISTRY_URL);
  const state = {
    mode: 'up' as 'up' | '503' | 'drop',
    idLookups: new Map<string, number>(),
    /** Availability probes (`GET /schemas/types`) whose connection was dropped. */
    droppedProbes: 0,
  };
  const server = http.createServer((req, res) => {
    const id = /\/schemas\/ids\/(\d+)/.exec(req.url ?? '')?.[1];
    if (id) state.idLookups.set(id, (state.idLookups.get(id) ?? 0) + 1);
    if (state.mode === '503') {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('registry unavailable');
      return;
    }
    if (state.mode === 'drop') {
      if (req.url?.endsWith('/schemas/types')) state.droppedProbes++;
      req.socket.destroy();
      return;
    }
    forward(upstream, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    state,
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('every record ends, nothing stalls a partition', () => {
  const env = new E2E();
  let proxy: Awaited<ReturnType<typeof registryProxy>>;
  let connector: Connector;
  let file: string;

  beforeAll(async () => {
    await env.start();
    proxy = await registryProxy();
    file = await env.writeFile('good.pdf', await sampleBytes('clean-pdf'));
    // A dead-letter topic with a limit below the big event: its dead letter must be cut to fit, and the
    // connector must know the limit from the broker.
    const admin = env.kafka.admin();
    await admin.connect();
    await admin.ensureTopics([
      { topic: env.topics.dlq, numPartitions: 1, configs: { 'max.message.bytes': String(DLQ_LIMIT) } },
    ]);
    await admin.disconnect();
    connector = await env.startConnector({
      registry: { url: proxy.url },
      connector: { redactFields: ['attributes.email'] },
    });
    await env.collect();
  });
  let outageCleanup: () => void = () => undefined;
  afterEach(() => outageCleanup());
  afterAll(async () => {
    await env.stop();
    await proxy.close();
  });

  it('dead-letters a 700 KB event (cut to fit) while the ordinary events after it finish', async () => {
    const big = arrival('evt-700k', file, { attributes: { pad: 'x'.repeat(700 * 1024) } });
    const ordinary = [1, 2, 3].map((i) => arrival(`evt-after-${i}`, file));
    await env.produce([big, ...ordinary]);
    await waitFor(
      'the ordinary events results and the dead letter',
      () =>
        ordinary.every((e) => env.forEvent(e.event_id as string).length >= 1) && env.on('dlq').length >= 1,
      60_000,
    );
    const deadLetters = env.on('dlq');
    expect(deadLetters.map((l) => [l.value.event_id, l.value.stage, l.value.error_code])).toEqual([
      ['evt-700k', 'validate', 'attributes_too_large'],
    ]);
    expect(deadLetters[0]!.value).toMatchObject({
      source_topic: env.topics.arrived,
      source_partition: 0,
      source_offset: 0,
    });
    expect(deadLetters[0]!.value.attributes).toEqual({});
    const kept = (deadLetters[0]!.value.value as Buffer).length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(DLQ_LIMIT);
    expect(deadLetters[0]!.value.message).toContain(`cut to fit the dead-letter topic`);
    expect(deadLetters[0]!.value.message).toContain(`the original is ${env.topics.arrived}/0@0`);
    for (const e of ordinary) {
      expect(env.forEvent(e.event_id as string).map((o) => env.kindOf(o))).not.toContain('dlq');
    }
    expect(await env.submissions('evt-700k')).toEqual([]);
    expect(connector.isReady().kafka).toBe(true);
  });

  it('never writes characteristics or configured fields to the dead-letter topic', async () => {
    const characteristics = {
      document_characteristics: { document_side: 'front', source_channel: 'api' },
      customer_case_id: MARKER,
    };
    const before = env.on('dlq').length;
    await env.produce([
      // Valid, but its blob is missing: a dead letter after validation, carrying the original record.
      arrival('evt-pii-blob', `${file}.missing`, {
        submission_characteristics: characteristics,
        attributes: { email: `${MARKER}@example.com`, tenant: 'acme' },
      }),
      // Invalid (unknown pipeline): a dead letter at validation.
      arrival('evt-pii-invalid', file, {
        submission_characteristics: characteristics,
        pipeline_configuration: 'NOPE',
      }),
    ]);
    await waitFor('two dead letters', () => env.on('dlq').length >= before + 2, 30_000);
    const admin = env.kafka.admin();
    await admin.connect();
    const reader = new RecordReader(env.kafka, admin, env.topics.dlq, silentLogger);
    await reader.start();
    try {
      const ends = await admin.topicOffsets(env.topics.dlq);
      const pointers = ends.flatMap((o) =>
        Array.from({ length: Number(o.high) - Number(o.low) }, (_, i) => ({
          partition: o.partition,
          offset: Number(o.low) + i,
        })),
      );
      expect(pointers.length).toBeGreaterThanOrEqual(3);
      const raw = await reader.readMany(pointers);
      for (const record of raw) {
        expect(record).not.toBeNull();
        expect(record!.value!.toString('latin1')).not.toContain(MARKER);
        expect((record!.key ?? Buffer.alloc(0)).toString('latin1')).not.toContain(MARKER);
      }
    } finally {
      await reader.stop();
      await admin.disconnect();
    }
    const blobDeadLetter = env.on('dlq').find((l) => l.value.event_id === 'evt-pii-blob')!;
    expect(blobDeadLetter.value).toMatchObject({ stage: 'blob', attributes: { tenant: 'acme' } });
    const copy = JSON.parse((blobDeadLetter.value.value as Buffer).toString('utf8')) as Record<
      string,
      unknown
    >;
    expect(copy).toMatchObject({ event_id: 'evt-pii-blob', attributes: { tenant: 'acme' } });
    expect(copy).not.toHaveProperty('submission_characteristics');
    expect(blobDeadLetter.value.message).toContain(`the original is ${env.topics.arrived}/0@`);
  });

  it('pauses the input while the registry is down, dead-letters nothing, and resumes', async () => {
    // An id the connector has never looked up, so decoding must reach the registry.
    const producerRegistry = new Registry({ url: REGISTRY_URL });
    const id = await producerRegistry.registerValueSchema(env.topics.arrived, 'DocumentArrived');
    const avro = (eventId: string) =>
      producerRegistry.encode(env.topics.arrived, {
        event_id: eventId,
        blob: { url: `file://${file}`, content_type: null, size_bytes: null, sha256: null },
        query_id: eventId,
        pipeline_configuration: 'FRAUD_ONLY',
        enable_decision: false,
        submission_characteristics: null,
        attributes: {},
        reprocess: false,
      });
    const deadLetters = env.on('dlq').length;
    proxy.state.mode = '503';
    // Back up whatever happens, so the next test finds a working registry.
    outageCleanup = () => (proxy.state.mode = 'up');
    await env.produce([avro('evt-outage-1'), arrival('evt-outage-json', file)]);
    await waitFor('the lookup to fail', () => (proxy.state.idLookups.get(String(id)) ?? 0) >= 1, 30_000);
    await waitFor('the input to pause', () => connector.pausedForOutage, 30_000);
    expect(await gauge(connector)).toBe(1);
    proxy.state.mode = 'drop';
    // Probes run one after another: a second dropped probe means the first one's failure kept the
    // input paused rather than resuming it or ending the records.
    const dropped = proxy.state.droppedProbes;
    await waitFor(
      'two probes to meet a dropped connection',
      () => proxy.state.droppedProbes >= dropped + 2,
      60_000,
    );
    expect(connector.pausedForOutage).toBe(true);
    expect(env.forEvent('evt-outage-1')).toEqual([]);
    expect(env.on('dlq').length).toBe(deadLetters);
    proxy.state.mode = 'up';
    await waitFor(
      'both events to finish after the outage',
      () => env.forEvent('evt-outage-1').length >= 1 && env.forEvent('evt-outage-json').length >= 1,
      90_000,
    );
    expect(connector.pausedForOutage).toBe(false);
    expect(await gauge(connector)).toBe(0);
    expect(env.on('dlq').length).toBe(deadLetters);
    expect(connector.isReady().kafka).toBe(true);
  });

  it('dead-letters records with an unknown schema id, one lookup for all of them', async () => {
    const before = env.on('dlq').length;
    const unknownId = 0x7ffff000 + Math.floor(Math.random() * 4000);
    const header = Buffer.alloc(5);
    header.writeUInt32BE(unknownId, 1);
    const record = Buffer.concat([header, Buffer.from('garbage')]);
    await env.produce([record, record, arrival('evt-after-unknown', file)]);
    await waitFor(
      'two dead letters and the event after them',
      () => env.on('dlq').length >= before + 2 && env.forEvent('evt-after-unknown').length >= 1,
      60_000,
    );
    const deadLetters = env.on('dlq').slice(before);
    expect(deadLetters.map((l) => [l.value.stage, l.value.error_code])).toEqual([
      ['decode', 'unknown_schema'],
      ['decode', 'unknown_schema'],
    ]);
    expect(proxy.state.idLookups.get(String(unknownId))).toBe(1);
  });
});

async function gauge(c: Connector): Promise<number> {
  return (await c.metrics.inputPausedByRegistry.get()).values[0]?.value ?? 0;
}

async function completed(c: Connector): Promise<number> {
  return (await c.metrics.completed.get()).values.reduce((a, v) => a + v.value, 0);
}

async function waitUntil(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('start-up', () => {
  const env = new E2E();
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('three instances started at once on topics that do not exist yet all run', async () => {
    const topics = prefixedTopics(uniqueName('race'), 3);
    const overrides = { topics, kafka: { groupId: uniqueName('race-group') } };
    const started = await Promise.allSettled([0, 1, 2].map(() => env.startConnector(overrides)));
    expect(started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'ok'))).toEqual([
      'ok',
      'ok',
      'ok',
    ]);
    const file = await env.writeFile('race.pdf', await sampleBytes('clean-pdf'));
    const instances = started.map((s) => (s as PromiseFulfilledResult<Connector>).value);
    await waitFor(
      'every partition assigned',
      () => instances.reduce((n, c) => n + c.isReady().assigned, 0) === 3,
      60_000,
    );
    const events = [0, 1, 2, 3, 4, 5].map((i) => arrival(`evt-race-${i}`, file));
    for (const e of events) {
      await env.producer.send(topics.arrived, [{ key: e.event_id as string, value: JSON.stringify(e) }]);
    }
    await waitUntil(
      'every event analysed',
      async () => (await Promise.all(instances.map(completed))).reduce((a, b) => a + b, 0) >= events.length,
      60_000,
    );
    for (const c of instances) expect(c.isReady().kafka).toBe(true);
  });

  it('a start-up failure names the step that failed; the CLI exits non-zero', async () => {
    const overrides = {
      topics: { ...prefixedTopics(uniqueName('bad'), 1), replicationFactor: 3 },
      kafka: { groupId: uniqueName('bad-group') },
    };
    const error = await ConnectorClass.start({ config: env.config(overrides), logger: silentLogger }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StartupError);
    expect((error as StartupError).message).toMatch(
      /start-up failed while preparing topics and schemas: .*bad-/,
    );
    const child = env.spawnConnector(overrides);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(env.childLogs.at(-1)!.join('')).toContain('start-up failed while preparing topics and schemas');
  }, 120_000);
});

describe('a crashed consumer', () => {
  const env = new E2E();
  /** The connector of the first test, kept for the next (one member of the group). */
  let started: Connector | undefined;
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('is restarted with back-off and counted; not ready meanwhile; the record is processed after', async () => {
    const file = await env.writeFile('crash.pdf', await sampleBytes('clean-pdf'));
    const connector = await env.startConnector();
    started = connector;
    await env.collect();
    await waitFor('a partition assigned', () => connector.isReady().assigned > 0, 30_000);
    // The loop itself fails for a while (not a record's handling: that ends in a dead letter or is tried
    // again): the batch fails, the consumer crashes, and the restarted consumer fetches the record again.
    type Prepare = (partition: number) => Promise<void>;
    const preparation = (connector as unknown as { loop: { preparation: { prepare: Prepare } } }).loop
      .preparation;
    const prepare = preparation.prepare.bind(preparation);
    const failUntil = Date.now() + 8000;
    preparation.prepare = async (partition) => {
      if (Date.now() < failUntil) throw new Error('simulated failure of the consumer loop');
      return prepare(partition);
    };
    await env.produce([arrival('evt-crash', file)]);
    let sawUnready = false;
    await waitUntil(
      'the event analysed after restarts',
      async () => {
        if (!connector.isReady().kafka) sawUnready = true;
        return env.forEvent('evt-crash').length >= 3;
      },
      90_000,
    );
    const restarts = (await connector.metrics.consumerRestarts.get()).values[0]?.value ?? 0;
    expect(restarts).toBeGreaterThanOrEqual(1);
    expect(sawUnready).toBe(true);
    expect(env.on('dlq')).toEqual([]);
    await waitFor('ready again', () => connector.isReady().kafka, 30_000);
  }, 120_000);

  it('ends a record whose admission throws unexpectedly in a dead letter; the loop goes on, nothing restarts', async () => {
    const file = await env.writeFile('bug.pdf', await sampleBytes('clean-pdf'));
    const connector = started ?? (await env.startConnector());
    if (!started) await env.collect();
    const restartsBefore = (await connector.metrics.consumerRestarts.get()).values[0]?.value ?? 0;
    const engine = connector.engine;
    const admit = engine.admit.bind(engine);
    engine.admit = async (source, event, existing) => {
      if (event.event_id === 'evt-bug') throw new RangeError('Maximum call stack size exceeded');
      return admit(source, event, existing);
    };
    await env.produce([arrival('evt-bug', file), arrival('evt-after-bug', file)]);
    await waitFor(
      'the next event analysed and a dead letter for the failing one',
      () => env.forEvent('evt-after-bug').length >= 3 && env.on('dlq').length >= 1,
      60_000,
    );
    const deadLetters = env.on('dlq').map((l) => [l.value.stage, l.value.error_code, l.value.message]);
    expect(deadLetters).toEqual([
      ['decode', 'handler_error', 'handling the record failed: Maximum call stack size exceeded'],
    ]);
    const restarts = (await connector.metrics.consumerRestarts.get()).values[0]?.value ?? 0;
    expect(restarts).toBe(restartsBefore);
  });
});
