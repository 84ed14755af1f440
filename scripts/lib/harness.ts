/**
 * What the benchmark and the resilience suite share: unique topics on the real stack, the connector
 * as a child process (`docstream run` of the built CLI, so its memory is its own), arrival events,
 * finished documents' state records (to measure what held state costs), and a collector that
 * follows every output topic and tells, per event_id, what came out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { prefixedTopics, type Config } from '../../src/config/index.js';
import type { KafkaClient } from '../../src/kafka/index.js';
import { type KafkaAdmin, type KafkaProducer, type OutgoingMessage } from '../../src/kafka/index.js';
import { Registry } from '../../src/serde/registry.js';
import { OutputReader } from '../../src/connector/outputs/output-reader.js';
import type { FinishedState } from '../../src/connector/state/document-state.js';
import { encodeState } from '../../src/connector/state/record.js';
import { missingRuntimeDefaults } from '../../src/cli/runtime-defaults.js';
import { scratchName, sweepRunTopics } from '../../src/stack/scratch-topics.js';
import { within } from '../../src/util/within.js';

export const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
export const REGISTRY_URL = process.env.DOCSTREAM_REGISTRY_URL ?? 'http://localhost:8081/apis/ccompat/v7';
export const CLI = path.resolve('dist/cli/index.js');

/** The results a FRAUD_ONLY document waits for (the design's default). */
export const RESULT_KINDS = ['fraud', 'quality', 'classification'] as const;
export type ResultKind = (typeof RESULT_KINDS)[number];

/**
 * A name unique to one use in this benchmark run, holding the run's id (`prefix-<run>-<random>`), so
 * that `endOfRun` finds the topics a mode left behind and no other run's.
 */
export const uniqueName = (prefix: string): string => scratchName(prefix);

/**
 * The end of a benchmark process, whichever way it ends: `end(code)` deletes the topics its run made
 * that a mode has not deleted itself (after a failure, at the hard stop), then exits with `code`.
 * SIGINT and SIGTERM end it the same way (130, 143); a second one stops it at once. The connectors
 * and floors it started are killed and its collectors stopped first: a running one would create the
 * topics again as it writes to or reads from them (the stack creates topics on first use).
 */
