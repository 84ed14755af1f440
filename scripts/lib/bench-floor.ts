/**
 * Runs a floor in its own child process against its own sandbox, on the same documents, and
 * returns its CPU per document: the Node floor (scripts/floor.ts, bare node:http and kafkajs), the
 * same program on librdkafka (the rdkafka floor: @confluentinc/kafka-javascript's KafkaJS API, see
 * ./rdkafka-floor.ts) or on @platformatic/kafka (the platformatic floor, ./platformatic-floor.ts), or
 * the Go floor (scripts/go-floor: franz-go, net/http, hamba/avro; see
 * ./go-floor.ts). The floor's
 * sandbox has the same processing time but no effective rate limit: the floor measures cost, not
 * pacing, and has no retry for a 429.
 *
 * Fed two ways: a flood (the throughput mode: every arrival at once, CPU as the floor counts its
 * own) or a trickle (the quiet mode: arrivals paced as the quiet mode paces the connector's, CPU of
 * the floor's whole process tree over the measured trickle, as the connector's is measured there).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { within } from '../../src/util/within.js';
import type { FloorReport, FloorSettings } from '../floor.js';
import { buildGoFloor, registerResultSchemas, startGoFloor } from './go-floor.js';
import { installPlatformaticFloor } from './platformatic-floor.js';
import { installRdkafkaFloor } from './rdkafka-floor.js';
import {
  BROKERS,
  deleteTopics,
  ensureInputTopics,
  ownChild,
  prefixedTopics,
  produceArrivals,
  round,
  sleep,
  uniqueName,
  type Arrival,
} from './harness.js';
import { sampleTree, type TreeSample } from './process-tree.js';
import { produceTrickle, trickleMeasure, type TrickleMeasure } from './trickle.js';

const FLOOR_SCRIPT = fileURLToPath(new URL('../floor.js', import.meta.url));

/**
 * Which floor: the bare Node program, the same program on librdkafka or on @platformatic/kafka
 * instead of kafkajs, or the same flow hand-written in Go.
 */
export type FloorKind = 'node' | 'go' | 'rdkafka' | 'platformatic';

/** What each floor is, as the summary names it. */
export const FLOOR_NAMES: Record<FloorKind, string> = {
  node: 'bare node:http + kafkajs, plain Kafka writes',
  go: 'Go: franz-go, net/http keep-alive, hamba/avro',
  rdkafka: 'bare node:http + librdkafka, plain Kafka writes',
  platformatic: 'bare node:http + @platformatic/kafka, plain Kafka writes',
};

const FLOOR_KINDS = Object.keys(FLOOR_NAMES) as FloorKind[];

/**
 * `--floor`: the floors to measure, in the order given: node, go, rdkafka, platformatic or a comma
 * list of them
 * (`both` is node,go; a floor named twice runs once); true is node, false or none no floor; `auto`
 * is the mode's default (node for throughput, none for quiet).
 */
export function parseFloors(value: string, auto: FloorKind[]): FloorKind[] {
  if (value === 'auto') return [...auto];
  if (value === 'true') return ['node'];
  if (value === 'false' || value === 'none') return [];
  const kinds = value
    .split(',')
    .map((part) => part.trim())
    .flatMap((part): FloorKind[] => {
      if (part === 'both') return ['node', 'go'];
      if ((FLOOR_KINDS as string[]).includes(part)) return [part as FloorKind];
      throw new Error(
        `--floor must be node, go, rdkafka, platformatic or a comma list of them (both: node,go), or false; got ${value}`,
      );
    });
  return [...new Set(kinds)];
}

/**
 * Builds the Go floor and installs the rdkafka and platformatic floors' clients when they are among
 * the floors, before anything starts, so that a missing toolchain or Debian package fails at once.
 */
export function prepareFloors(kinds: FloorKind[], log: (line: string) => void): void {
  if (kinds.includes('go')) buildGoFloor(log);
  if (kinds.includes('rdkafka')) installRdkafkaFloor(log);
  if (kinds.includes('platformatic')) installPlatformaticFloor(log);
}

/** The pause between the end of the warm-up and the measured trickle, as the connector's. */
export const TRICKLE_PAUSE_MS = 2000;

