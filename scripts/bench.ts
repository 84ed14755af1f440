/**
 * `npm run bench`: measures docstream on the real local stack (Kafka, registry) against an
 * in-process sandbox, the connector running as its own process (`docstream run`).
 *
 *   npm run bench                                   throughput: docstream and the naive baseline
 *   npm run bench -- --docs 400 --latency-ms 1000 --rate 50 --partitions 1 --max-in-flight 500
 *   npm run bench -- --mode stream --size-mb 1024   memory with a large file (and --small-mb 64)
 *   npm run bench -- --mode state                   state footprint per finished doc, restore time
 *   npm run bench -- --docs 2000 --latency-ms 200 --rate 5000 --partitions 4 --max-in-flight 1000 \
 *     --baseline-docs 0 --scale-out none                CPU per document against the floor
 *   --floor node|go|rdkafka|platformatic|both|false  the floors measured after each main run, in the
 *                     order given, e.g. --floor node,go,rdkafka (default node; quiet: see below): node is
 *                     scripts/floor.ts (bare node:http + kafkajs, results written as the API's
 *                     bytes); rdkafka is the same program on librdkafka instead of kafkajs
 *                     (@confluentinc/kafka-javascript's KafkaJS API, scripts/lib/rdkafka-floor.ts:
 *                     not a dependency of docstream, built from source on first use into
 *                     .cache/rdkafka-floor from scripts/rdkafka-floor's lock; needs Debian's
 *                     build-essential, python3, libssl-dev, zlib1g-dev, libzstd-dev, liblz4-dev,
 *                     libsasl2-dev and libcurl4-openssl-dev, and says which are missing); platformatic
 *                     is the same program on @platformatic/kafka (pure JavaScript,
 *                     scripts/lib/platformatic-floor.ts: installed on first use into
 *                     .cache/platformatic-floor from scripts/platformatic-floor's lock; needs node
 *                     >= 22.22 or >= 24.6); go is
 *                     scripts/go-floor, the same flow hand-written in Go (franz-go, net/http
 *                     keep-alive, hamba/avro: results written as the connector's Avro records),
 *                     built on first use into .cache/go-floor (needs Go 1.26+ on PATH); both is
 *                     node,go; the connector's ratio to each is printed; false: none
 *   --delivery both   each main run twice, connector.delivery at-least-once and exactly-once
 *                     (alternating which goes first): CPU per document and throughput compared
 *   --instances N     connector processes in one group for the main run
 *   --warmup-docs N   documents run first and not measured, by the connector and the floor alike
 *                     (default: as many as --docs, at most 2000, enough for the JIT to settle;
 *                     0 measures cold processes)
 *   --repeat N        N main runs, each with its floor: the medians are printed, the median run detailed
 *   --group-share-ms N  connector.groupShareIntervalMs of every connector (0: the group's API limit
 *                     divided by partitions held only, on each join; default: the connector's own)
 *   --timeline        each scale-out run prints, per second, the calls the API accepted and refused,
 *                     creates, documents settled and each instance's limiter rate/ceiling, and logs when
 *                     the first and last creates and the last result came
 *   BENCH_NODE_ARGS   extra node flags for the connector children (e.g. "--max-semi-space-size=64")
 *   --cpu-prof        writes a V8 CPU profile of each main-run connector and of the floor, over the
 *                     measured documents only, into bench-results/profiles (<run>-connector-N.cpuprofile,
 *                     <run>-floor.cpuprofile)
 *   npm run bench -- --mode inflight                live heap per in-flight doc (--inflight-docs 5000)
 *   npm run bench -- --mode blobs --docs 2000 --warmup-docs 1000 --latency-ms 200 --partitions 4 \
 *     --max-in-flight 1000                          file, http and s3 blobs side by side: CPU per
 *     document, throughput, GETs per blob, accepted connections per document (--schemes file,http,s3);
 *     --blob-rate N produces every scheme's documents at N a second instead of each phase at once
 *     (0, the default): at a rate the stack's S3 store sustains (~175/s; e.g. 120) CPU per document
 *     compares like with like, each scheme's per-second costs spread over as many documents;
 *     --cpu-prof writes each scheme's connector's CPU profile (its measured documents) into
 *     bench-results/profiles (<run>-connector.cpuprofile, the run's name starting blobs-<scheme>)
 *   npm run bench -- --mode limit                   an API limit the client is not told: 40/s told 5000,
 *     10/s told 20, 40/s told 40, two instances told 5000 each, a limit moving 40 → 20 → 60/s
 *     (--limit-scenarios all | 1,3,5)
 *   npm run bench -- --mode freshness               delay after ready (p50/p90/p99, from the sandbox's ready_at)
 *     and GETs per result, results 1-4 s uniform, 20 documents/s against API limits from 5000/s down
 *     to 40/s (below the load), docstream and a naive poller (first GET 200 ms after the upload, then
 *     100 ms doubling to 1 s) one after the other (--freshness-scenarios all | 1,5; --pollers
 *     docstream,naive; with --before-cli <other build's dist/cli/index.js>, `before` runs that build);
 *     scenario 6 at 5000/s with every other file 2 MiB and its results 3 s slower (learning by size)
 *   npm run bench -- --mode quiet                   quiet hours and memory of `docstream run` as users start it
 *     (its whole process tree): idle CPU (--idle-s 60), CPU per document at --trickle-rate 10/s for
 *     --trickle-s 60, RSS per finished document held (--held-docs 300000, two instances, --held-wait-s 90;
 *     --held-docs 0 skips it; --held-logs keeps the three instances' logs at info level, their /metrics
 *     and /proc status as measured in bench-results/logs); --cpu-prof writes the connector's CPU
 *     profile to bench-results/profiles; --floor node|go|rdkafka|platformatic or a comma list (default false) also
 *     feeds each floor the same trickle after the connector's and prints its CPU per document (its
 *     whole process tree, measured as the connector's) beside it, and its idle CPU over --idle-s
 *     between its warm-up and the measured trickle
 *   npm run bench -- --mode optimisations           each optimisation of docs/optimisations.md switched off
 *     alone (DOCSTREAM_OPTIMISATIONS_OFF) beside all on, on `docstream run` as users start it (whole
 *     process tree): CPU per document at a flood (--flood-docs 1000 after --flood-warmup-docs 300) and
 *     at a trickle (--trickle-rate 10/s for --trickle-s 8), RSS per finished document held
 *     (--held-docs 200000, --held-wait-s 8, against an idle instance); --rounds 2, the order
 *     alternating; --optimisations all | a comma list; --short: smaller phases (about half the time),
 *     noisier. About 12-13 minutes for all nine variants and two rounds (scripts/lib/bench-optimisations.ts);
 *     --before-cli <another build's dist/cli/index.js> adds that build, all on, as the variant `before`
 *   npm run bench -- --mode tenants                 one tenant at its limit with a backlog beside another on shared
 *     partitions: the other's delay after ready, the first's share of its limit (scripts/lib/bench-tenants.ts)
 *   npm run bench -- --scale-events                 what each scale event costs under a steady load
 *     (--events 1,2,3,4,3,2 --events-rate 300 --events-partitions 12 --events-hold-s 20;
 *      --assignor round-robin: the group as it was before the sticky assignor)
 *
 * Prints a table and writes bench-results/<timestamp>.json. Bounded: --timeout-s (default 600)
 * stops everything. The npm script compiles scripts/ with tsconfig.scripts.json into .cache/scripts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { printBlobs, runBlobs, type BlobScheme } from './lib/bench-blobs.js';
import { FLOOR_NAMES, parseFloors, type FloorKind } from './lib/bench-floor.js';
import { FRESHNESS_SCENARIOS, printFreshness, runFreshness, type Poller } from './lib/bench-freshness.js';
import { printInflight, runInflight } from './lib/bench-inflight.js';
import { LIMIT_SCENARIOS, printLimit, runLimit } from './lib/bench-limit.js';
import { printScaleEvents, runScaleEvents } from './lib/bench-scale-events.js';
import { printTenants, runTenants } from './lib/bench-tenants.js';
import { printQuiet, runQuiet } from './lib/bench-quiet.js';
import { parseVariants, printOptimisations, runOptimisations } from './lib/bench-optimisations.js';
import { printState, runState } from './lib/bench-state.js';
import { runStream, type StreamMeasure } from './lib/bench-stream.js';
import {
  runThroughput,
  type RepeatMeasure,
  type DeliveryComparison,
  type DeliveryRuns,
  type RunMeasure,
  type ThroughputResult,
} from './lib/bench-throughput.js';
import { endOfRun, parseFlags, percentile, round } from './lib/harness.js';
import type { Delivery } from '../src/connector/outputs/delivery-modes.js';

const flags = parseFlags(process.argv.slice(2), {
  mode: 'throughput',
  limitScenarios: 'all',
  freshnessScenarios: 'all',
  /** --mode freshness: a comma list of docstream, before (--before-cli) and naive, run in that order. */
  pollers: 'docstream,naive',
  /**
   * --mode freshness: the CLI of another build (dist/cli/index.js), measured as the poller `before`;
   * --mode optimisations: measured as the variant `before` (all on), beside this build's.
   */
  beforeCli: '',
  schemes: 'file,http,s3',
  /** --mode blobs: documents produced per second in every scheme; 0: each phase at once. */
  blobRate: 0,
  docs: 400,
  latencyMs: 1000,
  rate: 50,
  burst: 0,
  /** auto: 1 (4 for --mode tenants). */
  partitions: 'auto',
  /** auto: 500 (200 for --mode tenants: below its backlog). */
  maxInFlight: 'auto',
  clientRate: 0,
  baselineDocs: 30,
  baselinePollMs: 250,
  instances: 1,
  /** auto: as many as --docs, at most 2000. */
  warmupDocs: 'auto',
  repeat: 1,
  /** node, go, rdkafka, platformatic, a comma list of them, both (node,go), or false (none); auto: node for throughput, false for quiet. */
  floor: 'auto',
  cpuProf: false,
  scaleOut: '1,2,3',
  scaleDocs: 240,
  scaleRate: 40,
  scalePartitions: 4,
  /** default: the connector's own (connector.groupShareIntervalMs). */
  groupShareMs: 'default',
  /** Scale-out runs print a per-second timeline: calls accepted and refused, each limiter's rate. */
  timeline: false,
  sizeMb: 1024,
  smallMb: 64,
  /** auto: 600 s; 1500 s for --mode optimisations. */
  timeoutS: 'auto',
  stateDocs: 300_000,
  restoreDocs: 1_000_000,
  inflightDocs: 5000,
  idleS: 60,
  trickleRate: 10,
  /** auto: 60 (quiet), 8 (optimisations; 6 with --short). */
  trickleS: 'auto',
  /** auto: 300000 (quiet), 200000 (optimisations; 100000 with --short). */
  heldDocs: 'auto',
  /** auto: 90 (quiet), 8 (optimisations; 5 with --short). */
  heldWaitS: 'auto',
  /** --mode optimisations: all, or a comma list of names (all on is always measured). */
  optimisations: 'all',
  /** --mode optimisations: rounds, the order alternating (at least 2 for a spread). */
  rounds: 2,
  floodDocs: 1000,
  floodWarmupDocs: 300,
  /** --mode optimisations: a shorter run (smaller phases); its figures are noisier. */
  short: false,
  heldLogs: false,
  scaleEvents: false,
  events: '1,2,3,4,3,2',
  eventsRate: 300,
  eventsPartitions: 12,
  eventsHoldS: 20,
  assignor: 'sticky',
  eventsMaxInFlight: 2000,
  /** connector.delivery of the throughput runs: at-least-once, exactly-once, or both (compared). */
  delivery: 'at-least-once',
  /** --mode tenants: busy's documents produced at once before calm's stream (contended phase). */
  backlog: 500,
  /** --mode tenants: busy's application's limit at the API, calls per second. */
  busyLimit: 5,
  /** --mode tenants: the burst of busy's token bucket at the API; 0: a fifth of a second of its limit. */
  busyBurst: 0,
  /** --mode tenants: busy's ratePerSecond in the tenant directory; 0: not set (found from 429s). */
  busyToldRate: 5,
  /** --mode tenants: calm's application's limit at the API (and in the directory), calls per second. */
  calmLimit: 1000,
  calmRate: 5,
  streamS: 60,
  /** --mode tenants: how long after its stream a phase waits at most for calm's documents. */
  drainS: 300,
  /** --mode tenants: busy's first seconds of calls left out of its achieved rate. */
  rampUpS: 5,
  /** --mode tenants: tenants.maxInFlightShare of the connector; default: the connector's own. */
  maxInFlightShare: 'default',
});