export function endOfRun(log: (line: string) => void): (code: number) => Promise<never> {
  let ending: Promise<never> | undefined;
  const end = (code: number): Promise<never> =>
    (ending ??= Promise.all([killChildren(), stopCollectors()])
      .then(() => sweepRunTopics(BROKERS, log))
      .then(() => process.exit(code)));
  process.once('SIGINT', () => void end(130));
  process.once('SIGTERM', () => void end(143));
  return end;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export { prefixedTopics };

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function ensureInputTopics(kafka: KafkaClient, topics: Config['topics']): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.ensureTopics(
      [topics.arrived, topics.feedback].map((topic) => ({
        topic,
        numPartitions: topics.outputPartitions,
        replicationFactor: 1,
      })),
    );
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopics(kafka: KafkaClient, topics: Config['topics']): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const names = Object.values(topics).filter((v): v is string => typeof v === 'string');
    await admin.deleteTopics(names);
  } catch {
    // What is left is deleted at the end of the run (`endOfRun`), with the reason if it fails again.
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** A compacted state topic of `partitions` partitions, as the connector's state topic is. */
export async function ensureStateTopic(admin: KafkaAdmin, topic: string, partitions: number): Promise<void> {
  await admin.ensureTopics([
    { topic, numPartitions: partitions, replicationFactor: 1, configs: { 'cleanup.policy': 'compact' } },
  ]);
}

/**
 * Writes `docs` finished-document state records (v2) of `inputTopic` to `stateTopic`, spread over
 * `partitions` and finished over the last hour, as batches of 5000 records, `parallel` batches
 * acknowledged at a time. With a `deadline` (epoch ms) it fails once that has passed between rounds.
 */
export async function writeFinishedStates(
  kafka: KafkaClient,
  o: {
    stateTopic: string;
    inputTopic: string;
    partitions: number;
    docs: number;
    parallel?: number;
    deadline?: number;
  },
): Promise<void> {
  const chunk = 5000;
  const perRound = chunk * (o.parallel ?? 1);
  const producer = kafka.producer();
  await producer.connect();
  const now = Date.now();
  try {
    for (let from = 0; from < o.docs; from += perRound) {
      if (o.deadline !== undefined && Date.now() > o.deadline) {
        throw new Error('deadline reached while producing state records');
      }
      const sends: Array<Promise<unknown>> = [];
      for (let c = from; c < Math.min(o.docs, from + perRound); c += chunk) {
        const messages: OutgoingMessage[] = [];
        for (let i = c; i < Math.min(o.docs, c + chunk); i++) {
          const partition = i % o.partitions;
          const state: FinishedState = {
            v: 2,
            event_id: randomUUID(),
            submission_id: randomUUID(),
            status: 'DONE',
            input: { topic: o.inputTopic, partition, offset: String(i) },
            awaited: ['fraud', 'quality', 'classification'],
            published: ['fraud', 'quality', 'classification'],
            finished_at: now - (i % 3600) * 1000,
          };
          messages.push({ key: state.event_id, value: encodeState(state), partition });
        }
        sends.push(producer.send(o.stateTopic, messages));
      }
      await Promise.all(sends);
    }
  } finally {
    await producer.disconnect();
  }
}

interface ConnectorSettings {
  topics: Config['topics'];
  groupId: string;
  apiBaseUrl: string;
  ratePerSecond: number;
  maxInFlight: number;
  fileRoots: string[];
  httpPort: number;
  maxBytes?: number;
  connector?: Record<string, unknown>;
  api?: Record<string, unknown>;
  /** Extra `kafka.*` settings (e.g. `assignor`). */
  kafka?: Record<string, unknown>;
  /** Log level of the connector (default warn). */
  logLevel?: string;
  /** `tenants.*` settings (e.g. `directoryFile`); absent: no tenant directory. */
  tenants?: Record<string, unknown>;
}

/** Writes the connector's configuration file; the child reads nothing else (no DOCSTREAM_* variables). */
export function writeConnectorConfig(dir: string, s: ConnectorSettings): string {
  const file = path.join(dir, `connector-${s.httpPort}.json`);
  const config = {
    // A short session: a killed connector's partitions move to its successor within seconds.
    kafka: {
      brokers: BROKERS,
      groupId: s.groupId,
      clientId: 'docstream-bench',
      sessionTimeoutMs: 10000,
      heartbeatIntervalMs: 1000,
      ...(s.kafka ?? {}),
    },
    topics: s.topics,
    registry: { url: REGISTRY_URL },
    api: { baseUrl: s.apiBaseUrl, ratePerSecond: s.ratePerSecond, ...(s.api ?? {}) },
    // Benchmarks feed their input before the connector starts: a backlog they mean to have analysed.
    connector: {
      maxInFlight: s.maxInFlight,
      commitIntervalMs: 500,
      startFrom: 'earliest',
      ...(s.connector ?? {}),
    },
    blobs: { fileRoots: s.fileRoots, ...(s.maxBytes !== undefined ? { maxBytes: s.maxBytes } : {}) },
    http: { host: '127.0.0.1', port: s.httpPort },
    log: { level: s.logLevel ?? 'warn', format: 'json' },
    ...(s.tenants ? { tenants: s.tenants } : {}),
  };
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

const live = new Set<ChildProcess>();

/**
 * Makes a child process the run's: killed when the run ends (`endOfRun`, or any exit) unless the
 * returned function releases it first.
 */
export function ownChild(child: ChildProcess): () => void {
  live.add(child);
  return () => live.delete(child);
}

/** Kills the children still running (connectors, floors) and waits (at most 5 s) until they are gone. */
async function killChildren(): Promise<void> {
  const running = [...live];
  for (const child of running) child.kill('SIGKILL');
  const deadline = Date.now() + 5000;
  while (running.some((c) => c.exitCode === null && c.signalCode === null) && Date.now() < deadline)
    await sleep(50);
}

/** The collectors following output topics now, stopped by `endOfRun` before it deletes the topics. */
const collecting = new Set<OutputCollector>();

async function stopCollectors(): Promise<void> {
  await within(Promise.all([...collecting].map((c) => c.stop())), 10_000);
}

// Whatever way the script ends (hard stop included), no child it started outlives it.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** How the benchmark starts a child: extra node flags (`--expose-gc`, `--import`, `--cpu-prof`) and an IPC channel. */
interface SpawnOptions {
  nodeArgs?: string[];
  ipc?: boolean;
  /** Every line the connector writes to stderr (its log, JSON at the level configured). */
  onLine?: (line: string) => void;
  /** Variables given to the child besides the inherited non-DOCSTREAM_ ones (e.g. a DOCSTREAM_TEST_ crash point). */
  env?: Record<string, string>;
  /**
   * Start it as a user does (`node dist/cli/index.js run`, nothing added): the runtime settings are
   * then whatever `docstream run` does about them itself. Default: given here, one process.
   */
  asUserRuns?: boolean;
  /** Another build's CLI (e.g. the code before a change, measured side by side); default `CLI`. */
  cli?: string;
}

/** `docstream run` as a child process: readiness from /readyz, peak memory from /proc. */
export class ConnectorProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private stderrTail = '';

  constructor(
    configFile: string,
    private readonly httpPort: number,
    spawnOptions: SpawnOptions = {},
  ) {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
    const nodeArgs = spawnOptions.nodeArgs ?? [];
    // The runtime settings `docstream run` gives itself (by starting again), given here so that the
    // process measured is the connector itself; flags in BENCH_NODE_ARGS or variables set win.
    const missing = spawnOptions.asUserRuns ? { flags: [], env: {} } : missingRuntimeDefaults(env, nodeArgs);
    this.child = spawn(
      process.execPath,
      [...missing.flags, ...nodeArgs, spawnOptions.cli ?? CLI, 'run', '--config', configFile],
      {
        stdio: spawnOptions.ipc ? ['ignore', 'ignore', 'pipe', 'ipc'] : ['ignore', 'ignore', 'pipe'],
        env: { ...env, ...missing.env, ...(spawnOptions.env ?? {}) },
      },
    );
    let partial = '';
    this.child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.stderrTail = (this.stderrTail + text).slice(-4000);
      if (!spawnOptions.onLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) spawnOptions.onLine(line);
    });
    live.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        live.delete(this.child);
        resolve(code);
      }),
    );
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines the connector wrote to stderr (its warnings and errors), for diagnosis. */
  get logTail(): string {
    return this.stderrTail;
  }

  /** Waits until /readyz answers 200: Kafka connected and at least one input partition assigned. */
  async ready(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`connector exited during start-up:\n${this.stderrTail}`);
      try {
        const res = await fetch(`http://127.0.0.1:${this.httpPort}/readyz`, {
          signal: AbortSignal.timeout(2000),
        });
        if (res.status === 200) return;
      } catch {
        // Not listening yet.
      }
      await sleep(200);
    }
    throw new Error(`connector not ready after ${timeoutMs} ms:\n${this.stderrTail}`);
  }

  /** A value of /proc/<pid>/status in KiB: VmHWM (peak resident set) or VmRSS. */
  memoryKb(field: 'VmHWM' | 'VmRSS'): number | null {
    try {
      const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return match ? Number(match[1]) : null;
    } catch {
      return null;
    }
  }

  /** The connector's /metrics text, or null when it is busy or gone (that sample is skipped). */
  async metricsText(): Promise<string | null> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.httpPort}/metrics`, {
        signal: AbortSignal.timeout(2000),
      });
      return await res.text();
    } catch {
      return null;
    }
  }

  /** Unlabelled gauges from the connector's /metrics (e.g. docstream_nodejs_heap_size_used_bytes). */
  async gauges(names: string[]): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    const text = await this.metricsText();
    if (text === null) return out;
    for (const name of names) {
      const match = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
      if (match) out[name] = Number(match[1]);
    }
    return out;
  }

  /** Mean seconds per stage from the connector's docstream_stage_duration_seconds histogram. */
  async stageMeans(): Promise<Record<string, { count: number; meanMs: number }>> {
    const out: Record<string, { count: number; meanMs: number }> = {};
    const text = await this.metricsText();
    if (text === null) return out;
    const re = /^docstream_stage_duration_seconds_(sum|count)\{stage="([a-z_]+)"\} ([0-9.e+-]+)$/gm;
    const sums = new Map<string, number>();
    const counts = new Map<string, number>();
    for (const m of text.matchAll(re)) (m[1] === 'sum' ? sums : counts).set(m[2] as string, Number(m[3]));
    for (const [stage, count] of counts) {
      if (count > 0) out[stage] = { count, meanMs: Math.round(((sums.get(stage) ?? 0) / count) * 1000) };
    }
    return out;
  }

  /**
   * exactly-once: transactions committed, their records and mean duration, from the connector's
   * docstream_transaction_* metrics; null when it has none (at-least-once) or is busy.
   */
  async transactions(): Promise<{ count: number; records: number; meanMs: number } | null> {
    const text = await this.metricsText();
    if (text === null) return null;
    const value = (name: string) => {
      const match = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
      return match ? Number(match[1]) : null;
    };
    const count = value('docstream_transaction_duration_seconds_count');
    const sum = value('docstream_transaction_duration_seconds_sum');
    const records = value('docstream_transaction_records_total');
    if (!count || sum === null || records === null) return null;
    return { count, records, meanMs: Math.round((sum / count) * 10000) / 10 };
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** SIGTERM (graceful shutdown), then SIGKILL if it has not exited in time. */
  async stop(timeoutMs = 40_000): Promise<number | null> {
    if (!this.running) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

export interface Arrival {
  event_id: string;
  value: string | Buffer;
}

/** Arrival events, FRAUD_ONLY with query_id = event_id so the sandbox counts submissions per event. */
export function arrivalJson(eventId: string, file: string): string {
  return JSON.stringify({ event_id: eventId, blob: { url: `file://${file}` }, query_id: eventId });
}