interface FloorOptions {
  kind: FloorKind;
  docs: number;
  /** Documents run first and not measured (as the connector's warm-up). */
  warmupDocs: number;
  latencyMs: number;
  partitions: number;
  maxInFlight: number;
  deadline: number;
  arrivals: (prefix: string, n: number) => Arrival[];
  log: (line: string) => void;
  /** Also profile the floor's measured documents, beside the connector's profiles. */
  cpuProfDir?: string | null;
  /**
   * Feed a trickle at this many documents a second instead of a flood: the warm-up paced from the
   * floor's start, then (TRICKLE_PAUSE_MS after the floor has finished it) the measured documents
   * paced, the floor's process tree sampled just before the first and at its report of the last.
   * Needs warmupDocs > 0.
   */
  trickleRate?: number;
  /**
   * Fed a trickle: first let the floor sit this long once it has finished the warm-up, nothing
   * arriving, and measure its process tree's CPU meanwhile (its idle cost: librdkafka's threads,
   * for one, wake on their own), before the pause and the measured documents.
   */
  idleMs?: number;
}

export interface FloorMeasure {
  floor: FloorKind;
  completed: number;
  cpuMsPerDoc: number;
  /** Over the warm-up documents alone; null without warm-up. */
  coldCpuMsPerDoc: number | null;
  durationS: number;
  httpCalls: number;
  notReady: number;
  kafkaRequests: number;
  tcpConnections: number;
  /** Fed a trickle: the floor's whole process tree over the measured trickle. */
  trickle?: TrickleMeasure;
  /** Fed a trickle with idleMs: its whole process tree's CPU while idle, in % of a core. */
  idleCpuPercent?: number;
}

