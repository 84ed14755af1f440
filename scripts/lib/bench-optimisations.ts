/**
 * `npm run bench -- --mode optimisations`: what each optimisation of docs/optimisations.md buys on
 * `docstream run` as users start it (its whole process tree, as `--mode quiet` measures it), each
 * switched off alone (`DOCSTREAM_OPTIMISATIONS_OFF=<name>`) beside all on, in rounds that alternate
 * the order (odd rounds as listed, even rounds reversed), so that a drift of the machine falls on
 * both sides.
 *
 * Each run is one variant, on one instance that holds `--held-docs` finished documents (written
 * once to a state topic that every run restores) and one idle instance on empty topics, both started
 * together with the variant's switch:
 * 1. Memory: RSS of both trees `--held-wait-s` after both are ready; (loaded − idle) per finished
 *    document held. The idle instance is then stopped.
 * 2. A flood: `--flood-docs` documents (file:// blobs, the sandbox at 200 ms) produced at once to the
 *    loaded instance after `--flood-warmup-docs` unmeasured ones; CPU from the first produced to the
 *    last settled, per document.
 * 3. A trickle: `--trickle-rate` a second for `--trickle-s`, each document alone, after a short
 *    warm-up; CPU per document as the quiet mode counts it.
 * The documents each run processed stay in the state topic, so the next run holds more: each run's
 * held count is the written ones plus every document produced before it.
 *
 * Prints, per variant, every round's value and the median, and the median's change against all on;
 * a change smaller than the spread of all-on's rounds is within the noise. Bounded by the deadline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient, type KafkaProducer } from '../../src/kafka/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { OPTIMISATION_NAMES, type Optimisation } from '../../src/util/optimisations.js';
import {
  arrivalJson,
  BROKERS,
  ConnectorProcess,
  deleteTopics,
  ensureInputTopics,
  ensureStateTopic,
  freePort,
  OutputCollector,
  prefixedTopics,
  produceArrivals,
  round,
  sleep,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  writeFinishedStates,
  type Arrival,
} from './harness.js';
import { sampleTree } from './process-tree.js';
import { produceTrickle, trickleCount } from './trickle.js';

const PARTITIONS = 4;
const LATENCY_MS = 200;
const MAX_IN_FLIGHT = 1000;
const TRICKLE_WARMUP_S = 3;
const PAUSE_MS = 1000;
/** s3-signed-get is not exercised by file:// blobs: `--mode blobs` measures it. */
const NOT_HERE: Optimisation[] = ['s3-signed-get'];
export const BENCHED_OPTIMISATIONS = OPTIMISATION_NAMES.filter((n) => !NOT_HERE.includes(n));

/**
 * all on, one optimisation switched off, `before`: another build's CLI (`--before-cli`), all on, or
 * `tracing`: all on with document traces on (every document sampled), exported to the stack's Jaeger
 * (`docstream stack up --services jaeger`), for what tracing costs.
 */
export type Variant = 'all-on' | 'before' | 'tracing' | Optimisation;

/** Where the variant `tracing` exports: the OTLP/HTTP receiver of the stack's Jaeger. */
const TRACING_ENDPOINT = 'http://127.0.0.1:4318/v1/traces';

export interface OptimisationsParameters {
  variants: Variant[];
  /** The CLI (dist/cli/index.js) of the build measured as the variant `before`. */
  beforeCli?: string;
  rounds: number;
  heldDocs: number;
  heldWaitS: number;
  floodDocs: number;
  floodWarmupDocs: number;
  trickleRate: number;
  trickleS: number;
}

export interface VariantRun {
  variant: Variant;
  round: number;
  /** 1-min load average when the run started. */
  load: number;
  heldDocs: number;
  idleTreeMb: number;
  loadedTreeMb: number;
  rssBytesPerDoc: number;
  floodCpuMsPerDoc: number;
  floodSettled: number;
  floodSeconds: number;
  trickleCpuMsPerDoc: number;
  trickleSettled: number;
}

export interface VariantSummary {
  variant: Variant;
  /** Medians over the rounds, and each measure's min–max. */
  floodCpuMsPerDoc: Stat;
  trickleCpuMsPerDoc: Stat;
  rssBytesPerDoc: Stat;
  idleTreeMb: Stat;
}

export interface Stat {
  values: number[];
  median: number;
  min: number;
  max: number;
  /** (median − all on's median) / all on's median, in %; null for all on itself. */
  changePercent: number | null;
}