/** Produces in chunks, stamping each record with the time it is sent; returns those times. */
export async function produceArrivals(
  producer: KafkaProducer,
  topic: string,
  arrivals: Arrival[],
  chunk = 200,
): Promise<Map<string, number>> {
  const sentAt = new Map<string, number>();
  for (let i = 0; i < arrivals.length; i += chunk) {
    await sendArrivals(producer, topic, arrivals.slice(i, i + chunk), sentAt);
  }
  return sentAt;
}

/** How often `produceArrivals` at a rate sends what has come due. */
const RATE_TICK_MS = 100;

/**
 * Produces `arrivals` at `rate` a second (what has come due, every RATE_TICK_MS), not all at once, until
 * `deadline`; returns when each was sent (those not sent by the deadline are missing).
 */
export async function produceAtRate(
  producer: KafkaProducer,
  topic: string,
  arrivals: Arrival[],
  rate: number,
  deadline: number,
): Promise<Map<string, number>> {
  const sentAt = new Map<string, number>();
  const start = Date.now();
  let sent = 0;
  while (sent < arrivals.length && Date.now() < deadline) {
    const due = Math.min(arrivals.length, Math.floor(((Date.now() - start) / 1000) * rate) + 1);
    if (due > sent) {
      await sendArrivals(producer, topic, arrivals.slice(sent, due), sentAt);
      sent = due;
    }
    if (sent < arrivals.length) await sleep(RATE_TICK_MS);
  }
  return sentAt;
}

