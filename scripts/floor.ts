/**
 * The floor of the benchmark: the least work a process can do for a FRAUD_ONLY document, run as a
 * child so that its CPU is its own accounting. It reads the same arrival records, makes the same
 * API calls (token once, create, upload, GET fraud / quality / classification) through a bare
 * node:http keep-alive agent, and makes the same Kafka writes as plain bytes (the connector's three
 * state records per document, CREATED, UPLOADED and DONE, and one record per result), gathered
 * like the connector's coalescing sender (one request in flight, what arrives meanwhile goes in
 * the next). No validation, no schemas, no
 * retries, no limiter: what is left is the cost of HTTP and Kafka themselves.
 *
 * Its Kafka client is kafkajs (the connector's), with FloorSettings.rdkafkaModule librdkafka
 * through @confluentinc/kafka-javascript's KafkaJS-compatible API (the rdkafka floor), or with
 * FloorSettings.platformaticModule @platformatic/kafka (the platformatic floor): the same flow and
 * the same calls, so that they differ by the client alone.
 *
 * With FloorSettings.naivePoll it is the naive poller of the freshness benchmark instead
 * (scripts/lib/bench-freshness.ts): a fixed poll schedule, 429s sent again.
 *
 * Started by scripts/lib/bench-floor.ts with one argument, a JSON file of FloorSettings; reports
 * { type: 'floor', ... } over IPC and exits (with holdAfterReport, once its stdin ends).
 */
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import kafkajs from 'kafkajs';
import type { Consumer, Producer, TopicMessages } from 'kafkajs';
import { InProcessProfiler } from './lib/profiler.js';

const { Kafka, logLevel } = kafkajs;

export interface FloorSettings {
  brokers: string[];
  groupId: string;
  arrivedTopic: string;
  stateTopic: string;
  resultTopics: { fraud: string; quality: string; classification: string };
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  docs: number;
  /**
   * Documents before the measured ones: once they are done the floor says so ({ type: 'warm' }
   * over IPC), the harness produces the measured ones, and the clock starts at the next record.
   */
  warmupDocs: number;
  maxInFlight: number;
  /** The sandbox's processing time: results are asked for once it has passed. */
  latencyMs: number;
  deadline: number;
  /** Write a CPU profile of the measured documents (not the warm-up) to this file. */
  cpuProfile?: string;
  /**
   * After the report, wait until stdin ends before leaving the group and exiting, so that the
   * harness can read the process's CPU at the moment of the report (the quiet benchmark's trickle).
   */
  holdAfterReport?: boolean;
  /**
   * The Go floor only (scripts/go-floor), which writes its results as the connector does: the
   * schema id registered for each result topic and the schema's .avsc file.
   */
  resultSchemas?: Record<'fraud' | 'quality' | 'classification', { id: number; file: string }>;
  /**
   * The rdkafka floor: the installed @confluentinc/kafka-javascript package (its directory, from
   * scripts/lib/rdkafka-floor.ts) whose KafkaJS API replaces kafkajs; absent: kafkajs.
   */
  rdkafkaModule?: string;
  /**
   * The platformatic floor: the entry file of the installed @platformatic/kafka (from
   * scripts/lib/platformatic-floor.ts), whose Producer and Consumer replace kafkajs's.
   */
  platformaticModule?: string;
  /**
   * The naive poller of the freshness benchmark instead of the learned delay: each result's first
   * GET `firstMs` after the upload, then `initialMs` doubling to `maxMs` between GETs.
   */
  naivePoll?: { firstMs: number; initialMs: number; maxMs: number };
  /** Answers 429 are sent again after their Retry-After (default 100 ms): a limit below the load. */
  retryRateLimited?: boolean;
}

export interface FloorReport {
  type: 'floor';
  completed: number;
  /** user + system CPU from the first measured record taken to the last result acknowledged. */
  cpuUs: number;
  /** The same over the warm-up documents; null without warm-up. */
  coldCpuUs: number | null;
  durationMs: number;
  httpCalls: number;
  notReady: number;
  kafkaRequests: number;
  sockets: number;
}

interface Reply {
  status: number;
  body: Buffer;
  headers: http.IncomingHttpHeaders;
}

const settings = JSON.parse(fs.readFileSync(process.argv[2] as string, 'utf8')) as FloorSettings;
const base = new URL(settings.baseUrl);
// The connector's pool (src/client/wire.ts): 256 keep-alive connections per origin, most recent first.
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, scheduling: 'lifo' });
let sockets = 0;
let httpCalls = 0;
let notReady = 0;