const log = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function deliveryFlag(value: string): Delivery | 'both' {
  if (value === 'at-least-once' || value === 'exactly-once' || value === 'both') return value;
  throw new Error(`--delivery must be at-least-once, exactly-once or both, got ${value}`);
}

/** A flag whose default is `auto`: the mode's own default then. */
function orAuto(value: string | number | boolean | undefined, auto: number): number {
  return value === 'auto' ? auto : Number(value);
}

function bounded(n: number, min: number, max: number, name: string): number {
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${name} must be within ${min}..${max}`);
  return n;
}

/** `--scale-out 1,2,3` or `none`. */
function parseInstanceList(text: string): number[] {
  if (text === 'none' || text === '') return [];
  return text.split(',').map((part) => bounded(Number(part), 1, 8, 'scale-out'));
}

/** `all`, or a comma list of 1-based scenario numbers. */
function pickScenarios<T>(pick: string, all: T[], flag: string): T[] {
  if (pick === 'all') return all;
  return pick.split(',').map((n) => {
    const s = all[Number(n) - 1];
    if (!s) throw new Error(`--${flag}: no scenario ${n} (1-${all.length} or all)`);
    return s;
  });
}

function row(cells: Array<string | number | null>, widths: number[]): string {
  return cells.map((c, i) => String(c ?? '-').padEnd(widths[i] ?? 12)).join(' ');
}

function printThroughput(r: ThroughputResult): void {
  const p = r.parameters;
  console.log(
    `\nthroughput: ${p.docs} docs measured after ${p.warmupDocs} warm-up docs (baseline ${p.baselineDocs}), sandbox latency ${p.latencyMs} ms fixed, ` +
      `rate limit ${p.rate}/s (burst ${p.burst}), client ceiling ${p.clientRate}/s, ` +
      `${p.partitions} partition(s), maxInFlight ${p.maxInFlight}`,
  );
  console.log(
    `bound: min(rate ${r.bound.rateLimitDocsPerS}/s [${p.rate}/s / 4 rate-limited calls: create + 3 GETs], ` +
      `concurrency ${r.bound.concurrencyDocsPerS}/s [maxInFlight / latency]) = ${r.bound.docsPerS} docs/s`,
  );
  const widths = [26, 14, 14];
  console.log(row(['', 'docstream', 'baseline'], widths));
  const line = (label: string, f: (m: RunMeasure) => string | number | null) =>
    console.log(row([label, f(r.docstream), r.baseline ? f(r.baseline) : null], widths));
  line('documents (completed/DLQ)', (m) => `${m.completed}/${m.deadLetters}`);
  line('duration s', (m) => m.durationS);
  line('throughput docs/s', (m) => m.throughputDocsPerS);
  line('latency p50 ms', (m) => m.latencyP50Ms);
  line('latency p99 ms', (m) => m.latencyP99Ms);
  line('API calls / doc', (m) => m.callsPerDoc);
  line('  vs minimum (5)', (m) => `${m.callsVsMinimum}x`);
  line('  GET 404 (not ready)', (m) => m.calls.resultsNotReady);
  line('429s', (m) => m.rateLimited);
  line('peak RSS MB (VmHWM)', (m) => m.peakRssMb);
  line('idle RSS MB', (m) => m.idleRssMb);
  line('heap MB idle/peak', (m) => (m.peakHeapMb ? `${m.idleHeapMb}/${m.peakHeapMb}` : null));
  line('peak in flight', (m) => m.peakInFlight ?? null);
  line('heap KB / in-flight doc', (m) => m.heapKbPerInFlight ?? null);
  const d = r.docstream;
  const floorText = (f: (typeof r.floors)[number]) =>
    `floor ${f.floor} (${FLOOR_NAMES[f.floor]}, same run) ${f.cpuMsPerDoc} ms; ratio ${f.ratio ?? '-'}x`;
  console.log(
    `\nCPU per document (connector process${p.instances > 1 ? 'es' : ''}, user+sys, first measured record to last result): ` +
      `${d.cpuMsPerDoc ?? '-'} ms` +
      (r.floors.length === 1 ? `; ${floorText(r.floors[0]!)}` : ''),
  );
  if (r.floors.length > 1) for (const f of r.floors) console.log(`  ${floorText(f)}`);
  if (p.warmupDocs > 0)
    console.log(
      `cold, over the ${p.warmupDocs} warm-up documents (JIT compilation, opening the pool): connector ` +
        `${d.coldCpuMsPerDoc ?? '-'} ms` +
        r.floors
          .map((f) => `, floor ${f.floor} ${f.coldCpuMsPerDoc ?? '-'} ms; ratio ${f.coldRatio ?? '-'}x`)
          .join(''),
    );
  if (r.repeats.length > 1) printRepeats(r);
  if (r.delivery) printDelivery(r.delivery);
  for (const f of r.floors)
    console.log(
      `floor ${f.floor}: ${f.completed} docs in ${f.durationS} s, ${f.httpCalls} HTTP calls ` +
        `= ${(f.httpCalls / Math.max(1, f.completed)).toFixed(2)} per document ` +
        `(${f.notReady} not ready; docstream ${r.docstream.callsPerDoc}), ${f.kafkaRequests} Kafka produce requests, ` +
        `${f.tcpConnections} TCP connections`,
    );
  console.log(
    `live heap (after full GC): idle ${d.liveHeapIdleMb ?? '-'} MB, ${d.liveHeapPeakMb ?? '-'} MB with ` +
      `${d.liveHeapInFlight ?? '-'} in flight = ${d.liveHeapKbPerInFlight ?? '-'} KB per in-flight document ` +
      `(GC of the samples: ${d.sampleGcMs} ms CPU, subtracted); new TCP connections to the API: ${d.apiConnections ?? '-'}`,
  );
  console.log(
    `Kafka records written per document: state ${d.stateRecordsPerDoc ?? '-'}, results and dead letters ` +
      `${d.outputRecordsPerDoc ?? '-'} (the floor writes 3 and 3)`,
  );
  const stages = Object.entries(d.stages ?? {});
  if (stages.length > 0) {
    console.log(
      `mean stage durations (first connector): ${stages.map(([stage, s]) => `${stage} ${s.meanMs} ms`).join(', ')}`,
    );
  }
  if (r.scaleOut.length > 0) {
    const between =
      p.groupShareMs === 0
        ? ' only, --group-share-ms 0'
        : ' and by the partitions with work' + (p.groupShareMs === null ? '' : ` every ${p.groupShareMs} ms`);
    console.log(
      `\nscale-out: ${p.scaleDocs} docs, one sandbox limit ${p.scaleRate}/s shared by all instances (one client id), ` +
        `each configured with api.ratePerSecond ${p.scaleRate} (the connector sets its share on each group join${between}), ` +
        `${p.scalePartitions} partitions`,
    );
    const w = [10, 16, 12, 14, 12, 10, 12, 16];
    console.log(
      row(
        [
          'instances',
          'completed/DLQ',
          'docs/s',
          '% of bound',
          'calls',
          '429 %',
          'CPU ms/doc',
          'docs/partition',
        ],
        w,
      ),
    );
    for (const m of r.scaleOut) {
      if ('error' in m) {
        console.log(row([m.instances, `failed: ${m.error}`], [10, 80]));
        continue;
      }
      console.log(
        row(
          [
            m.instances,
            `${m.completed}/${m.deadLetters}`,
            m.throughputDocsPerS,
            `${m.percentOfBound}% of ${m.boundDocsPerS}`,
            m.calls,
            m.percent429,
            m.cpuMsPerDoc,
            m.partitionDocs.join('/'),
          ],
          w,
        ),
      );
      if (m.timeline) {
        console.log(
          `  per second: calls accepted/refused, creates, settled; each instance's limiter rate/ceiling`,
        );
        for (const t of m.timeline) {
          console.log(
            `  ${String(t.s).padStart(3)} s  ${t.accepted}/${t.refused}  ${t.creates}  ${t.settled}  ` +
              t.rates.map(([rate, ceiling]) => `${rate}/${ceiling}`).join('  '),
          );
        }
      }
    }
  }
  console.log(
    `docstream: ${r.docstream.percentOfBound}% of the bound; ` +
      `speedup over baseline ${r.speedup ?? '-'}x (bound / baseline = ${r.expectedSpeedup ?? '-'}x)`,
  );
}