async function sendArrivals(
  producer: KafkaProducer,
  topic: string,
  slice: Arrival[],
  sentAt: Map<string, number>,
): Promise<void> {
  const now = Date.now();
  await producer.send(
    topic,
    slice.map((a) => ({ key: a.event_id, value: a.value, timestamp: String(now) })),
  );
  for (const a of slice) sentAt.set(a.event_id, now);
}

interface DeadLetterSeen {
  event_id: string | null;
  stage: string;
  error_code: string;
  /** The original value (base64), to recognise inputs that had no readable event_id. */
  value: string | null;
  /**
   * The original key (the harness keys every record by its event id): recognises inputs whose value
   * the dead letter does not carry as it was (personal fields removed, or an Avro value withheld).
   */
  key: string | null;
}

interface EventOutcome {
  results: Set<ResultKind>;
  /** Result records including re-emissions (a redelivered document publishes again). */
  resultRecords: number;
  lastResultAt: number;
  deadLetters: DeadLetterSeen[];
}

/** Follows the result and dead-letter topics from the beginning and groups what it sees by event_id. */
export class OutputCollector {
  readonly byEvent = new Map<string, EventOutcome>();
  readonly anonymousDeadLetters: DeadLetterSeen[] = [];
  /** Record timestamps of results seen before for the same event and kind (re-emissions). */
  readonly repeats: number[] = [];
  /** When each result record was first read here (this process's clock), in reading order. */
  readonly resultsReadAt: number[] = [];
  private readonly seen = new Set<string>();
  private reader: OutputReader | null = null;
  private readonly registry = new Registry({ url: REGISTRY_URL });