export interface OptimisationsResult {
  parameters: OptimisationsParameters;
  load: { before: number[]; after: number[] };
  runs: VariantRun[];
  summaries: VariantSummary[];
}

interface Shared {
  kafka: KafkaClient;
  producer: KafkaProducer;
  sandbox: Sandbox;
  dir: string;
  file: string;
  loadedTopics: ReturnType<typeof prefixedTopics>;
  idleTopics: ReturnType<typeof prefixedTopics>;
  loadedGroup: string;
  idleGroup: string;
  collector: OutputCollector;
  /** The output topics exist once the first connector is ready (it creates them). */
  collecting: boolean;
  deadline: number;
  log: (line: string) => void;
}

/**
 * `all`, or a comma list of names (all-on is always measured); with another build's CLI, `before`
 * is measured too (first after all on).
 */
export function parseVariants(text: string, withBefore = false): Variant[] {
  const before: Variant[] = withBefore ? ['before'] : [];
  if (text === 'all') return ['all-on', ...before, ...BENCHED_OPTIMISATIONS];
  const names = text.split(',').filter((n) => n !== '' && n !== 'all-on' && n !== 'before');
  for (const n of names)
    if (n !== 'tracing' && !(OPTIMISATION_NAMES as string[]).includes(n))
      throw new Error(
        `--optimisations: ${n} is not an optimisation (${OPTIMISATION_NAMES.join(', ')}) nor tracing`,
      );
  return ['all-on', ...before, ...(names as Array<Optimisation | 'tracing'>)];
}

async function startInstance(
  s: Shared,
  topics: Shared['loadedTopics'],
  groupId: string,
  variant: Variant,
  beforeCli?: string,
): Promise<ConnectorProcess> {
  const httpPort = await freePort();
  const config = writeConnectorConfig(s.dir, {
    topics,
    groupId,
    apiBaseUrl: s.sandbox.baseUrl,
    ratePerSecond: 5000,
    maxInFlight: MAX_IN_FLIGHT,
    fileRoots: [s.dir],
    httpPort,
    connector: { commitIntervalMs: 5000 },
    kafka: { sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3000 },
  });
  if (variant === 'before') {
    if (!beforeCli) throw new Error('the variant before needs --before-cli');
    return new ConnectorProcess(config, httpPort, { asUserRuns: true, cli: beforeCli });
  }
  const env: Record<string, string> | undefined =
    variant === 'all-on'
      ? undefined
      : variant === 'tracing'
        ? { DOCSTREAM_TRACING_ENABLED: 'true', DOCSTREAM_TRACING_ENDPOINT: TRACING_ENDPOINT }
        : { DOCSTREAM_OPTIMISATIONS_OFF: variant };
  return new ConnectorProcess(config, httpPort, { asUserRuns: true, ...(env ? { env } : {}) });
}

function arrivals(file: string, prefix: string, n: number): Arrival[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `${prefix}-${i}`;
    return { event_id: eventId, value: arrivalJson(eventId, file) };
  });
}