export async function runFloor(o: FloorOptions, kafka: KafkaClient, dir: string): Promise<FloorMeasure> {
  const rate = o.trickleRate;
  if (rate !== undefined && o.warmupDocs === 0)
    throw new Error('a floor fed a trickle needs warm-up documents');
  // Built (or found built) before anything starts, so that a missing toolchain fails at once.
  const goBinary = o.kind === 'go' ? buildGoFloor(o.log) : null;
  const rdkafkaModule = o.kind === 'rdkafka' ? installRdkafkaFloor(o.log) : null;
  const platformaticModule = o.kind === 'platformatic' ? installPlatformaticFloor(o.log) : null;
  const id = uniqueName(o.kind === 'node' ? 'floor' : `${o.kind}-floor`);
  const topics = prefixedTopics(id, o.partitions);
  const sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: o.latencyMs },
    rateLimit: { ratePerSecond: 1_000_000, burst: 1_000_000 },
    maxSubmissions: Math.max(1000, (o.docs + o.warmupDocs) * 2),
  });
  const producer = kafka.producer();
  const admin = kafka.admin();
  try {
    await ensureInputTopics(kafka, topics);
    await admin.connect();
    await admin.ensureTopics(
      [topics.state, topics.fraud, topics.quality, topics.classification].map((topic) => ({
        topic,
        numPartitions: o.partitions,
        replicationFactor: 1,
      })),
    );
    await admin.disconnect();
    await producer.connect();
    // A flood: without warm-up, all documents at once; with it, the warm-up first and the measured
    // ones once the floor reports it finished them, as in the connector's run. A trickle starts
    // once the floor does.
    if (rate === undefined) {
      await produceArrivals(producer, topics.arrived, o.arrivals(`${id}-warm`, o.warmupDocs));
      if (o.warmupDocs === 0) await produceArrivals(producer, topics.arrived, o.arrivals(id, o.docs));
    }
    const settings: FloorSettings = {
      brokers: BROKERS,
      groupId: `${id}-group`,
      arrivedTopic: topics.arrived,
      stateTopic: topics.state,
      resultTopics: { fraud: topics.fraud, quality: topics.quality, classification: topics.classification },
      baseUrl: sandbox.baseUrl,
      clientId: 'sandbox-client',
      clientSecret: 'sandbox-secret',
      docs: o.docs,
      warmupDocs: o.warmupDocs,
      maxInFlight: o.maxInFlight,
      latencyMs: o.latencyMs,
      deadline: o.deadline,
      holdAfterReport: rate !== undefined,
      cpuProfile: o.cpuProfDir
        ? path.join(o.cpuProfDir, goBinary ? `${id}.pprof` : `${id}-floor.cpuprofile`)
        : undefined,
      ...(goBinary ? { resultSchemas: await registerResultSchemas(topics) } : {}),
      ...(rdkafkaModule ? { rdkafkaModule } : {}),
      ...(platformaticModule ? { platformaticModule } : {}),
    };
    if (o.cpuProfDir) fs.mkdirSync(o.cpuProfDir, { recursive: true });
    const file = path.join(dir, `${id}.json`);
    fs.writeFileSync(file, JSON.stringify(settings));
    o.log(
      `floor ${o.kind}: ${o.docs} documents${rate === undefined ? '' : ` at ${rate}/s`} (${FLOOR_NAMES[o.kind]})`,
    );
    let onMessage: (m: FloorReport | { type: 'warm' }) => void = () => undefined;
    // stdin a pipe: its end releases a floor holding after its report (holdAfterReport).
    const child = goBinary
      ? startGoFloor(goBinary, file, (m) => onMessage(m))
      : spawn(process.execPath, [FLOOR_SCRIPT, file], { stdio: ['pipe', 'ignore', 'pipe', 'ipc'] });
    if (!goBinary) child.on('message', (m: FloorReport | { type: 'warm' }) => onMessage(m));
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4000)));
    const release = ownChild(child);
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    // A trickle's measured window: the tree before its first document is produced and at the report.
    let start: { tree: TreeSample; at: number; docs: number } | null = null;
    let end: { tree: TreeSample; at: number } | null = null;
    let idleCpuPercent: number | undefined;
    try {
      const report = await new Promise<FloorReport>((resolve, reject) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(5000, o.deadline - Date.now()));
        const fail = (err: unknown) => {
          child.kill('SIGKILL');
          reject(err instanceof Error ? err : new Error(String(err)));
        };
        const measured = async () => {
          if (rate === undefined) {
            await produceArrivals(producer, topics.arrived, o.arrivals(id, o.docs));
            return;
          }
          if (o.idleMs) {
            const from = sampleTree(child.pid!);
            await sleep(o.idleMs);
            idleCpuPercent = round(((sampleTree(child.pid!).cpuMs - from.cpuMs) / o.idleMs) * 100, 2);
            o.log(`floor ${o.kind}: idle ${o.idleMs / 1000} s, ${idleCpuPercent} % of a core`);
          }
          await sleep(TRICKLE_PAUSE_MS);
          const window = { tree: sampleTree(child.pid!), at: Date.now(), docs: 0 };
          start = window;
          const arrivals = o.arrivals(id, o.docs);
          window.docs = (await produceTrickle(producer, topics.arrived, arrivals, rate, o.deadline)).length;
        };
        onMessage = (m) => {
          if (m.type === 'warm') measured().catch(fail);
          else if (m.type === 'floor') {
            try {
              // Read before the floor goes on to leave its group and exit (it holds until released).
              if (rate !== undefined) end = { tree: sampleTree(child.pid!), at: Date.now() };
              resolve(m);
            } catch (err) {
              fail(err);
            }
          }
        };
        if (rate !== undefined) {
          const warm = o.arrivals(`${id}-warm`, o.warmupDocs);
          produceTrickle(producer, topics.arrived, warm, rate, o.deadline).catch(fail);
        }
        // 'close', not 'exit': the Go floor's report may still be in its stdout pipe when it exits.
        child.once('close', (code) => {
          clearTimeout(timer);
          release();
          reject(new Error(`floor exited with ${code} before reporting:\n${stderr}`));
        });
      });
      return {
        ...measureOf(o, report, start, end),
        ...(idleCpuPercent === undefined ? {} : { idleCpuPercent }),
      };
    } finally {
      // Gone before its topics are deleted: a consumer still leaving its group would create them again.
      child.stdin?.end();
      if (!(await within(closed, 10_000))) child.kill('SIGKILL');
    }
  } finally {
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
  }
}

function measureOf(
  o: FloorOptions,
  report: FloorReport,
  start: { tree: TreeSample; at: number; docs: number } | null,
  end: { tree: TreeSample; at: number } | null,
): FloorMeasure {
  const completed = Math.max(1, report.completed);
  return {
    floor: o.kind,
    completed: report.completed,
    cpuMsPerDoc: round(report.cpuUs / 1000 / completed, 3),
    coldCpuMsPerDoc:
      o.warmupDocs > 0 && report.coldCpuUs !== null ? round(report.coldCpuUs / 1000 / o.warmupDocs, 3) : null,
    durationS: round(report.durationMs / 1000, 2),
    httpCalls: report.httpCalls,
    notReady: report.notReady,
    kafkaRequests: report.kafkaRequests,
    tcpConnections: report.sockets,
    ...(start && end
      ? {
          trickle: trickleMeasure(start.tree, end.tree, {
            docs: start.docs,
            settled: report.completed,
            seconds: (end.at - start.at) / 1000,
          }),
        }
      : {}),
  };
}