  constructor(
    private readonly kafka: KafkaClient,
    private readonly topics: Config['topics'],
  ) {}

  async start(): Promise<void> {
    const t = this.topics;
    const reader = new OutputReader({
      kafka: this.kafka,
      topics: t,
      groupId: uniqueName('bench-collect'),
      decoder: this.registry,
      kinds: [...RESULT_KINDS, 'dlq'],
      // Results count by their headers; only dead letters are decoded, to keep the reader cheap.
      decoded: ['dlq'],
    });
    this.reader = reader;
    collecting.add(this);
    await reader.start((r) => {
      // The reader never commits: should its consumer rejoin (a Kafka restart), it reads the topics
      // again from the start. Each record counts once, by its position.
      const position = `${r.topic}\u0000${r.partition}\u0000${r.offset}`;
      if (this.seen.has(position)) return;
      this.seen.add(position);
      const eventId = r.headers.event_id ?? null;
      if (r.kind === 'dlq') {
        const v = r.value!;
        const deadLetter: DeadLetterSeen = {
          event_id: (v.event_id as string | null) ?? eventId,
          stage: String(v.stage),
          error_code: String(v.error_code),
          value: Buffer.isBuffer(v.value) ? v.value.toString('base64') : null,
          key: Buffer.isBuffer(v.key) ? v.key.toString('utf8') : null,
        };
        if (deadLetter.event_id) this.outcome(deadLetter.event_id).deadLetters.push(deadLetter);
        else this.anonymousDeadLetters.push(deadLetter);
        return;
      }
      if (!eventId) return;
      const o = this.outcome(eventId);
      if (o.results.has(r.kind as ResultKind)) this.repeats.push(r.timestamp);
      else this.resultsReadAt.push(Date.now());
      o.results.add(r.kind as ResultKind);
      o.resultRecords += 1;
      o.lastResultAt = Math.max(o.lastResultAt, r.timestamp);
    });
  }

  private outcome(eventId: string): EventOutcome {
    let o = this.byEvent.get(eventId);
    if (!o) {
      o = { results: new Set(), resultRecords: 0, lastResultAt: 0, deadLetters: [] };
      this.byEvent.set(eventId, o);
    }
    return o;
  }

  complete(eventId: string): boolean {
    const o = this.byEvent.get(eventId);
    return !!o && o.results.size === RESULT_KINDS.length;
  }

  /** Finished one way or another: every result out, or a dead letter. */
  settled(eventId: string): boolean {
    const o = this.byEvent.get(eventId);
    return !!o && (o.results.size === RESULT_KINDS.length || o.deadLetters.length > 0);
  }

  async stop(): Promise<void> {
    collecting.delete(this);
    await this.reader?.stop().catch(() => undefined);
  }
}

