/**
 * `npm run bench -- --mode freshness`: how soon a result is on Kafka once the API has it, and what
 * that costs in calls, for docstream (`docstream run`) and for a naive poller (scripts/floor.ts with
 * `naivePoll`: each result's first GET 200 ms after the upload, then 100 ms doubling to 1 s; 429s sent
 * again after their Retry-After), one after the other on the same sandbox settings in one run.
 *
 * Each scenario: a fresh in-process sandbox whose results take 1-4 s (uniform from the upload),
 * a token bucket at the scenario's API limit (burst a fifth of a second), good FRAUD_ONLY documents
 * with file blobs produced at `docsPerS`; docstream told `api.ratePerSecond` 5000 (the limiter finds a
 * lower limit). Reported per poller:
 * - delay after ready: for each result, its record's Kafka timestamp minus the sandbox's `ready_at`
 *   for it (`GET /_sandbox/submissions`), p50 / p90 / p99, for the fraud result and for all three;
 * - GETs per result (200 and 404 answers of the three result endpoints, over results), fraud GETs
 *   per document, calls answered 429 as a share of all rate-limited calls;
 * - documents per second (first record to last result) against the bound (limit / 4 rate-limited
 *   calls per document, or the arrival rate when that is lower);
 * - docstream's CPU per document (its process, user + system, over the run).
 *
 * Scenario 6 mixes file sizes: every other document's file is padded to `largeFile.bytes`, and the
 * sandbox adds `largeFile.msPerMiB` per MiB to each result's time (`processing.msPerMiB`), so the
 * large files' results take seconds longer: what a poller that learns by file size gains.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { OutputReader } from '../../src/connector/outputs/output-reader.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import type { FloorReport, FloorSettings } from '../floor.js';
import {
  BROKERS,
  ConnectorProcess,
  RESULT_KINDS,
  arrivalJson,
  deleteTopics,
  ensureInputTopics,
  freePort,
  ownChild,
  percentile,
  prefixedTopics,
  produceAtRate,
  round,
  sleep,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  type ResultKind,
} from './harness.js';
import { sampleTree } from './process-tree.js';

const FLOOR_SCRIPT = fileURLToPath(new URL('../floor.js', import.meta.url));

export interface FreshnessScenario {
  name: string;
  /** Documents produced per second. */
  docsPerS: number;
  /** The API's limit, calls per second. */
  limit: number;
  docs: number;
  /** Every other document's file is this large, and the sandbox adds msPerMiB per MiB to its times. */
  largeFile?: { bytes: number; msPerMiB: number };
}

/** From the API almost idle to a limit below the load; docstream is told 5000/s in every one. */
export const FRESHNESS_SCENARIOS: FreshnessScenario[] = [
  { name: '20/s, limit 5000/s', docsPerS: 20, limit: 5000, docs: 400 },
  { name: '20/s, limit 400/s', docsPerS: 20, limit: 400, docs: 400 },
  { name: '20/s, limit 200/s', docsPerS: 20, limit: 200, docs: 400 },
  { name: '20/s, limit 120/s', docsPerS: 20, limit: 120, docs: 400 },
  { name: '20/s, limit 40/s (at the limit)', docsPerS: 20, limit: 40, docs: 200 },
  {
    name: '20/s, limit 5000/s, every other file 2 MiB and 3 s slower',
    docsPerS: 20,
    limit: 5000,
    docs: 400,
    largeFile: { bytes: 2 * 1024 * 1024, msPerMiB: 1500 },
  },
];

const NAIVE = { firstMs: 200, initialMs: 100, maxMs: 1000 };
const CLIENT_RATE = 5000;

/** docstream, docstream built from other code (`--before-cli`), or the naive poller. */
export type Poller = 'docstream' | 'before' | 'naive';