/** `--delivery both`: each mode's runs and medians, and exactly-once's cost against the issue 23 targets. */
function printDelivery(c: DeliveryComparison): void {
  const runs = c.atLeastOnce.cpuMsPerDoc.length;
  console.log(
    `\ndelivery: at-least-once and exactly-once, ${runs} run${runs > 1 ? 's' : ''} each (alternating which goes first)`,
  );
  const show = (values: Array<number | null>, unit: string) =>
    `${values.map((v) => (v === null ? '-' : `${v}${unit}`)).join('  ')}   median ${median(values) ?? '-'}${unit}`;
  const rows: Array<[string, keyof DeliveryRuns, string]> = [
    ['CPU per document', 'cpuMsPerDoc', ' ms'],
    ['throughput', 'throughputDocsPerS', ' docs/s'],
    ['latency p50', 'latencyP50Ms', ' ms'],
    ['latency p99', 'latencyP99Ms', ' ms'],
    ['state records / doc', 'stateRecordsPerDoc', ''],
    ['output records / doc', 'outputRecordsPerDoc', ''],
  ];
  for (const [label, key] of rows) {
    console.log(
      `  ${label.padEnd(22)} at-least-once ${show(c.atLeastOnce[key], rows.find((r) => r[1] === key)![2])}`,
    );
    console.log(
      `  ${''.padEnd(22)} exactly-once  ${show(c.exactlyOnce[key], rows.find((r) => r[1] === key)![2])}`,
    );
  }
  console.log(
    '  (records per doc count offsets: under exactly-once they include the transaction markers, one per partition written per transaction)',
  );
  const txns = c.exactlyOnce.transactions
    .map((t) =>
      t ? `${t.count} transactions, ${round(t.records / t.count, 1)} records each, ${t.meanMs} ms` : '-',
    )
    .join('; ');
  console.log(`  transactions (first connector, warm-up included): ${txns}`);
  const verdict = (cpu: number | null, tput: number | null) =>
    `CPU per document ${cpu ?? '-'}x (target <= 1.2x: ${cpu !== null && cpu <= 1.2 ? 'met' : 'MISSED'}), ` +
    `throughput ${tput ?? '-'}x (target >= 0.9x: ${tput !== null && tput >= 0.9 ? 'met' : 'MISSED'})`;
  console.log(
    `  exactly-once / at-least-once, medians of each mode: ${verdict(c.cpuRatio, c.throughputRatio)}`,
  );
  console.log(
    `  per repeat (both runs back to back): ${c.pairs.map((p) => `CPU ${p.cpuRatio ?? '-'}x, throughput ${p.throughputRatio ?? '-'}x`).join('; ')}`,
  );
  console.log(
    `  exactly-once / at-least-once, median of the repeats' ratios: ${verdict(c.pairCpuRatio, c.pairThroughputRatio)}`,
  );
}