/** `n` rounded to `digits` decimals. */
export function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export async function waitUntil(
  condition: () => boolean,
  timeoutMs: number,
  onTick?: () => void,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let lastTick = 0;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    if (onTick && Date.now() - lastTick > 5000) {
      lastTick = Date.now();
      onTick();
    }
    await sleep(100);
  }
  return true;
}

/**
 * Simple `--name value` / `--flag` parsing. `--help` lists the flags with their defaults; an unknown
 * flag or a bad value prints a message and that list and exits 2.
 */
export function parseFlags(
  argv: string[],
  defaults: Record<string, string | number | boolean>,
): Record<string, string | number | boolean> {
  const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const usage = () =>
    Object.entries(defaults)
      .map(
        ([name, def]) =>
          `  --${kebab(name)}${typeof def === 'boolean' ? '' : ' <value>'}  (default ${String(def)})`,
      )
      .join('\n');
  const fail = (message: string): never => {
    process.stderr.write(`error: ${message}\nflags:\n${usage()}\n`);
    process.exit(2);
  };
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(`flags:\n${usage()}\n`);
      process.exit(0);
    }
    if (!arg.startsWith('--')) fail(`unexpected argument ${arg}`);
    const [rawName, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
    const name = rawName.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
    if (!(name in defaults)) fail(`unknown flag --${rawName}`);
    const def = defaults[name];
    if (typeof def === 'boolean') {
      out[name] = inline === undefined ? true : inline !== 'false';
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) fail(`--${rawName} needs a value`);
    if (typeof def === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n)) fail(`--${rawName}: not a number: ${value}`);
      out[name] = n;
    } else out[name] = value as string;
  }
  return out;
}

/**
 * The submission ids the connector recorded per event_id, read from its state topic up to the
 * current end. Used to tell a duplicate created after a submission was recorded (a broken promise)
 * from one whose first submission never reached the state (killed between create and record).
 */
export async function recordedSubmissions(
  kafka: KafkaClient,
  topic: string,
  timeoutMs = 30_000,
): Promise<Map<string, Set<string>>> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.topicOffsets(topic).finally(() => admin.disconnect());
  const remaining = new Map(ends.filter((e) => e.high !== e.low).map((e) => [e.partition, BigInt(e.high)]));
  const out = new Map<string, Set<string>>();
  const consumer = kafka.consumer({ groupId: uniqueName('bench-state'), maxWaitTimeMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe([topic], { fromBeginning: true });
    await consumer.run(async (batch) => {
      for (const m of batch.messages) {
        if (m.value && m.key) {
          const state = JSON.parse(m.value.toString('utf8')) as { submission_id?: string };
          const eventId = m.key.toString('utf8');
          if (state.submission_id) {
            if (!out.has(eventId)) out.set(eventId, new Set());
            out.get(eventId)!.add(state.submission_id);
          }
        }
        const end = remaining.get(batch.partition);
        if (end !== undefined && BigInt(m.offset) + 1n >= end) remaining.delete(batch.partition);
      }
    });
    await waitUntil(() => remaining.size === 0, timeoutMs);
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
  return out;
}

/**
 * Per query id (= event id), the submissions given a file (the sandbox lists each with its sha256
 * once uploaded): more than one is a document analysed twice. Submissions without a file are empty.
 */
export async function uploadsPerQuery(baseUrl: string): Promise<{ analysedTwice: string[]; empty: number }> {
  const res = await fetch(`${baseUrl}/_sandbox/submissions`);
  const { items } = (await res.json()) as {
    items: Array<{ query_id: string | null; sha256: string | null }>;
  };
  const uploaded = new Map<string, number>();
  let empty = 0;
  for (const s of items) {
    if (s.sha256 === null) empty += 1;
    else if (s.query_id !== null) uploaded.set(s.query_id, (uploaded.get(s.query_id) ?? 0) + 1);
  }
  const analysedTwice = [...uploaded].filter(([, n]) => n > 1).map(([q, n]) => `${q} x${n}`);
  return { analysedTwice, empty };
}