export interface PollerMeasure {
  poller: Poller;
  done: number;
  docs: number;
  /** ms, fraud result: p50, p90, p99. */
  fraudDelayMs: [number, number, number] | null;
  /** ms, every result: p50, p90, p99. */
  allDelayMs: [number, number, number] | null;
  getsPerResult: number;
  fraudGetsPerDoc: number;
  percent429: number;
  docsPerS: number;
  percentOfBound: number;
  /** docstream only: its process's CPU over the run, per document. */
  cpuMsPerDoc: number | null;
  /** Written to the JSON only: each fraud result's [ready, delay] in ms, ready counted from the first. */
  fraudDelays: Array<[number, number]>;
}

export interface FreshnessMeasure {
  scenario: FreshnessScenario;
  boundDocsPerS: number;
  pollers: PollerMeasure[];
}

export async function runFreshness(o: {
  scenarios: FreshnessScenario[];
  pollers: Poller[];
  /** The CLI of the `before` poller. */
  beforeCli?: string;
  deadline: number;
  log: (line: string) => void;
}): Promise<FreshnessMeasure[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-freshness-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  try {
    const file = (await writeCorpus(dir, ['clean-pdf']))[0]!.file;
    const out: FreshnessMeasure[] = [];
    for (const s of o.scenarios) {
      const bound = Math.min(s.docsPerS, s.limit / 4);
      const pollers: PollerMeasure[] = [];
      const files = [file];
      if (s.largeFile) {
        // The same PDF, padded with spaces after its end to the size asked.
        const large = path.join(dir, `large-${s.largeFile.bytes}.pdf`);
        const bytes = fs.readFileSync(file);
        fs.writeFileSync(
          large,
          Buffer.concat([bytes, Buffer.alloc(Math.max(0, s.largeFile.bytes - bytes.length), 0x20)]),
        );
        files.push(large);
      }
      for (const poller of o.pollers) {
        if (Date.now() > o.deadline) break;
        pollers.push(await runOne(s, poller, bound, kafka, dir, files, o));
      }
      out.push({ scenario: s, boundDocsPerS: bound, pollers });
    }
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function runOne(
  s: FreshnessScenario,
  poller: Poller,
  bound: number,
  kafka: KafkaClient,
  dir: string,
  files: string[],
  o: { deadline: number; beforeCli?: string; log: (line: string) => void },
): Promise<PollerMeasure> {
  const id = uniqueName(`bench-fresh-${poller}`);
  const topics = prefixedTopics(id, 4);
  const sandbox = await startSandbox({
    processing: {
      distribution: 'uniform',
      meanMs: 2500,
      minMs: 1000,
      maxMs: 4000,
      ...(s.largeFile ? { msPerMiB: s.largeFile.msPerMiB } : {}),
    },
    rateLimit: { ratePerSecond: s.limit, burst: Math.max(1, Math.ceil(s.limit / 5)) },
    maxSubmissions: s.docs * 4,
  });
  const seen = new Map<ResultKind, Map<string, number>>(RESULT_KINDS.map((k) => [k, new Map()]));
  let deadLetters = 0;
  const reader = new OutputReader({
    kafka,
    topics,
    groupId: uniqueName('bench-fresh-collect'),
    kinds: [...RESULT_KINDS, 'dlq'],
    decoded: [],
  });
  const producer = kafka.producer();
  let connector: ConnectorProcess | null = null;
  let stopFloor: (() => void) | null = null;
  try {
    await ensureInputTopics(kafka, topics);
    // The output topics are the connector's to create (the state topic compacted); the naive
    // poller's are made here. The reader starts once they exist.
    const startReader = () =>
      reader.start((r) => {
        if (r.kind === 'dlq') {
          deadLetters += 1;
          return;
        }
        const byKey = seen.get(r.kind as ResultKind)!;
        if (r.key !== null && !byKey.has(r.key)) byKey.set(r.key, r.timestamp);
      });
    let floorDone: Promise<FloorReport | null> = Promise.resolve(null);
    if (poller !== 'naive') {
      const httpPort = await freePort();
      const config = writeConnectorConfig(dir, {
        topics,
        groupId: `${id}-group`,
        apiBaseUrl: sandbox.baseUrl,
        ratePerSecond: CLIENT_RATE,
        maxInFlight: 2000,
        fileRoots: [dir],
        httpPort,
      });
      connector = new ConnectorProcess(
        config,
        httpPort,
        poller === 'before' && o.beforeCli ? { cli: o.beforeCli } : {},
      );
      await connector.ready();
      await startReader();
    } else {
      const admin = kafka.admin();
      await admin.connect();
      await admin.ensureTopics(
        [topics.state, topics.fraud, topics.quality, topics.classification, topics.dlq].map((topic) => ({
          topic,
          numPartitions: 4,
          replicationFactor: 1,
        })),
      );
      await admin.disconnect();
      await startReader();
      const settings: FloorSettings = {
        brokers: BROKERS,
        groupId: `${id}-group`,
        arrivedTopic: topics.arrived,
        stateTopic: topics.state,
        resultTopics: { fraud: topics.fraud, quality: topics.quality, classification: topics.classification },
        baseUrl: sandbox.baseUrl,
        clientId: 'sandbox-client',
        clientSecret: 'sandbox-secret',
        docs: s.docs,
        warmupDocs: 0,
        maxInFlight: 2000,
        latencyMs: 1000,
        deadline: o.deadline,
        naivePoll: NAIVE,
        retryRateLimited: true,
      };
      const settingsFile = path.join(dir, `${id}.json`);
      fs.writeFileSync(settingsFile, JSON.stringify(settings));
      const child = spawn(process.execPath, [FLOOR_SCRIPT, settingsFile], {
        stdio: ['pipe', 'ignore', 'inherit', 'ipc'],
      });
      const release = ownChild(child);
      stopFloor = () => {
        child.kill('SIGKILL');
        release();
      };
      floorDone = new Promise((resolve) => {
        child.on('message', (m: FloorReport | { type: 'warm' }) => {
          if (m.type === 'floor') resolve(m);
        });
        child.once('exit', () => resolve(null));
      });
    }
    await producer.connect();
    const ids = Array.from({ length: s.docs }, (_, i) => `${id}-${i}`);
    o.log(`freshness ${s.name}, ${poller}: ${s.docs} documents at ${s.docsPerS}/s`);
    const cpuBefore = connector ? sampleTree(connector.pid) : null;
    await produceAtRate(
      producer,
      topics.arrived,
      ids.map((e, i) => ({ event_id: e, value: arrivalJson(e, files[i % files.length]!) })),
      s.docsPerS,
      o.deadline,
    );
    const settled = () =>
      seen.get('fraud')!.size + deadLetters >= s.docs && allResults(seen) + deadLetters >= s.docs;
    const ok = await waitUntil(settled, o.deadline - Date.now(), () =>
      o.log(`freshness ${s.name}, ${poller}: ${seen.get('classification')!.size}/${s.docs} settled`),
    );
    if (!ok) o.log(`freshness ${s.name}, ${poller}: time limit reached before every document settled`);
    const cpuAfter = connector ? sampleTree(connector.pid) : null;
    if (!connector) await within(floorDone, 10_000);
    return measure(
      s,
      poller,
      bound,
      sandbox,
      seen,
      cpuBefore && cpuAfter ? cpuAfter.cpuMs - cpuBefore.cpuMs : null,
    );
  } finally {
    stopFloor?.();
    await connector?.stop();
    await reader.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics).catch(() => undefined);
    await sleep(500);
  }
}

async function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

/** Documents with all three results out. */
function allResults(seen: Map<ResultKind, Map<string, number>>): number {
  const [first, ...rest] = RESULT_KINDS.map((k) => seen.get(k)!);
  let n = 0;
  for (const key of first!.keys()) if (rest.every((m) => m.has(key))) n += 1;
  return n;
}

interface Listed {
  id: string;
  ready_at: Record<string, string | null>;
}

function measure(
  s: FreshnessScenario,
  poller: Poller,
  bound: number,
  sandbox: Sandbox,
  seen: Map<ResultKind, Map<string, number>>,
  cpuMs: number | null,
): Promise<PollerMeasure> {
  return (async () => {
    const res = await fetch(`${sandbox.baseUrl}/_sandbox/submissions`);
    const listed = ((await res.json()) as { items: Listed[] }).items;
    const fraud: number[] = [];
    const fraudDelays: Array<[number, number]> = [];
    const all: number[] = [];
    let first = Infinity;
    let last = 0;
    for (const sub of listed) {
      for (const kind of RESULT_KINDS) {
        const at = seen.get(kind)!.get(sub.id);
        const ready = sub.ready_at[kind];
        if (at === undefined || !ready) continue;
        const delay = at - Date.parse(ready);
        all.push(delay);
        if (kind === 'fraud') {
          fraud.push(delay);
          fraudDelays.push([Date.parse(ready), delay]);
        }
        last = Math.max(last, at);
      }
    }
    const stats = sandbox.stats();
    let gets = 0;
    let fraudGets = 0;
    let limited = 0;
    let refused = 0;
    for (const [key, count] of Object.entries(stats.requests)) {
      const [method, route, status] = key.split(' ') as [string, string, string];
      if (route.startsWith('/_sandbox') || route.startsWith('/oauth2') || route.startsWith('/_upload'))
        continue;
      limited += count;
      if (status === '429') refused += count;
      const result = /^\/v2\/submission\/:[^/]+\/(fraud|quality|classification)$/.exec(route);
      if (method === 'GET' && result && (status === '200' || status === '404')) {
        gets += count;
        if (result[1] === 'fraud') fraudGets += count;
      }
    }
    for (const sub of listed) {
      const created = Date.parse((sub as unknown as { created: string }).created);
      if (Number.isFinite(created)) first = Math.min(first, created);
    }
    const done = allResults(seen);
    const spanS = Math.max(0.001, (last - first) / 1000);
    const docsPerS = done / spanS;
    const p = (v: number[]): [number, number, number] | null =>
      v.length === 0 ? null : [percentile(v, 50), percentile(v, 90), percentile(v, 99)];
    return {
      poller,
      done,
      docs: s.docs,
      fraudDelayMs: p(fraud),
      allDelayMs: p(all),
      getsPerResult: round(gets / Math.max(1, all.length), 2),
      fraudGetsPerDoc: round(fraudGets / Math.max(1, fraud.length), 2),
      percent429: round((100 * refused) / Math.max(1, limited), 2),
      docsPerS: round(docsPerS, 2),
      percentOfBound: round((100 * docsPerS) / bound, 1),
      cpuMsPerDoc: cpuMs === null ? null : round(cpuMs / Math.max(1, done), 2),
      fraudDelays: fraudDelays
        .sort((a, b) => a[0] - b[0])
        .map(([at, delay]) => [at - (fraudDelays[0]?.[0] ?? 0), delay]),
    };
  })();
}

export function printFreshness(measures: FreshnessMeasure[]): void {
  const rows = [
    [
      'scenario',
      'poller',
      'done',
      'fraud delay p50/p90/p99 ms',
      'all results p50/p90/p99 ms',
      'GETs/result',
      'fraud GETs/doc',
      '429 %',
      'docs/s (% of bound)',
      'CPU ms/doc',
    ],
  ];
  const ms = (v: [number, number, number] | null) => (v ? v.map((x) => Math.round(x)).join(' / ') : '-');
  for (const m of measures) {
    for (const p of m.pollers) {
      rows.push([
        m.scenario.name,
        p.poller,
        `${p.done}/${p.docs}`,
        ms(p.fraudDelayMs),
        ms(p.allDelayMs),
        String(p.getsPerResult),
        String(p.fraudGetsPerDoc),
        `${p.percent429} %`,
        `${p.docsPerS} (${p.percentOfBound} % of ${round(m.boundDocsPerS, 2)})`,
        p.cpuMsPerDoc === null ? '-' : String(p.cpuMsPerDoc),
      ]);
    }
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}\n`);
}