async function call(
  method: string,
  url: string,
  headers: http.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<Reply> {
  for (;;) {
    const reply = await callOnce(method, url, headers, body);
    if (reply.status !== 429 || !settings.retryRateLimited) return reply;
    await sleep(Math.max(100, Number(reply.headers['retry-after'] ?? 0) * 1000));
  }
}

function callOnce(
  method: string,
  url: string,
  headers: http.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<Reply> {
  httpCalls += 1;
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }),
      );
      res.on('error', reject);
    });
    req.on('socket', (s) => {
      if (!(s as { counted?: boolean }).counted) {
        (s as { counted?: boolean }).counted = true;
        sockets += 1;
      }
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The floor's Kafka client, with the settings of every client alike: an idempotent producer with
 * one request in flight writing with acks from all replicas, and a consumer of the arrivals from
 * the beginning with 100 ms fetch waits. The KafkaJS-compatible API takes a client's settings under
 * `kafkaJS`, acks per producer rather than per send and fromBeginning per consumer rather than per
 * subscription; otherwise its producer and consumer are used as kafkajs's. @platformatic/kafka
 * consumes through a stream, read one record after another as eachBatch reads a batch.
 */
interface FloorKafka {
  connect(): Promise<void>;
  sendBatch(topicMessages: TopicMessages[]): Promise<unknown>;
  /**
   * Joins the group on the topic and hands each record's value to onValue in order, the next one
   * only once onValue's promise has settled (its backpressure).
   */
  consume(topic: string, onValue: (value: Buffer) => Promise<void>): Promise<void>;
  disconnect(): Promise<void>;
}

const client = { brokers: settings.brokers, clientId: 'docstream-floor' };
const producerSettings = { idempotent: true, maxInFlightRequests: 1 };
const consumerSettings = { groupId: settings.groupId, maxWaitTimeInMs: 100 };

/** kafkajs, or a client with its API: its consumer's eachBatch, offsets resolved per record. */
function kafkajsShaped(
  producer: Producer,
  consumer: Consumer,
  sendBatch: (topicMessages: TopicMessages[]) => Promise<unknown>,
  subscribe: (topic: string) => Promise<void>,
): FloorKafka {
  return {
    async connect() {
      await producer.connect();
      await consumer.connect();
    },
    sendBatch,
    async consume(topic, onValue) {
      await subscribe(topic);
      await consumer.run({
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          for (const message of batch.messages) {
            if (!message.value) continue;
            await onValue(message.value);
            resolveOffset(message.offset);
          }
          await heartbeat();
        },
      });
    },
    async disconnect() {
      await consumer.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
    },
  };
}

/** The part of @platformatic/kafka the floor uses (its own types are in its own install). */
interface PlatformaticKafka {
  Producer: new (options: object) => {
    send(options: { messages: Array<{ topic: string; key: Buffer; value: Buffer }> }): Promise<unknown>;
    metadata(options: { topics: string[] }): Promise<unknown>;
    close(): Promise<void>;
  };
  Consumer: new (options: object) => {
    consume(options: object): Promise<AsyncIterable<{ value: Buffer | null }> & { close(): Promise<void> }>;
    close(force?: boolean): Promise<void>;
  };
  ProduceAcks: { ALL: number };
  MessagesStreamModes: { COMMITTED: string };
  MessagesStreamFallbackModes: { EARLIEST: string };
}

async function platformaticKafka(entry: string): Promise<FloorKafka> {
  // Loaded from its own install (.cache/platformatic-floor): it is not one of docstream's dependencies.
  const plt = (await import(pathToFileURL(entry).href)) as PlatformaticKafka;
  const base = { clientId: client.clientId, bootstrapBrokers: client.brokers };
  const producer = new plt.Producer({
    ...base,
    idempotent: producerSettings.idempotent,
    maxInflights: producerSettings.maxInFlightRequests,
    acks: plt.ProduceAcks.ALL,
  });
  // Offsets committed every 5 s, as librdkafka's auto.commit.interval.ms does by default.
  const consumer = new plt.Consumer({
    ...base,
    groupId: consumerSettings.groupId,
    maxWaitTime: consumerSettings.maxWaitTimeInMs,
    autocommit: 5000,
  });
  let stream: { close(): Promise<void> } | null = null;
  return {
    async connect() {
      await producer.metadata({ topics: [settings.stateTopic] });
    },
    sendBatch: (topicMessages) =>
      producer.send({
        messages: topicMessages.flatMap(({ topic, messages }) =>
          messages.map((m) => ({ topic, key: Buffer.from(m.key as string), value: m.value as Buffer })),
        ),
      }),
    async consume(topic, onValue) {
      const records = await consumer.consume({
        topics: [topic],
        mode: plt.MessagesStreamModes.COMMITTED,
        fallbackMode: plt.MessagesStreamFallbackModes.EARLIEST,
      });
      stream = records;
      void (async () => {
        for await (const record of records) if (record.value) await onValue(record.value);
      })().catch((err: unknown) =>
        process.stderr.write(`floor: consumer: ${err instanceof Error ? err.message : String(err)}\n`),
      );
    },
    async disconnect() {
      await stream?.close().catch(() => undefined);
      await consumer.close().catch(() => undefined);
      await producer.close().catch(() => undefined);
    },
  };
}

async function floorKafka(): Promise<FloorKafka> {
  if (settings.platformaticModule) return platformaticKafka(settings.platformaticModule);
  if (settings.rdkafkaModule) {
    // Loaded from its own install (.cache/rdkafka-floor): it is not one of docstream's dependencies.
    const { KafkaJS } = createRequire(import.meta.url)(settings.rdkafkaModule) as {
      KafkaJS: {
        Kafka: new (config: object) => {
          producer(config: object): Producer;
          consumer(config: object): Consumer;
        };
        logLevel: { NOTHING: number };
      };
    };
    const rd = new KafkaJS.Kafka({ kafkaJS: { ...client, logLevel: KafkaJS.logLevel.NOTHING } });
    const producer = rd.producer({ kafkaJS: { ...producerSettings, acks: -1 } });
    const consumer = rd.consumer({ kafkaJS: { ...consumerSettings, fromBeginning: true } });
    return kafkajsShaped(
      producer,
      consumer,
      (topicMessages) => producer.sendBatch({ topicMessages }),
      (topic) => consumer.subscribe({ topics: [topic] }),
    );
  }
  const kafka = new Kafka({ ...client, logLevel: logLevel.NOTHING });
  const producer = kafka.producer(producerSettings);
  const consumer = kafka.consumer(consumerSettings);
  return kafkajsShaped(
    producer,
    consumer,
    (topicMessages) => producer.sendBatch({ acks: -1, topicMessages }),
    (topic) => consumer.subscribe({ topic, fromBeginning: true }),
  );
}

/** Made at the start of main (the platformatic floor imports its client then). */
let floorClient: FloorKafka;
const sendBatch = (topicMessages: TopicMessages[]) => floorClient.sendBatch(topicMessages);
let kafkaRequests = 0;
let queue: Array<{
  topic: string;
  key: string;
  value: Buffer;
  done: () => void;
  fail: (e: unknown) => void;
}> = [];
let sending = false;

function write(topic: string, key: string, value: Buffer): Promise<void> {
  return new Promise((done, fail) => {
    queue.push({ topic, key, value, done, fail });
    if (!sending) void flush();
  });
}

async function flush(): Promise<void> {
  sending = true;
  while (queue.length > 0) {
    const items = queue;
    queue = [];
    const byTopic = new Map<string, Array<{ key: string; value: Buffer }>>();
    for (const item of items) {
      let list = byTopic.get(item.topic);
      if (!list) byTopic.set(item.topic, (list = []));
      list.push({ key: item.key, value: item.value });
    }
    kafkaRequests += 1;
    try {
      await sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
      for (const item of items) item.done();
    } catch (err) {
      for (const item of items) item.fail(err);
    }
  }
  sending = false;
}

/** Over the measured documents only (settings.cpuProfile). */
const profiler = settings.cpuProfile ? new InProcessProfiler() : null;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const basic = Buffer.from(`${settings.clientId}:${settings.clientSecret}`).toString('base64');
  const tokenReply = await call(
    'POST',
    `${base.origin}/oauth2/token`,
    { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    Buffer.from('grant_type=client_credentials'),
  );
  const token = (JSON.parse(tokenReply.body.toString('utf8')) as { access_token: string }).access_token;
  const auth = { authorization: `Bearer ${token}`, accept: 'application/json' };
  const jsonHeaders = { ...auth, 'content-type': 'application/json' };
  floorClient = await floorKafka();
  await floorClient.connect();

  let started = 0;
  let cpuAtStart = 0;
  let coldCpuUs: number | null = null;
  // Counters at the end of the warm-up, subtracted from the report.
  const atWarm = { httpCalls: 0, notReady: 0, kafkaRequests: 0 };
  const total = settings.warmupDocs + settings.docs;
  let readyAfter = settings.latencyMs + 50;
  let completed = 0;
  let inFlight = 0;
  const waiters: Array<() => void> = [];
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));

  const document = async (value: Buffer): Promise<void> => {
    const event = JSON.parse(value.toString('utf8')) as {
      event_id: string;
      query_id: string;
      blob: { url: string };
    };
    const created = await call(
      'POST',
      `${base.origin}/v2/submission`,
      jsonHeaders,
      Buffer.from(JSON.stringify({ query_id: event.query_id })),
    );
    const { submission_id: id, upload_url: uploadUrl } = JSON.parse(created.body.toString('utf8')) as {
      submission_id: string;
      upload_url: string;
    };
    // The connector's three state records, at the same points: CREATED before the upload (so that
    // a crash cannot create a second submission), UPLOADED after it, DONE after the results.
    const state = (status: string) =>
      write(
        settings.stateTopic,
        event.event_id,
        Buffer.from(JSON.stringify({ event_id: event.event_id, submission_id: id, status })),
      );
    await state('CREATED');
    const file = await fs.promises.readFile(new URL(event.blob.url));
    await call('PUT', uploadUrl, { 'content-type': 'application/octet-stream' }, file);
    await state('UPLOADED');
    // When results are usually ready, learned like the connector's readiness estimate (later after
    // an early GET, a little sooner after a timely one), so that nearly every result needs one GET,
    // as in the connector; the GETs that still came early are reported (notReady).
    const naive = settings.naivePoll;
    await sleep(naive ? naive.firstMs : readyAfter);
    await Promise.all(
      (['fraud', 'quality', 'classification'] as const).map(async (kind) => {
        for (let attempt = 0; ; attempt++) {
          const reply = await call('GET', `${base.origin}/v2/submission/${id}/${kind}`, auth);
          if (reply.status === 200) {
            if (attempt === 0) readyAfter = Math.max(settings.latencyMs, readyAfter - 2);
            return write(settings.resultTopics[kind], id, reply.body);
          }
          notReady += 1;
          if (naive) {
            await sleep(Math.min(naive.maxMs, naive.initialMs * 2 ** Math.min(attempt, 20)));
            continue;
          }
          if (attempt === 0) readyAfter = Math.min(5000, readyAfter + 25);
          await sleep(100);
        }
      }),
    );
    await state('DONE');
  };

  await floorClient.consume(settings.arrivedTopic, async (value) => {
    if (started === 0) {
      started = performance.now();
      const cpu = process.cpuUsage();
      cpuAtStart = cpu.user + cpu.system;
      if (completed >= settings.warmupDocs) void profiler?.start();
    }
    while (inFlight >= settings.maxInFlight) await new Promise<void>((resolve) => waiters.push(resolve));
    inFlight += 1;
    void document(value).then(
      () => {
        inFlight -= 1;
        completed += 1;
        waiters.shift()?.();
        if (settings.warmupDocs > 0 && completed === settings.warmupDocs) {
          const cpu = process.cpuUsage();
          coldCpuUs = cpu.user + cpu.system - cpuAtStart;
          Object.assign(atWarm, { httpCalls, notReady, kafkaRequests });
          started = 0; // the measured clock starts at the next record
          process.send?.({ type: 'warm' });
        }
        if (completed >= total) finish();
      },
      (err: unknown) => {
        process.stderr.write(`floor: ${err instanceof Error ? err.message : String(err)}\n`);
        inFlight -= 1;
        waiters.shift()?.();
      },
    );
  });
  const timer = setTimeout(finish, Math.max(1000, settings.deadline - Date.now()));
  await finished;
  clearTimeout(timer);
  const cpu = process.cpuUsage();
  if (settings.cpuProfile) await profiler?.stop(settings.cpuProfile);
  const report: FloorReport = {
    type: 'floor',
    completed: completed - settings.warmupDocs,
    cpuUs: cpu.user + cpu.system - cpuAtStart,
    coldCpuUs,
    durationMs: performance.now() - started,
    httpCalls: httpCalls - atWarm.httpCalls,
    notReady: notReady - atWarm.notReady,
    kafkaRequests: kafkaRequests - atWarm.kafkaRequests,
    sockets,
  };
  process.send?.(report);
  if (settings.holdAfterReport) {
    await new Promise<void>((resolve) => {
      process.stdin.once('end', resolve).once('close', resolve).resume();
    });
  }
  await floorClient.disconnect();
  agent.destroy();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `floor failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