/** The middle run's value (nearest rank, as the run detailed above is chosen); null without values. */
function median(values: Array<number | null>): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : percentile(known, 50);
}

/** One line per measure: every run's value, in order, and their median. */
function printRepeats(r: ThroughputResult): void {
  const runs = r.repeats;
  const kinds = r.parameters.floors;
  console.log(
    `repeats: ${runs.length} main runs, each followed by its floor${kinds.length > 1 ? 's' : ''} ` +
      `(the run detailed above has the median ratio${kinds.length > 1 ? ` to the ${kinds[0]} floor` : ''})`,
  );
  type Value = (run: RepeatMeasure) => number | null;
  const of = (kind: FloorKind, pick: (f: RepeatMeasure['floors'][number]) => number | null): Value => {
    return (run) => {
      const f = run.floors.find((x) => x.floor === kind);
      return f ? pick(f) : null;
    };
  };
  // With one floor the rows are named as before; with both, each floor has its own.
  const name = (kind: FloorKind) => (kinds.length > 1 ? `floor ${kind}` : 'floor');
  const rows: Array<[string, Value, string, boolean?]> = [
    ['CPU per document, warm', (run) => run.cpuMsPerDoc, ' ms'],
    ...kinds.flatMap((k): Array<[string, Value, string]> => [
      [`${name(k)}, warm`, of(k, (f) => f.cpuMsPerDoc), ' ms'],
      [kinds.length > 1 ? `ratio to ${k}, warm` : 'ratio, warm', of(k, (f) => f.ratio), 'x'],
    ]),
    ['CPU per document, cold', (run) => run.coldCpuMsPerDoc, ' ms', true],
    ...kinds.map((k): [string, Value, string, boolean] => [
      `${name(k)}, cold`,
      of(k, (f) => f.coldCpuMsPerDoc),
      ' ms',
      true,
    ]),
    ['% of the bound', (run) => run.percentOfBound, ' %'],
  ];
  for (const [label, value, unit, cold] of rows) {
    if (cold && r.parameters.warmupDocs === 0) continue;
    const values = runs.map(value);
    const shown = values.map((v) => (v === null ? '-' : `${v}${unit}`)).join('  ');
    console.log(`  ${label.padEnd(26)} ${shown}   median ${median(values) ?? '-'}${unit}`);
  }
}

