/**
 * End-to-end set-up on the real stack: a sandbox over real HTTP, unique topics and consumer group per
 * test, the connector (in-process or as a child process of the built CLI), and helpers to produce
 * arrival events and to consume and decode every output topic through the real registry.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { missingRuntimeDefaults } from '../../src/cli/runtime-defaults.js';
import { loadConfig, prefixedTopics, type Config } from '../../src/config/index.js';
import { Connector } from '../../src/connector/connector.js';
import { OUTPUT_KINDS, OutputReader } from '../../src/connector/outputs/output-reader.js';
import { KafkaClient, type KafkaProducer } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { Registry } from '../../src/serde/registry.js';
import { startSandbox, type Sandbox, type SandboxConfig, type DeepPartial } from '../../src/sandbox/index.js';
import { LogDigest } from './log-digest.js';
import { uniqueName } from './topics.js';

const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
export const REGISTRY_URL = process.env.DOCSTREAM_REGISTRY_URL ?? 'http://localhost:8081/apis/ccompat/v7';
const CLI = path.resolve('dist/cli/index.js');
/** Header of the collector's read-up-to markers (`E2E.waitForOutputsRead`). */
const MARKER_HEADER = 'e2e_read_marker';

/** A submission as the sandbox lists it (`/_sandbox/submissions`): the fields tests read. */
export interface SandboxSubmission {
  id: string;
  pipeline_configuration: string;
  /** The API's state: awaiting_upload until its file is uploaded. */
  state: string;
}

export interface Decoded {
  topic: string;
  key: string | null;
  headers: Record<string, string>;
  value: Record<string, unknown>;
}