async function oneRun(
  s: Shared,
  o: OptimisationsParameters,
  variant: Variant,
  roundNo: number,
  heldDocs: number,
): Promise<{ run: VariantRun; produced: number }> {
  const load = round(os.loadavg()[0]!, 2);
  const id = uniqueName(`opt-${roundNo}`);
  const loaded = await startInstance(s, s.loadedTopics, s.loadedGroup, variant, o.beforeCli);
  const idle = await startInstance(s, s.idleTopics, s.idleGroup, variant, o.beforeCli);
  let produced = 0;
  try {
    const wait = Math.max(1000, s.deadline - Date.now());
    await Promise.all([loaded.ready(wait), idle.ready(wait)]);
    if (!s.collecting) {
      await s.collector.start();
      s.collecting = true;
    }
    await sleep(o.heldWaitS * 1000);
    const [l, i] = [sampleTree(loaded.pid), sampleTree(idle.pid)];
    await idle.stop();
    const rssBytesPerDoc = round(((l.rssKb - i.rssKb) * 1024) / Math.max(1, heldDocs), 1);
    s.log(
      `${variant} round ${roundNo}: RSS ${round(l.rssKb / 1024, 1)} MB holding ${heldDocs}, idle ${round(i.rssKb / 1024, 1)} MB = ${rssBytesPerDoc} B per document`,
    );

    const settledAll = (ids: string[]) =>
      waitUntil(() => ids.every((e) => s.collector.settled(e)), Math.max(1000, s.deadline - Date.now()));
    const warm = arrivals(s.file, `${id}-warm`, o.floodWarmupDocs);
    produced += warm.length;
    await produceArrivals(s.producer, s.loadedTopics.arrived, warm);
    await settledAll(warm.map((a) => a.event_id));
    await sleep(PAUSE_MS);
    const flood = arrivals(s.file, `${id}-flood`, o.floodDocs);
    produced += flood.length;
    const floodFrom = sampleTree(loaded.pid);
    const t0 = Date.now();
    await produceArrivals(s.producer, s.loadedTopics.arrived, flood);
    await settledAll(flood.map((a) => a.event_id));
    const floodTo = sampleTree(loaded.pid);
    const floodSeconds = round((Date.now() - t0) / 1000, 1);
    const floodSettled = flood.filter((a) => s.collector.settled(a.event_id)).length;
    const floodCpuMsPerDoc = round((floodTo.cpuMs - floodFrom.cpuMs) / Math.max(1, floodSettled), 3);

    const send = (prefix: string, seconds: number) => {
      const batch = arrivals(s.file, `${id}-${prefix}`, trickleCount(o.trickleRate, seconds));
      produced += batch.length;
      return produceTrickle(s.producer, s.loadedTopics.arrived, batch, o.trickleRate, s.deadline);
    };
    await settledAll(await send('tw', TRICKLE_WARMUP_S));
    await sleep(PAUSE_MS);
    const trickleFrom = sampleTree(loaded.pid);
    const ids = await send('tm', o.trickleS);
    await settledAll(ids);
    const trickleTo = sampleTree(loaded.pid);
    const trickleSettled = ids.filter((e) => s.collector.settled(e)).length;
    const trickleCpuMsPerDoc = round((trickleTo.cpuMs - trickleFrom.cpuMs) / Math.max(1, trickleSettled), 3);
    s.log(
      `${variant} round ${roundNo}: flood ${floodCpuMsPerDoc} ms/doc (${floodSettled} in ${floodSeconds} s), trickle ${trickleCpuMsPerDoc} ms/doc (load ${load})`,
    );
    return {
      produced,
      run: {
        variant,
        round: roundNo,
        load,
        heldDocs,
        idleTreeMb: round(i.rssKb / 1024, 1),
        loadedTreeMb: round(l.rssKb / 1024, 1),
        rssBytesPerDoc,
        floodCpuMsPerDoc,
        floodSettled,
        floodSeconds,
        trickleCpuMsPerDoc,
        trickleSettled,
      },
    };
  } catch (err) {
    throw new Error(`${variant} round ${roundNo}: ${(err as Error).message}\n${loaded.logTail}`);
  } finally {
    await Promise.all([loaded.stop(), idle.stop()]);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function stat(values: number[], base: number | null): Stat {
  const m = median(values);
  return {
    values,
    median: round(m, 3),
    min: Math.min(...values),
    max: Math.max(...values),
    changePercent: base === null || base === 0 ? null : round(((m - base) / base) * 100, 1),
  };
}

export function summarise(runs: VariantRun[], variants: Variant[]): VariantSummary[] {
  const of = (v: Variant) => runs.filter((r) => r.variant === v);
  const on = of('all-on');
  const base = (pick: (r: VariantRun) => number) => (on.length > 0 ? median(on.map(pick)) : null);
  const picks = {
    floodCpuMsPerDoc: (r: VariantRun) => r.floodCpuMsPerDoc,
    trickleCpuMsPerDoc: (r: VariantRun) => r.trickleCpuMsPerDoc,
    rssBytesPerDoc: (r: VariantRun) => r.rssBytesPerDoc,
    idleTreeMb: (r: VariantRun) => r.idleTreeMb,
  };
  return variants
    .filter((v) => of(v).length > 0)
    .map((variant) => {
      const mine = of(variant);
      const summary = (pick: (r: VariantRun) => number) =>
        stat(mine.map(pick), variant === 'all-on' ? null : base(pick));
      return {
        variant,
        floodCpuMsPerDoc: summary(picks.floodCpuMsPerDoc),
        trickleCpuMsPerDoc: summary(picks.trickleCpuMsPerDoc),
        rssBytesPerDoc: summary(picks.rssBytesPerDoc),
        idleTreeMb: summary(picks.idleTreeMb),
      };
    });
}

/** Round `r` (1-based) runs the variants as listed when odd, reversed when even. */
export function roundOrder(variants: Variant[], r: number): Variant[] {
  return r % 2 === 1 ? [...variants] : [...variants].reverse();
}

export async function runOptimisations(
  o: OptimisationsParameters & { deadline: number; log: (line: string) => void },
): Promise<OptimisationsResult> {
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench-optimisations' });
  const sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: LATENCY_MS },
    rateLimit: { ratePerSecond: 5000, burst: 1000 },
    maxSubmissions: 200_000,
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-optimisations-'));
  const before = os.loadavg().map((n) => round(n, 2));
  const id = uniqueName('bench-opt');
  const loadedTopics = prefixedTopics(`${id}-held`, PARTITIONS);
  const idleTopics = prefixedTopics(`${id}-idle`, PARTITIONS);
  const admin = kafka.admin();
  const producer = kafka.producer();
  const collector = new OutputCollector(kafka, loadedTopics);
  const runs: VariantRun[] = [];
  try {
    await admin.connect();
    await producer.connect();
    for (const t of [loadedTopics, idleTopics]) {
      await ensureInputTopics(kafka, t);
      await ensureStateTopic(admin, t.state, PARTITIONS);
    }
    o.log(`writing ${o.heldDocs} finished documents to the state topic`);
    await writeFinishedStates(kafka, {
      stateTopic: loadedTopics.state,
      inputTopic: loadedTopics.arrived,
      partitions: PARTITIONS,
      docs: o.heldDocs,
      parallel: 4,
      deadline: o.deadline,
    });
    const file = (await writeCorpus(dir, ['clean-pdf']))[0]!.file;
    const s: Shared = {
      kafka,
      producer,
      sandbox,
      dir,
      file,
      loadedTopics,
      idleTopics,
      loadedGroup: `${id}-held-group`,
      idleGroup: `${id}-idle-group`,
      collector,
      collecting: false,
      deadline: o.deadline,
      log: o.log,
    };
    let held = o.heldDocs;
    for (let r = 1; r <= o.rounds; r++) {
      for (const variant of roundOrder(o.variants, r)) {
        const { run, produced } = await oneRun(s, o, variant, r, held);
        held += produced;
        runs.push(run);
      }
    }
    return {
      parameters: o,
      load: { before, after: os.loadavg().map((n) => round(n, 2)) },
      runs,
      summaries: summarise(runs, o.variants),
    };
  } finally {
    await collector.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    for (const t of [loadedTopics, idleTopics]) await deleteTopics(kafka, t).catch(() => undefined);
    await sandbox.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function printOptimisations(r: OptimisationsResult): void {
  const p = r.parameters;
  console.log(
    `\noptimisations, each switched off alone beside all on (docstream run as users start it, whole process tree), ` +
      `${p.rounds} round(s), order alternating`,
  );
  console.log(
    `  load average before ${r.load.before.join(' ')}, after ${r.load.after.join(' ')}; per run: ` +
      r.runs.map((x) => x.load).join(' '),
  );
  console.log(
    `  flood: ${p.floodDocs} documents at once after ${p.floodWarmupDocs}; trickle: ${p.trickleRate}/s for ${p.trickleS} s; ` +
      `memory: ${p.heldDocs}+ finished documents held, ${p.heldWaitS} s after ready, against an idle instance`,
  );
  const fmt = (st: Stat, unit: string) =>
    `${st.median}${unit} [${st.min}–${st.max}]${st.changePercent === null ? '' : ` ${st.changePercent > 0 ? '+' : ''}${st.changePercent} %`}`;
  const widths = [32, 32, 32, 36, 24];
  const line = (cells: string[]) =>
    console.log('  ' + cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(''));
  line(['switched off', 'flood CPU ms/doc', 'trickle CPU ms/doc', 'RSS B/finished doc held', 'idle RSS MB']);
  for (const sm of r.summaries)
    line([
      sm.variant === 'all-on'
        ? '(none: all on)'
        : sm.variant === 'before'
          ? 'before (--before-cli, all on)'
          : sm.variant,
      fmt(sm.floodCpuMsPerDoc, ''),
      fmt(sm.trickleCpuMsPerDoc, ''),
      fmt(sm.rssBytesPerDoc, ''),
      fmt(sm.idleTreeMb, ''),
    ]);
  console.log(
    "  median [min–max over the rounds] and the median's change against all on (+: worse without it). " +
      "A change inside all on's own min–max is within the noise.",
  );
}