function printStream(results: StreamMeasure[]): void {
  console.log('\nstream: one file:// blob per run, fresh connector process each');
  const widths = [10, 14, 10, 12, 13, 12];
  console.log(row(['size MiB', 'outcome', 'upload s', 'idle RSS MB', 'peak RSS MB', 'growth MB'], widths));
  for (const m of results) {
    console.log(
      row(
        [m.sizeMb, m.deadLetter ?? m.outcome, m.uploadSeconds, m.idleRssMb, m.peakRssMb, m.growthMb],
        widths,
      ),
    );
  }
}

async function main(): Promise<void> {
  const timeoutS = bounded(
    orAuto(flags.timeoutS, flags.mode === 'optimisations' ? 1500 : flags.mode === 'tenants' ? 1200 : 600),
    10,
    3600,
    'timeout-s',
  );
  const deadline = Date.now() + timeoutS * 1000;
  // The hard stop: whatever hangs, the benchmark ends (and kills the connectors it started).
  setTimeout(
    () => {
      log(`hard stop after ${timeoutS + 60} s`);
      void end(2);
    },
    (timeoutS + 60) * 1000,
  ).unref();

  let result: unknown;
  if (flags.scaleEvents === true) {
    const assignor = String(flags.assignor);
    if (assignor !== 'sticky' && assignor !== 'round-robin')
      throw new Error('--assignor must be sticky or round-robin');
    const events = await runScaleEvents({
      rate: bounded(Number(flags.eventsRate), 1, 5000, 'events-rate'),
      partitions: bounded(Number(flags.eventsPartitions), 1, 64, 'events-partitions'),
      sizes: parseInstanceList(String(flags.events)),
      holdS: bounded(Number(flags.eventsHoldS), 3, 600, 'events-hold-s'),
      assignor,
      maxInFlight: bounded(Number(flags.eventsMaxInFlight), 1, 100_000, 'events-max-in-flight'),
      deadline,
      log,
    });
    printScaleEvents(events);
    result = { mode: 'scale-events', ...events };
  } else if (flags.mode === 'stream') {
    const large = bounded(Number(flags.sizeMb), 1, 8192, 'size-mb');
    const small = bounded(Number(flags.smallMb), 1, 8192, 'small-mb');
    const sizes = small < large ? [small, large] : [large];
    const measures = await runStream({ sizesMb: sizes, deadline, log });
    printStream(measures);
    result = { mode: 'stream', measures };
  } else if (flags.mode === 'throughput') {
    const rate = bounded(Number(flags.rate), 1, 10_000, 'rate');
    const docs = bounded(Number(flags.docs), 1, 5000, 'docs');
    const warmupDocs =
      flags.warmupDocs === 'auto'
        ? Math.min(2000, docs)
        : bounded(Number(flags.warmupDocs), 0, 5000, 'warmup-docs');
    const throughput = await runThroughput({
      docs,
      warmupDocs,
      repeat: bounded(Number(flags.repeat), 1, 20, 'repeat'),
      latencyMs: bounded(Number(flags.latencyMs), 0, 60_000, 'latency-ms'),
      rate,
      burst: Number(flags.burst) > 0 ? Number(flags.burst) : Math.max(1, Math.ceil(rate / 5)),
      partitions: bounded(orAuto(flags.partitions, 1), 1, 64, 'partitions'),
      maxInFlight: bounded(orAuto(flags.maxInFlight, 500), 1, 100_000, 'max-in-flight'),
      clientRate: Number(flags.clientRate) > 0 ? Number(flags.clientRate) : rate,
      baselineDocs: bounded(Number(flags.baselineDocs), 0, 1000, 'baseline-docs'),
      baselinePollMs: bounded(Number(flags.baselinePollMs), 10, 60_000, 'baseline-poll-ms'),
      instances: bounded(Number(flags.instances), 1, 8, 'instances'),
      floors: parseFloors(String(flags.floor), ['node']),
      cpuProfDir: flags.cpuProf === true ? path.resolve('bench-results', 'profiles') : null,
      scaleOut: parseInstanceList(String(flags.scaleOut)),
      scaleDocs: bounded(Number(flags.scaleDocs), 1, 5000, 'scale-docs'),
      scaleRate: bounded(Number(flags.scaleRate), 1, 10_000, 'scale-rate'),
      scalePartitions: bounded(Number(flags.scalePartitions), 1, 64, 'scale-partitions'),
      delivery: deliveryFlag(String(flags.delivery)),
      groupShareMs:
        flags.groupShareMs === 'default'
          ? null
          : bounded(Number(flags.groupShareMs), 0, 60_000, 'group-share-ms'),
      timeline: flags.timeline === true,
      deadline,
      log,
    });
    printThroughput(throughput);
    result = { mode: 'throughput', ...throughput };
  } else if (flags.mode === 'state') {
    const state = await runState({
      stateDocs: bounded(Number(flags.stateDocs), 1, 5_000_000, 'state-docs'),
      restoreDocs: bounded(Number(flags.restoreDocs), 0, 5_000_000, 'restore-docs'),
      deadline,
      log,
    });
    printState(state);
    result = { mode: 'state', ...state };
  } else if (flags.mode === 'quiet') {
    const profiles = path.resolve('bench-results', 'profiles');
    if (flags.cpuProf === true) fs.mkdirSync(profiles, { recursive: true });
    const logsDir = flags.heldLogs === true ? path.resolve('bench-results', 'logs') : null;
    if (logsDir) fs.mkdirSync(logsDir, { recursive: true });
    const quiet = await runQuiet({
      idleS: bounded(Number(flags.idleS), 5, 600, 'idle-s'),
      trickleRate: bounded(Number(flags.trickleRate), 0.1, 100, 'trickle-rate'),
      trickleS: bounded(orAuto(flags.trickleS, 60), 5, 600, 'trickle-s'),
      heldDocs: bounded(orAuto(flags.heldDocs, 300_000), 0, 5_000_000, 'held-docs'),
      heldWaitS: bounded(orAuto(flags.heldWaitS, 90), 0, 600, 'held-wait-s'),
      floors: parseFloors(String(flags.floor), []),
      nodeArgs: flags.cpuProf === true ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : [],
      logsDir,
      deadline,
      log,
    });
    printQuiet(quiet);
    result = { mode: 'quiet', ...quiet };
  } else if (flags.mode === 'optimisations') {
    const short = flags.short === true;
    const beforeCli = String(flags.beforeCli);
    const o = {
      variants: parseVariants(String(flags.optimisations), beforeCli !== ''),
      ...(beforeCli ? { beforeCli: path.resolve(beforeCli) } : {}),
      rounds: bounded(Number(flags.rounds), 1, 10, 'rounds'),
      heldDocs: bounded(orAuto(flags.heldDocs, short ? 100_000 : 200_000), 1000, 5_000_000, 'held-docs'),
      heldWaitS: bounded(orAuto(flags.heldWaitS, short ? 5 : 8), 0, 600, 'held-wait-s'),
      floodDocs: bounded(
        short ? Math.min(500, Number(flags.floodDocs)) : Number(flags.floodDocs),
        10,
        5000,
        'flood-docs',
      ),
      floodWarmupDocs: bounded(
        short ? Math.min(200, Number(flags.floodWarmupDocs)) : Number(flags.floodWarmupDocs),
        0,
        5000,
        'flood-warmup-docs',
      ),
      trickleRate: bounded(Number(flags.trickleRate), 0.1, 100, 'trickle-rate'),
      trickleS: bounded(orAuto(flags.trickleS, short ? 6 : 8), 3, 600, 'trickle-s'),
    };
    const optimisations = await runOptimisations({ ...o, deadline, log });
    printOptimisations(optimisations);
    result = { mode: 'optimisations', ...optimisations };
  } else if (flags.mode === 'limit') {
    const scenarios = pickScenarios(String(flags.limitScenarios), LIMIT_SCENARIOS, 'limit-scenarios');
    const measures = await runLimit({ scenarios, deadline, log });
    printLimit(measures);
    result = { mode: 'limit', measures };
  } else if (flags.mode === 'freshness') {
    const scenarios = pickScenarios(
      String(flags.freshnessScenarios),
      FRESHNESS_SCENARIOS,
      'freshness-scenarios',
    );
    const pollers = String(flags.pollers).split(',');
    for (const p of pollers) {
      if (p !== 'docstream' && p !== 'naive' && p !== 'before')
        throw new Error(`--pollers: a comma list of docstream, before and naive, got ${p}`);
    }
    const beforeCli = String(flags.beforeCli);
    if (pollers.includes('before') && !beforeCli)
      throw new Error('--pollers before needs --before-cli <dist/cli/index.js of the other build>');
    const measures = await runFreshness({
      scenarios,
      pollers: pollers as Poller[],
      ...(beforeCli ? { beforeCli: path.resolve(beforeCli) } : {}),
      deadline,
      log,
    });
    printFreshness(measures);
    result = { mode: 'freshness', measures };
  } else if (flags.mode === 'blobs') {
    const docs = bounded(Number(flags.docs), 1, 5000, 'docs');
    const schemes = String(flags.schemes).split(',') as BlobScheme[];
    for (const scheme of schemes) {
      if (!['file', 'http', 's3'].includes(scheme))
        throw new Error(`--schemes: file, http or s3, got ${scheme}`);
    }
    const blobs = await runBlobs({
      docs,
      warmupDocs:
        flags.warmupDocs === 'auto'
          ? Math.min(2000, docs)
          : bounded(Number(flags.warmupDocs), 0, 5000, 'warmup-docs'),
      latencyMs: bounded(Number(flags.latencyMs), 0, 60_000, 'latency-ms'),
      maxInFlight: bounded(orAuto(flags.maxInFlight, 500), 1, 100_000, 'max-in-flight'),
      partitions: bounded(orAuto(flags.partitions, 1), 1, 64, 'partitions'),
      schemes,
      blobRate: bounded(Number(flags.blobRate), 0, 10_000, 'blob-rate'),
      cpuProfDir: flags.cpuProf === true ? path.resolve('bench-results', 'profiles') : null,
      deadline,
      log,
    });
    printBlobs(blobs);
    result = { mode: 'blobs', ...blobs };
  } else if (flags.mode === 'tenants') {
    const tenants = await runTenants({
      backlog: bounded(Number(flags.backlog), 0, 20_000, 'backlog'),
      busyLimit: bounded(Number(flags.busyLimit), 0.1, 10_000, 'busy-limit'),
      busyBurst: bounded(Number(flags.busyBurst), 0, 10_000, 'busy-burst'),
      busyToldRate: bounded(Number(flags.busyToldRate), 0, 10_000, 'busy-told-rate'),
      calmLimit: bounded(Number(flags.calmLimit), 1, 100_000, 'calm-limit'),
      calmRate: bounded(Number(flags.calmRate), 0.1, 1000, 'calm-rate'),
      streamS: bounded(Number(flags.streamS), 5, 600, 'stream-s'),
      drainS: bounded(Number(flags.drainS), 5, 1800, 'drain-s'),
      partitions: bounded(orAuto(flags.partitions, 4), 1, 64, 'partitions'),
      maxInFlight: bounded(orAuto(flags.maxInFlight, 200), 1, 100_000, 'max-in-flight'),
      rampUpS: bounded(Number(flags.rampUpS), 0, 120, 'ramp-up-s'),
      maxInFlightShare:
        flags.maxInFlightShare === 'default'
          ? null
          : bounded(Number(flags.maxInFlightShare), 0.01, 1, 'max-in-flight-share'),
      deadline,
      log,
    });
    printTenants(tenants);
    result = { mode: 'tenants', ...tenants };
  } else if (flags.mode === 'inflight') {
    const inflight = await runInflight({
      docs: bounded(Number(flags.inflightDocs), 100, 100_000, 'inflight-docs'),
      deadline,
    });
    printInflight(inflight);
    result = { mode: 'inflight', ...inflight };
  } else {
    throw new Error(
      `--mode must be throughput, stream, state, quiet, optimisations, inflight, limit, freshness, blobs or tenants, got ${String(flags.mode)}`,
    );
  }

  const dir = path.resolve('bench-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify(
      { measuredAt: new Date().toISOString(), host: hostInfo(), ...(result as object) },
      null,
      2,
    ),
  );
  console.log(`\nwritten ${path.relative(process.cwd(), file)}`);
}

function hostInfo(): Record<string, unknown> {
  return {
    node: process.version,
    cpus: os.cpus().length,
    memoryMb: Math.round(os.totalmem() / 2 ** 20),
    platform: process.platform,
  };
}

// Every way out deletes the topics a mode left behind (a failure, the hard stop, SIGINT, SIGTERM).
const end = endOfRun(log);
main().then(
  () => end(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return end(1);
  },
);