export async function waitFor(what: string, condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The exit code of a child process (at once if it has exited), failing after `timeoutMs`. */
export function exitOf(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => reject(new Error(`no exit within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** Section-wise merge of configuration overrides: an override changes keys, not whole sections. */
function merge(
  base: Record<string, Record<string, unknown>>,
  overrides: Record<string, Record<string, unknown>>,
): Record<string, Record<string, unknown>> {
  const out = { ...base };
  for (const [section, values] of Object.entries(overrides)) out[section] = { ...base[section], ...values };
  return out;
}

export class E2E {
  readonly id = uniqueName('e2e');
  /** The shared stack's brokers, or the ones given (a broker of the test's own: `private-kafka.ts`). */
  readonly brokers: string[];
  readonly kafka: KafkaClient;
  readonly registry = new Registry({ url: REGISTRY_URL });
  readonly producer: KafkaProducer;
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-e2e-'));
  readonly outputs: Decoded[] = [];
  /** Nonces of the read-up-to markers the collector has seen (`waitForOutputsRead`). */
  private readonly markersSeen = new Set<string>();
  private markers = 0;
  sandbox!: Sandbox;
  private collector: OutputReader | null = null;
  private connectors: Connector[] = [];
  private children: ChildProcess[] = [];
  private configs = 0;
  /** Recent stderr of each spawned connector, in spawn order. */
  readonly childLogs: string[][] = [];
  /** The whole stderr of each spawned connector, repeated lines folded (`log-digest.ts`), in spawn order. */
  readonly childDigests: LogDigest[] = [];
  readonly topics: Config['topics'];

  /** `replicationFactor`: of every topic this test creates, and the connector's (1 by default, one broker). */
  constructor(partitions = 1, options: { brokers?: string[]; replicationFactor?: number } = {}) {
    this.brokers = options.brokers ?? BROKERS;
    this.kafka = new KafkaClient({ brokers: this.brokers, clientId: 'docstream-e2e' });
    this.producer = this.kafka.producer();
    const topics = prefixedTopics(this.id, partitions);
    this.topics =
      options.replicationFactor === undefined
        ? topics
        : { ...topics, replicationFactor: options.replicationFactor };
  }

  async start(sandboxConfig: DeepPartial<SandboxConfig> = {}): Promise<this> {
    this.sandbox = await startSandbox({
      port: 0,
      processing: { distribution: 'fixed', meanMs: 200 },
      ...sandboxConfig,
    });
    await this.producer.connect();
    const admin = this.kafka.admin();
    await admin.connect();
    await admin.ensureTopics(
      [this.topics.arrived, this.topics.feedback].map((topic) => ({
        topic,
        numPartitions: this.topics.outputPartitions,
        replicationFactor: this.topics.replicationFactor,
      })),
    );
    await admin.disconnect();
    return this;
  }

  /** The connector's configuration for this test: its topics, group, sandbox, and fast polling. */
  config(overrides: Record<string, Record<string, unknown>> = {}): Config {
    return loadConfig({
      env: {},
      files: [],
      overrides: {
        ...merge(
          {
            // A short session: a killed instance's partitions move on within seconds, not half a minute.
            kafka: {
              brokers: this.brokers,
              groupId: `${this.id}-group`,
              sessionTimeoutMs: 10000,
              heartbeatIntervalMs: 1000,
            },
            topics: this.topics,
            registry: { url: REGISTRY_URL },
            api: { baseUrl: this.sandbox.baseUrl, ratePerSecond: 200 },
            connector: { pollInitialMs: 100, pollMaxMs: 1000, commitIntervalMs: 200 },
            blobs: { fileRoots: [this.dir] },
            http: { port: 0 },
          },
          overrides,
        ),
      },
    });
  }

  async startConnector(overrides: Record<string, Record<string, unknown>> = {}): Promise<Connector> {
    const connector = await Connector.start({ config: this.config(overrides), logger: silentLogger });
    this.connectors.push(connector);
    return connector;
  }

  /**
   * Starts `docstream run` of the built CLI as a child process with this test's configuration;
   * `extraEnv` is added to the environment it inherits (which drops every DOCSTREAM_ variable).
   */
  spawnConnector(
    overrides: Record<string, Record<string, unknown>> = {},
    extraEnv: Record<string, string> = {},
  ): ChildProcess {
    const file = this.writeConfig(overrides);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
    // With its runtime defaults already given, `run` does not start itself again as a grandchild:
    // a SIGKILL here reaches the connector, and no orphan keeps this stderr pipe (and jest) open.
    const runtime = missingRuntimeDefaults(env, []);
    const child = spawn(process.execPath, [...runtime.flags, CLI, 'run', '--config', file], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...env, ...runtime.env, ...extraEnv },
    });
    // Kept (bounded) so that a failing test can show why a child connector stopped.
    const log: string[] = [];
    this.childLogs.push(log);
    const digest = new LogDigest();
    this.childDigests.push(digest);
    // DOCSTREAM_TEST_CHILD_LOGS=<dir>: each child's whole log also goes to <dir>/connector-<n>.log
    // (at the level the configuration sets: DOCSTREAM_TEST_CHILD_LOG_LEVEL, default warn).
    const keepIn = process.env.DOCSTREAM_TEST_CHILD_LOGS;
    const kept = keepIn
      ? fs.createWriteStream(path.join(keepIn, `connector-${Date.now()}-${this.childLogs.length}.log`))
      : null;
    child.stderr?.on('data', (chunk: Buffer) => {
      kept?.write(chunk);
      log.push(chunk.toString('utf8'));
      digest.write(chunk.toString('utf8'));
      if (log.length > 200) log.shift();
    });
    child.once('exit', () => kept?.end());
    this.children.push(child);
    return child;
  }

  /** Writes this test's configuration as a file for the CLI (`--config`) and returns its path. */
  writeConfig(overrides: Record<string, Record<string, unknown>> = {}): string {
    const file = path.join(this.dir, `config-${this.configs++}.json`);
    // `log.level` of the overrides: this test's level, unless DOCSTREAM_TEST_CHILD_LOG_LEVEL says otherwise.
    const { log: logOverride, ...sections } = overrides;
    const level =
      process.env.DOCSTREAM_TEST_CHILD_LOG_LEVEL ?? (logOverride?.level as string | undefined) ?? 'warn';
    const config = this.config(sections) as unknown as Record<string, Record<string, unknown>>;
    const { fileRoots, ...blobs } = config.blobs as Record<string, unknown>;
    fs.writeFileSync(
      file,
      JSON.stringify({
        ...config,
        blobs: { ...blobs, fileRoots },
        log: { level, format: 'json' },
      }),
    );
    return file;
  }

  async writeFile(name: string, bytes: Buffer): Promise<string> {
    const file = path.join(this.dir, name);
    await fs.promises.writeFile(file, bytes);
    return file;
  }

  async produce(
    events: Array<Record<string, unknown> | Buffer | string>,
    key?: (i: number) => string,
    headers?: (i: number) => Record<string, string> | undefined,
  ): Promise<void> {
    for (let i = 0; i < events.length; i += 200) {
      await this.producer.send(
        this.topics.arrived,
        events.slice(i, i + 200).map((e, j) => {
          const h = headers?.(i + j);
          return {
            key: key ? key(i + j) : null,
            value: Buffer.isBuffer(e) || typeof e === 'string' ? e : JSON.stringify(e),
            ...(h ? { headers: h } : {}),
          };
        }),
      );
    }
  }

  /** The sandbox's live submissions created with this query id (the connector passes event_id). */
  async submissions(queryId: string): Promise<SandboxSubmission[]> {
    const res = await fetch(
      `${this.sandbox.baseUrl}/_sandbox/submissions?query_id=${encodeURIComponent(queryId)}`,
    );
    return ((await res.json()) as { items: SandboxSubmission[] }).items;
  }

  /** Outputs (results and dead letters) whose event_id header is this event's. */
  forEvent(eventId: string): Decoded[] {
    return this.outputs.filter((o) => o.headers.event_id === eventId);
  }

  /**
   * Waits until this event's fraud, quality and classification results are out; on a time-out the
   * error carries the end of the last spawned connector's log, which tells why it did not get there.
   */
  async waitForResults(eventId: string, timeoutMs = 90_000): Promise<void> {
    try {
      await waitFor(
        `${eventId}'s fraud, quality and classification results`,
        () =>
          ['fraud', 'quality', 'classification'].every((k) =>
            this.forEvent(eventId).some((o) => this.kindOf(o) === k),
          ),
        timeoutMs,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; connector log: ${this.childLogs.at(-1)?.join('').slice(-2000)}`,
      );
    }
  }

  /** Output topic kind of a decoded output. */
  kindOf(o: Decoded): keyof Config['topics'] | undefined {
    return (Object.keys(this.topics) as Array<keyof Config['topics']>).find(
      (k) => this.topics[k] === o.topic,
    );
  }

  /** Consumes every output topic from the beginning, decoding values through the registry. */
  async collect(): Promise<void> {
    const t = this.topics;
    // The connector creates its output topics when it starts; a child process may not have yet.
    const admin = this.kafka.admin();
    await admin.connect();
    await admin.ensureTopics(
      OUTPUT_KINDS.map((kind) => ({
        topic: t[kind],
        numPartitions: t.outputPartitions,
        replicationFactor: t.replicationFactor,
      })),
    );
    await admin.disconnect();
    const reader = new OutputReader({
      kafka: this.kafka,
      topics: t,
      groupId: uniqueName('e2e-collect'),
      decoder: this.registry,
    });
    this.collector = reader;
    // A reader that could not start (a cluster whose nodes do not all know the new topics yet) is
    // stopped, so that the caller may call collect() again.
    await reader
      .start((r) => {
        const marker = r.headers[MARKER_HEADER];
        if (marker !== undefined) {
          this.markersSeen.add(marker);
          return;
        }
        this.outputs.push({ topic: r.topic, key: r.key, headers: r.headers, value: r.value! });
      })
      .catch(async (err: unknown) => {
        await reader.stop().catch(() => undefined);
        throw err;
      });
  }

  /**
   * Waits until the group has committed every record now in the input topic. The connector commits a
   * record only once its outcome (its results or its dead letter) is published, so after this
   * everything it will publish for those records is in the output topics (`waitForOutputsRead` then
   * waits until the collector has read it).
   */
  async waitForHandled(
    options: { groupId?: string; topic?: string; timeoutMs?: number } = {},
  ): Promise<void> {
    const groupId = options.groupId ?? `${this.id}-group`;
    const topic = options.topic ?? this.topics.arrived;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const ends = await admin.topicOffsets(topic);
      const deadline = Date.now() + (options.timeoutMs ?? 60_000);
      for (;;) {
        const commits = await admin.groupOffsets(groupId, topic);
        const behind = ends.filter(
          ({ partition, low, high }) => high !== low && BigInt(commits.get(partition) ?? '-1') < BigInt(high),
        );
        if (behind.length === 0) return;
        if (Date.now() > deadline)
          throw new Error(
            `timed out waiting for group ${groupId} to commit ${topic} to its end: ` +
              behind
                .map((e) => `[${e.partition}] ${commits.get(e.partition) ?? 'none'} of ${e.high}`)
                .join(', '),
          );
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Waits until the collector has read every output record written so far: a marker record (no
   * value, skipped by the collector, never in `outputs`) goes to each partition of the output topics
   * of `kinds`, and Kafka's order within a partition means that once the collector has seen a
   * partition's marker it has handed over every record before it; under read_committed, also every
   * transaction that was open when the marker was written, once it ends. Not for topics that another
   * reader in the test must find unchanged (the dead-letter topic for `docstream dlq`).
   */
  async waitForOutputsRead(
    kinds: readonly (typeof OUTPUT_KINDS)[number][] = OUTPUT_KINDS,
    timeoutMs = 30_000,
  ): Promise<void> {
    if (!this.collector) throw new Error('waitForOutputsRead needs collect() first');
    const admin = this.kafka.admin();
    await admin.connect();
    const counts = await Promise.all(kinds.map((kind) => admin.partitionCount(this.topics[kind]))).finally(
      () => admin.disconnect(),
    );
    const nonces: string[] = [];
    for (const [i, kind] of kinds.entries()) {
      for (let partition = 0; partition < counts[i]!; partition++) {
        const nonce = `${this.id}-marker-${this.markers++}`;
        nonces.push(nonce);
        await this.producer.send(this.topics[kind], [
          { key: MARKER_HEADER, value: null, partition, headers: { [MARKER_HEADER]: nonce } },
        ]);
      }
    }
    await waitFor(
      'the collector to read up to its markers',
      () => nonces.every((n) => this.markersSeen.has(n)),
      timeoutMs,
    );
  }

  on(kind: keyof Config['topics']): Decoded[] {
    const topic = this.topics[kind];
    return this.outputs.filter((o) => o.topic === topic);
  }

  async stop(): Promise<void> {
    try {
      for (const child of this.children) if (child.exitCode === null) child.kill('SIGKILL');
      for (const c of this.connectors) await c.stop().catch(() => undefined);
      await this.collector?.stop().catch(() => undefined);
      await this.producer.disconnect().catch(() => undefined);
      await this.sandbox?.close();
    } finally {
      // The test's files go whatever failed above.
      fs.rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

export function arrival(
  eventId: string,
  file: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { event_id: eventId, blob: { url: `file://${file}` }, query_id: eventId, ...extra };
}
