/**
 * Throughput mode of the benchmark: a backlog of documents through docstream (a `docstream run`
 * child process) and then through the naive baseline, each against its own fresh sandbox with the
 * same latency and rate limit, on the real Kafka and registry.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Delivery } from '../../src/connector/outputs/delivery-modes.js';
import { writeCorpus, type SampleKind } from '../../src/demo/corpus.js';
import { KafkaClient, type KafkaProducer } from '../../src/kafka/index.js';
import { partitionOfKey } from '../../src/kafka/partitioner.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { Progress } from '../../src/util/progress.js';
import { runBaseline } from '../baseline.js';
import { apiCalls, type ApiCalls } from './api-calls.js';
import { prepareFloors, runFloor, type FloorKind, type FloorMeasure } from './bench-floor.js';
import {
  BROKERS,
  ConnectorProcess,
  OutputCollector,
  RESULT_KINDS,
  arrivalJson,
  deleteTopics,
  ensureInputTopics,
  freePort,
  percentile,
  round,
  produceArrivals,
  prefixedTopics,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  type Arrival,
} from './harness.js';

export interface ThroughputOptions {
  docs: number;
  latencyMs: number;
  rate: number;
  burst: number;
  partitions: number;
  maxInFlight: number;
  clientRate: number;
  baselineDocs: number;
  baselinePollMs: number;
  /** Connector processes in one consumer group for the main run. */
  instances: number;
  /**
   * Documents run through the main run's connector (and the floor) before the measured ones, so
   * that CPU per document and throughput are those of a warm process; their own CPU is reported
   * apart (coldCpuMsPerDoc). 0 measures from the first document.
   */
  warmupDocs: number;
  /**
   * Main runs (each followed by its floor) to make: one run moves by ±5-10 % on a shared machine,
   * so the medians of several are printed; the run with the median ratio is the one detailed.
   */
  repeat: number;
  /**
   * The floors measured after each main run, in this order: `node` (scripts/floor.ts, bare HTTP +
   * plain Kafka writes), `rdkafka` (the same on librdkafka), `platformatic` (the same on
   * @platformatic/kafka), `go` (scripts/go-floor); none when
   * empty. The first is the one the ratios of the repeats and the choice of the detailed run use.
   */
  floors: FloorKind[];
  /** Write a V8 CPU profile of each connector child into this directory. */
  cpuProfDir: string | null;
  /** The scale-out series: instance counts, each against one shared sandbox limit. */
  scaleOut: number[];
  scaleDocs: number;
  scaleRate: number;
  scalePartitions: number;
  /** connector.groupShareIntervalMs of every connector (null: the connector's default); 0 = by partitions only. */
  groupShareMs: number | null;
  /** Scale-out runs record a per-second timeline of the API's calls and each limiter's rate. */
  timeline?: boolean;
  /**
   * connector.delivery of the main runs; `both`: each repeat runs at-least-once and exactly-once
   * (alternating which goes first) and `delivery` compares them (the table shows at-least-once).
   */
  delivery?: Delivery | 'both';
  deadline: number;
  log: (line: string) => void;
}

export interface RunMeasure {
  docs: number;
  completed: number;
  deadLetters: number;
  durationS: number;
  throughputDocsPerS: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  calls: ApiCalls;
  callsPerDoc: number;
  minCallsPerDoc: number;
  callsVsMinimum: number;
  rateLimited: number;
  peakRssMb: number | null;
  idleRssMb: number | null;
  /** Sampled each second from the connector's /metrics: V8 heap in use, and documents in flight. */
  idleHeapMb?: number | null;
  peakHeapMb?: number | null;
  peakInFlight?: number | null;
  /** (peak heap - idle heap) / peak in flight: an upper bound of the memory one document holds. */
  heapKbPerInFlight?: number | null;
  /** Measured documents per input partition (keys are random per run). */
  partitionDocs?: number[];
}

export interface CpuMeasure {
  /**
   * user + system CPU of the connector processes from the first measured record produced to the
   * last result, per document (after the warm-up documents, if any).
   */
  cpuMsPerDoc: number | null;
  /** The same over the warm-up documents alone (JIT compilation, first connections): null without warm-up. */
  coldCpuMsPerDoc: number | null;
  warmupDocs: number;
  /** The CPU of the forced collections of the heap samples, already subtracted. */
  sampleGcMs: number;
  /** Live heap (after a full GC) idle, and at the sample with the most documents in flight. */
  liveHeapIdleMb: number | null;
  liveHeapPeakMb: number | null;
  liveHeapInFlight: number | null;
  /** (live heap at that sample - live heap idle) / documents in flight then. */
  liveHeapKbPerInFlight: number | null;
  /** New TCP connections the connectors opened to the API during the run. */
  apiConnections: number | null;
  /** Records the connectors wrote per settled document: to the state topic, and results + dead letters. */
  stateRecordsPerDoc: number | null;
  outputRecordsPerDoc: number | null;
  /** Mean duration of each stage in the first connector (its docstream_stage_duration_seconds). */
  stages: Record<string, { count: number; meanMs: number }>;
  /** exactly-once: transactions the connectors committed and their records (first connector). */
  transactions?: { count: number; records: number; meanMs: number } | null;
}

/** One delivery mode's runs of `--delivery both`. */
export interface DeliveryRuns {
  cpuMsPerDoc: Array<number | null>;
  throughputDocsPerS: number[];
  stateRecordsPerDoc: Array<number | null>;
  outputRecordsPerDoc: Array<number | null>;
  latencyP50Ms: number[];
  latencyP99Ms: number[];
}

export interface DeliveryComparison {
  atLeastOnce: DeliveryRuns;
  exactlyOnce: DeliveryRuns & {
    transactions: Array<{ count: number; records: number; meanMs: number } | null>;
  };
  /** Medians: exactly-once CPU per document / at-least-once; throughput exactly-once / at-least-once. */
  cpuRatio: number | null;
  throughputRatio: number | null;
  /**
   * The same ratios within each repeat (its two runs back to back), and their medians: on a shared
   * machine whose load drifts between repeats these compare like with like.
   */
  pairs: Array<{ cpuRatio: number | null; throughputRatio: number | null }>;
  pairCpuRatio: number | null;
  pairThroughputRatio: number | null;
}

/** Records in a topic (no transactions here, so offsets count records). */
async function recordCount(kafka: KafkaClient, topics: string[]): Promise<number | null> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    let total = 0;
    for (const topic of topics) {
      for (const p of await admin.topicOffsets(topic)) total += Number(p.high) - Number(p.low);
    }
    return total;
  } catch {
    return null;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export type ScaleOutResult = ScaleOutMeasure | { instances: number; error: string };

interface ScaleOutMeasure {
  instances: number;
  docs: number;
  completed: number;
  deadLetters: number;
  throughputDocsPerS: number;
  boundDocsPerS: number;
  percentOfBound: number;
  calls: number;
  rateLimited: number;
  percent429: number;
  cpuMsPerDoc: number | null;
  /** Documents per input partition: the group's share is by partitions, so their balance matters. */
  partitionDocs: number[];
  /** Per second from the first record produced (with `--timeline`): what the API and the limiters did. */
  timeline?: TimelineSecond[];
}

/** One second of a run: calls the API counted against its limit, and each instance's limiter. */
export interface TimelineSecond {
  /** Seconds from the first record produced. */
  s: number;
  accepted: number;
  refused: number;
  creates: number;
  /** Documents settled by the end of this second. */
  settled: number;
  /** Each instance's limiter rate and ceiling at the end of this second (calls per second). */
  rates: Array<[number, number]>;
}

/** One main run and its floors, as the repeats summary shows them. */
export interface RepeatMeasure {
  cpuMsPerDoc: number | null;
  /** The first floor's (ThroughputOptions.floors). */
  floorCpuMsPerDoc: number | null;
  ratio: number | null;
  coldCpuMsPerDoc: number | null;
  floorColdCpuMsPerDoc: number | null;
  /** Every floor of the run, the first included. */
  floors: FloorRatio[];
  throughputDocsPerS: number;
  percentOfBound: number;
}

/** A floor's CPU per document and the connector's ratio to it. */
export interface FloorRatio {
  floor: FloorKind;
  cpuMsPerDoc: number;
  ratio: number | null;
  coldCpuMsPerDoc: number | null;
  coldRatio: number | null;
}

const HEAP = 'docstream_nodejs_heap_size_used_bytes';
const IN_FLIGHT = 'docstream_documents_in_flight';

export interface ThroughputResult {
  parameters: Omit<ThroughputOptions, 'deadline' | 'log'>;
  bound: {
    /**
     * rate / (create + one GET per result): the rate limit applies to the API, not to the pre-signed
     * upload URLs (neither the sandbox nor the client counts uploads against it).
     */
    rateLimitDocsPerS: number;
    /** maxInFlight / processing latency. */
    concurrencyDocsPerS: number;
    docsPerS: number;
  };
  docstream: RunMeasure & CpuMeasure & { percentOfBound: number };
  /** The first floor measured (ThroughputOptions.floors) of the detailed run; null without floors. */
  floor: (FloorMeasure & { ratio: number | null; coldRatio: number | null }) | null;
  /** Every floor measured after the detailed run, in the order of ThroughputOptions.floors. */
  floors: Array<FloorMeasure & { ratio: number | null; coldRatio: number | null }>;
  /** Every main run with its floors, in order (one entry without --repeat). */
  repeats: RepeatMeasure[];
  /** `--delivery both`: at-least-once and exactly-once side by side. */
  delivery: DeliveryComparison | null;
  scaleOut: ScaleOutResult[];
  baseline: RunMeasure | null;
  speedup: number | null;
  /** What concurrency allows over the baseline: the bound over the baseline's throughput. */
  expectedSpeedup: number | null;
}

const KINDS: SampleKind[] = ['clean-pdf', 'edited-pdf', 'trusted-pdf', 'backdated-pdf', 'png-image'];
/** The minimum a document costs: create + upload + one GET per awaited result. */
const MIN_CALLS = 2 + RESULT_KINDS.length;
/** Of those, the calls the API's rate limit counts (not the upload). */
const RATE_LIMITED_CALLS = 1 + RESULT_KINDS.length;

async function sandboxFor(
  o: Pick<ThroughputOptions, 'latencyMs' | 'rate' | 'burst'>,
  docs: number,
): Promise<Sandbox> {
  return startSandbox({
    processing: { distribution: 'fixed', meanMs: o.latencyMs },
    rateLimit: { ratePerSecond: o.rate, burst: o.burst },
    maxSubmissions: Math.max(1000, docs * 2),
  });
}

const PROBE = fileURLToPath(new URL('./bench-probe.js', import.meta.url));

interface ProbeSample {
  cpuUs: number;
  gcCpuUs: number;
  heapUsed: number;
  gcAvailable: boolean;
  connections: Record<string, number>;
}

/** Node flags that load scripts/lib/bench-probe.ts into a connector child (it needs `ipc: true`). */
export function probeNodeArgs(): string[] {
  return [
    '--expose-gc',
    '--import',
    pathToFileUrl(PROBE),
    ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
  ];
}

/** The parent side of scripts/lib/bench-probe.ts: requests over the child's IPC channel, by id. */
export class Probe {
  private next = 0;
  constructor(private readonly child: ChildProcess) {}

  sample(gc: boolean, timeoutMs = 10_000): Promise<ProbeSample | null> {
    return this.request<ProbeSample>({ type: 'probe', gc }, timeoutMs);
  }

  /** Starts the child's CPU profiler, or stops it and has it write the profile to `file`. */
  async profile(action: 'start' | 'stop', file?: string): Promise<boolean> {
    const answer = await this.request<{ ok: boolean }>({ type: 'profile', action, file }, 30_000);
    return answer?.ok === true;
  }

  private request<T>(
    message: { type: string } & Record<string, unknown>,
    timeoutMs: number,
  ): Promise<T | null> {
    const id = ++this.next;
    return new Promise((resolve) => {
      const onMessage = (m: { type?: string; id?: number }) => {
        if (m.type !== message.type || m.id !== id) return;
        done(m as T);
      };
      const timer = setTimeout(() => done(null), timeoutMs);
      const done = (value: T | null) => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        resolve(value);
      };
      this.child.on('message', onMessage);
      try {
        this.child.send({ ...message, id });
      } catch {
        done(null);
      }
    });
  }
}

/** The parameters one docstream run differs in: the main run and each scale-out run. */
interface RunShape {
  label: string;
  docs: number;
  rate: number;
  burst: number;
  partitions: number;
  clientRate: number;
  instances: number;
  warmupDocs: number;
  delivery?: Delivery;
  timeline?: boolean;
}

function arrivals(prefix: string, n: number, files: string[]): Arrival[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `${prefix}-${i}`;
    return { event_id: eventId, value: arrivalJson(eventId, files[i % files.length] as string) };
  });
}

function measure(
  ids: string[],
  sentAt: Map<string, number>,
  collector: OutputCollector,
  calls: ApiCalls,
  window: { start: number; end: number },
): Omit<RunMeasure, 'peakRssMb' | 'idleRssMb'> {
  const latencies: number[] = [];
  let completed = 0;
  let deadLetters = 0;
  for (const id of ids) {
    const o = collector.byEvent.get(id);
    if (o?.deadLetters.length) deadLetters += 1;
    if (collector.complete(id)) {
      completed += 1;
      latencies.push(o!.lastResultAt - (sentAt.get(id) as number));
    }
  }
  const durationS = Math.max(0.001, (window.end - window.start) / 1000);
  const callsPerDoc = calls.total / Math.max(1, completed + deadLetters);
  return {
    docs: ids.length,
    completed,
    deadLetters,
    durationS: round(durationS, 2),
    throughputDocsPerS: round(completed / durationS, 2),
    latencyP50Ms: Math.round(percentile(latencies, 50)),
    latencyP99Ms: Math.round(percentile(latencies, 99)),
    calls,
    callsPerDoc: round(callsPerDoc, 2),
    minCallsPerDoc: MIN_CALLS,
    callsVsMinimum: round(callsPerDoc / MIN_CALLS, 3),
    rateLimited: calls.rateLimited,
  };
}

/**
 * Runs `shape.warmupDocs` documents through the started connectors and waits until each settled,
 * so that the measured documents meet compiled code and an open connection pool. Null without
 * warm-up.
 */
async function warmUp(
  shape: RunShape,
  run: {
    id: string;
    o: ThroughputOptions;
    producer: KafkaProducer;
    collector: OutputCollector;
    topics: ReturnType<typeof prefixedTopics>;
    files: string[];
  },
): Promise<{ settled: number } | null> {
  if (shape.warmupDocs <= 0) return null;
  const { o, collector } = run;
  o.log(`${shape.label}: warming up with ${shape.warmupDocs} documents (not measured)`);
  const batch = arrivals(`${run.id}-warm`, shape.warmupDocs, run.files);
  const ids = batch.map((a) => a.event_id);
  await produceArrivals(run.producer, run.topics.arrived, batch);
  const ok = await waitUntil(() => ids.every((e) => collector.settled(e)), o.deadline - Date.now());
  if (!ok) throw new Error(`${shape.label}: the warm-up did not finish before the time limit`);
  return { settled: ids.length };
}

/** The calls made since `before` was read (all of them without it). */
function callsSince(now: ApiCalls, before: ApiCalls | null): ApiCalls {
  if (before === null) return now;
  const out = { ...now };
  for (const key of Object.keys(out) as Array<keyof ApiCalls>) out[key] = now[key] - before[key];
  return out;
}

async function runDocstream(
  o: ThroughputOptions,
  shape: RunShape,
  kafka: KafkaClient,
  dir: string,
  files: string[],
): Promise<RunMeasure & CpuMeasure & { timeline?: TimelineSecond[] }> {
  const id = uniqueName('bench');
  const topics = prefixedTopics(id, shape.partitions);
  const sandbox = await sandboxFor(
    { latencyMs: o.latencyMs, rate: shape.rate, burst: shape.burst },
    shape.docs + shape.warmupDocs,
  );
  const apiPort = new URL(sandbox.baseUrl).port;
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  const connectors: ConnectorProcess[] = [];
  const nodeArgs = probeNodeArgs();
  try {
    // The shared broker sometimes refuses a creation right after the previous run's topics were
    // deleted ("does not host this topic-partition"); a few seconds later it accepts it.
    for (let attempt = 1; ; attempt++) {
      try {
        await ensureInputTopics(kafka, topics);
        break;
      } catch (err) {
        if (attempt >= 4) throw err;
        o.log(
          `${shape.label}: creating topics failed (${err instanceof Error ? err.message : String(err)}), again in 3 s`,
        );
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
    for (let i = 0; i < shape.instances; i++) {
      const httpPort = await freePort();
      const config = writeConnectorConfig(dir, {
        topics,
        groupId: `${id}-group`,
        apiBaseUrl: sandbox.baseUrl,
        ratePerSecond: shape.clientRate,
        maxInFlight: o.maxInFlight,
        fileRoots: [dir],
        httpPort,
        connector: {
          ...(o.groupShareMs !== null ? { groupShareIntervalMs: o.groupShareMs } : {}),
          ...(shape.delivery ? { delivery: shape.delivery } : {}),
        },
      });
      connectors.push(new ConnectorProcess(config, httpPort, { nodeArgs, ipc: true }));
    }
    // Every member must hold a partition before the clock starts, or the first rebalance is measured.
    await Promise.all(connectors.map((c) => c.ready()));
    await collector.start();
    await producer.connect();
    o.log(
      `${shape.label}: ${shape.instances} connector(s) ready (pid ${connectors.map((c) => c.pid).join(', ')})`,
    );
    const probes = connectors.map((c) => new Probe(c.child));
    const idleSamples = await Promise.all(probes.map((p) => p.sample(true)));
    const idleRss = connectors[0]!.memoryKb('VmRSS');
    const idleHeap = (await connectors[0]!.gauges([HEAP]))[HEAP] ?? null;
    const warm = await warmUp(shape, { id, o, producer, collector, topics, files });
    const startSamples = warm === null ? idleSamples : await Promise.all(probes.map((p) => p.sample(false)));
    // The profile covers the measured documents only (not start-up, not the warm-up).
    if (o.cpuProfDir) await Promise.all(probes.map((p) => p.profile('start')));
    const callsBefore = warm === null ? null : apiCalls(sandbox.stats());
    let peakHeap = 0;
    let peakInFlight = 0;
    // Live-heap samples: a full GC in the child at a new in-flight high, at most every 2 s and 5 in all.
    let gcCpuUs = 0;
    let live: { heap: number; inFlight: number } | null = null;
    let gcSamples = 0;
    let lastGcAt = 0;
    let sampling = false;
    const sampler = setInterval(() => {
      if (sampling) return;
      sampling = true;
      void (async () => {
        const gauges = await connectors[0]!.gauges([HEAP, IN_FLIGHT]);
        const inFlight = gauges[IN_FLIGHT] ?? 0;
        peakHeap = Math.max(peakHeap, gauges[HEAP] ?? 0);
        peakInFlight = Math.max(peakInFlight, inFlight);
        if (inFlight > (live?.inFlight ?? 0) && gcSamples < 5 && Date.now() - lastGcAt > 2000) {
          gcSamples += 1;
          lastGcAt = Date.now();
          const sample = await probes[0]!.sample(true);
          if (sample) {
            gcCpuUs += sample.gcCpuUs;
            live = { heap: sample.heapUsed, inFlight };
          }
        }
      })().finally(() => (sampling = false));
    }, 1000);
    o.log(`${shape.label}: producing ${shape.docs} documents (measured)`);
    const batch = arrivals(id, shape.docs, files);
    const partitionDocs = new Array<number>(shape.partitions).fill(0);
    for (const a of batch) partitionDocs[partitionOfKey(a.event_id, shape.partitions)]! += 1;
    const ids = batch.map((a) => a.event_id);
    const timeline = shape.timeline
      ? new Timeline(sandbox, connectors, () => ids.filter((e) => collector.settled(e)).length)
      : null;
    timeline?.start();
    const sentAt = await produceArrivals(producer, topics.arrived, batch);
    const start = Math.min(...sentAt.values());
    // On a terminal a progress line replaces the periodic log lines; in logs and CI, the log lines.
    const progress = new Progress({ label: shape.label, total: ids.length, unit: 'docs' });
    const ok = await waitUntil(
      () => {
        const settled = ids.filter((e) => collector.settled(e)).length;
        progress.update(settled);
        return settled === ids.length;
      },
      o.deadline - Date.now(),
      () => {
        if (progress.enabled) return;
        const done = ids.filter((e) => collector.settled(e)).length;
        o.log(
          `${shape.label}: ${done}/${ids.length} done, RSS ${Math.round((connectors[0]?.memoryKb('VmRSS') ?? 0) / 1024)} MB`,
        );
      },
    );
    clearInterval(sampler);
    const seconds = timeline ? await timeline.stop(start) : undefined;
    if (timeline) {
      o.log(`${shape.label}: requests ${JSON.stringify(sandbox.stats().requests)}`);
      const listing = (await (await fetch(`${sandbox.baseUrl}/_sandbox/submissions`)).json()) as {
        items: Array<{ created: string; ready_at: Record<string, string | null> }>;
      };
      const created = listing.items.map((i) => Date.parse(i.created));
      const ready = listing.items.flatMap((i) =>
        Object.values(i.ready_at).map((r) => (r ? Date.parse(r) : 0)),
      );
      const lastResult = Math.max(...ids.map((e) => collector.byEvent.get(e)?.lastResultAt ?? 0));
      o.log(
        `${shape.label}: first create ${Math.min(...created) - start} ms after the first record produced, ` +
          `last create ${Math.max(...created) - start} ms, last result ready ${Math.max(...ready) - start} ms, ` +
          `last result event ${lastResult - start} ms`,
      );
    }
    while (sampling) await new Promise((resolve) => setTimeout(resolve, 50));
    progress.finish();
    const endSamples = await Promise.all(probes.map((p) => p.sample(false)));
    if (o.cpuProfDir) {
      const dir = o.cpuProfDir;
      fs.mkdirSync(dir, { recursive: true });
      const profiled = await Promise.all(
        probes.map((p, i) => p.profile('stop', path.join(dir, `${id}-connector-${i + 1}.cpuprofile`))),
      );
      if (profiled.includes(false)) o.log(`${shape.label}: a connector's CPU profile could not be taken`);
    }
    const stages = await connectors[0]!.stageMeans();
    const transactions = shape.delivery === 'exactly-once' ? await connectors[0]!.transactions() : null;
    if (!ok) o.log(`${shape.label}: time limit reached before every document finished`);
    const peak = connectors[0]!.memoryKb('VmHWM');
    const end = Math.max(...ids.map((e) => collector.byEvent.get(e)?.lastResultAt ?? 0), start + 1);
    const calls = callsSince(apiCalls(sandbox.stats()), callsBefore);
    const measured = measure(ids, sentAt, collector, calls, { start, end });
    let cpuUs: number | null = 0;
    let coldCpuUs: number | null = 0;
    let connections: number | null = 0;
    for (let i = 0; i < connectors.length; i++) {
      const idle = idleSamples[i];
      const a = startSamples[i];
      const b = endSamples[i];
      if (!idle || !a || !b || cpuUs === null || coldCpuUs === null || connections === null) {
        cpuUs = coldCpuUs = connections = null;
        continue;
      }
      cpuUs += b.cpuUs - a.cpuUs;
      coldCpuUs += a.cpuUs - idle.cpuUs;
      // Over the whole run, warm-up included: the pool is opened there.
      connections += (b.connections[apiPort] ?? 0) - (idle.connections[apiPort] ?? 0);
    }
    if (cpuUs !== null) cpuUs -= gcCpuUs;
    const settled = measured.completed + measured.deadLetters;
    // The topics hold the warm-up documents' records too.
    const written = settled + (warm?.settled ?? 0);
    const stateRecords = await recordCount(kafka, [topics.state]);
    const outputRecords = await recordCount(kafka, [
      topics.fraud,
      topics.quality,
      topics.classification,
      topics.dlq,
    ]);
    const idleLive = idleSamples[0]?.gcAvailable ? idleSamples[0].heapUsed : null;
    const peakLive = live as { heap: number; inFlight: number } | null;
    return {
      ...measured,
      peakRssMb: peak === null ? null : round(peak / 1024, 1),
      idleRssMb: idleRss === null ? null : round(idleRss / 1024, 1),
      idleHeapMb: idleHeap === null ? null : round(idleHeap / 2 ** 20, 1),
      peakHeapMb: peakHeap > 0 ? round(peakHeap / 2 ** 20, 1) : null,
      peakInFlight: peakInFlight > 0 ? peakInFlight : null,
      heapKbPerInFlight:
        idleHeap !== null && peakHeap > 0 && peakInFlight > 0
          ? round((peakHeap - idleHeap) / 1024 / peakInFlight, 1)
          : null,
      cpuMsPerDoc: cpuUs === null || settled === 0 ? null : round(cpuUs / 1000 / settled, 3),
      coldCpuMsPerDoc:
        warm === null || coldCpuUs === null || warm.settled === 0
          ? null
          : round(coldCpuUs / 1000 / warm.settled, 3),
      warmupDocs: shape.warmupDocs,
      sampleGcMs: round(gcCpuUs / 1000, 1),
      partitionDocs,
      liveHeapIdleMb: idleLive === null ? null : round(idleLive / 2 ** 20, 1),
      liveHeapPeakMb: peakLive ? round(peakLive.heap / 2 ** 20, 1) : null,
      liveHeapInFlight: peakLive ? peakLive.inFlight : null,
      liveHeapKbPerInFlight:
        idleLive !== null && peakLive && peakLive.inFlight > 0
          ? round((peakLive.heap - idleLive) / 1024 / peakLive.inFlight, 1)
          : null,
      apiConnections: connections,
      stateRecordsPerDoc: stateRecords === null || written === 0 ? null : round(stateRecords / written, 2),
      outputRecordsPerDoc: outputRecords === null || written === 0 ? null : round(outputRecords / written, 2),
      stages,
      transactions,
      ...(seconds ? { timeline: seconds } : {}),
    };
  } finally {
    await Promise.all(
      connectors.map(async (connector) => {
        const code = await connector.stop();
        if (code !== 0) o.log(`${shape.label}: connector exited with ${code}:\n${connector.logTail}`);
      }),
    );
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
  }
}

const LIMITER_RATE = 'docstream_api_limiter_rate';
const LIMITER_CEILING = 'docstream_api_limiter_ceiling';

/**
 * Samples every 250 ms the sandbox's rate-limited calls and each connector's limiter (its /metrics),
 * bounded by the run: `stop` ends it and folds the samples into seconds from `start`.
 */
class Timeline {
  private readonly samples: Array<{
    t: number;
    calls: number;
    refused: number;
    creates: number;
    settled: number;
    rates: Array<[number, number]>;
  }> = [];
  private timer: NodeJS.Timeout | null = null;
  private busy: Promise<void> | null = null;

  constructor(
    private readonly sandbox: Pick<Sandbox, 'stats'>,
    private readonly connectors: ConnectorProcess[],
    private readonly settled: () => number,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = this.sample().finally(() => (this.busy = null));
    }, 250);
  }

  private async sample(): Promise<void> {
    const t = Date.now();
    const c = apiCalls(this.sandbox.stats());
    const gauges = await Promise.all(this.connectors.map((k) => k.gauges([LIMITER_RATE, LIMITER_CEILING])));
    this.samples.push({
      t,
      calls: c.total - c.uploads,
      refused: c.rateLimited,
      creates: c.creates,
      settled: this.settled(),
      rates: gauges.map((g) => [round(g[LIMITER_RATE] ?? 0, 1), round(g[LIMITER_CEILING] ?? 0, 1)]),
    });
  }

  async stop(start: number): Promise<TimelineSecond[]> {
    if (this.timer) clearInterval(this.timer);
    await this.busy;
    await this.sample();
    const out: TimelineSecond[] = [];
    const first = this.samples[0];
    if (!first) return out;
    let prev = first;
    for (let s = 1; ; s++) {
      const at = start + s * 1000;
      const cur = this.samples.find((x) => x.t >= at) ?? this.samples[this.samples.length - 1]!;
      if (cur === prev) break;
      out.push({
        s,
        accepted: cur.calls - cur.refused - (prev.calls - prev.refused),
        refused: cur.refused - prev.refused,
        creates: cur.creates - prev.creates,
        settled: cur.settled,
        rates: cur.rates,
      });
      prev = cur;
    }
    return out;
  }
}

function pathToFileUrl(file: string): string {
  return new URL(`file://${file}`).href;
}

async function runNaive(o: ThroughputOptions, kafka: KafkaClient, files: string[]): Promise<RunMeasure> {
  const id = uniqueName('baseline');
  const topics = prefixedTopics(id, o.partitions);
  const sandbox = await sandboxFor(o, o.baselineDocs);
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  try {
    await ensureInputTopics(kafka, topics);
    await producer.connect();
    const batch = arrivals(id, o.baselineDocs, files);
    const sentAt = await produceArrivals(producer, topics.arrived, batch);
    o.log(`baseline: ${o.baselineDocs} documents, one at a time`);
    const progress = new Progress({ label: 'baseline', total: o.baselineDocs, unit: 'docs' });
    const run = await runBaseline({
      onProcessed: (n) => progress.update(n),
      kafka,
      topics,
      apiBaseUrl: sandbox.baseUrl,
      ratePerSecond: o.clientRate,
      pollIntervalMs: o.baselinePollMs,
      maxDocs: o.baselineDocs,
      deadline: o.deadline,
    });
    progress.finish();
    await collector.start();
    const ids = batch.map((a) => a.event_id).filter((_, i) => i < run.processed);
    await waitUntil(() => ids.every((e) => collector.complete(e)), 30_000);
    // The baseline's clock starts at its first record: its consumer joins the group after the
    // records were produced, and that wait is not what is compared.
    const shifted = new Map([...sentAt].map(([k, v]) => [k, Math.max(v, run.startedAt)]));
    return {
      ...measure(ids, shifted, collector, apiCalls(sandbox.stats()), {
        start: run.startedAt,
        end: run.endedAt,
      }),
      peakRssMb: null,
      idleRssMb: null,
    };
  } finally {
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
  }
}

function ratioOf(a: number | null, b: number | null | undefined): number | null {
  return a !== null && b ? round(a / b, 2) : null;
}

function floorRatio(d: RunMeasure & CpuMeasure, f: FloorMeasure): FloorMeasure & FloorRatio {
  return {
    ...f,
    ratio: ratioOf(d.cpuMsPerDoc, f.cpuMsPerDoc),
    coldRatio: ratioOf(d.coldCpuMsPerDoc, f.coldCpuMsPerDoc),
  };
}

function repeatOf(d: RunMeasure & CpuMeasure, floors: FloorMeasure[], bound: number): RepeatMeasure {
  const ratios = floors.map((f) => floorRatio(d, f));
  const first = ratios[0];
  return {
    cpuMsPerDoc: d.cpuMsPerDoc,
    floorCpuMsPerDoc: first?.cpuMsPerDoc ?? null,
    ratio: first?.ratio ?? null,
    coldCpuMsPerDoc: d.coldCpuMsPerDoc,
    floorColdCpuMsPerDoc: first?.coldCpuMsPerDoc ?? null,
    floors: ratios.map(({ floor, cpuMsPerDoc, ratio, coldCpuMsPerDoc, coldRatio }) => ({
      floor,
      cpuMsPerDoc,
      ratio,
      coldCpuMsPerDoc,
      coldRatio,
    })),
    throughputDocsPerS: d.throughputDocsPerS,
    percentOfBound: round((100 * d.throughputDocsPerS) / bound, 1),
  };
}

function boundOf(rate: number, maxInFlight: number, latencyMs: number): number {
  return Math.min(rate / RATE_LIMITED_CALLS, maxInFlight / (Math.max(1, latencyMs) / 1000));
}

export async function runThroughput(o: ThroughputOptions): Promise<ThroughputResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  try {
    const files = (await writeCorpus(dir, KINDS)).map((s) => s.file);
    const rateLimitDocsPerS = o.rate / RATE_LIMITED_CALLS;
    const concurrencyDocsPerS = (o.maxInFlight * o.instances) / (o.latencyMs / 1000);
    const bound = Math.min(rateLimitDocsPerS, concurrencyDocsPerS);
    // A missing Go toolchain or Debian package fails here, not after the first main run.
    prepareFloors(o.floors, o.log);
    const runs: Array<{ docstream: RunMeasure & CpuMeasure; floors: FloorMeasure[] }> = [];
    const eosRuns: Array<RunMeasure & CpuMeasure> = [];
    for (let r = 1; r <= o.repeat; r++) {
      const label = o.repeat > 1 ? `docstream ${r}/${o.repeat}` : 'docstream';
      const main = (delivery: Delivery | undefined, suffix = '') =>
        runDocstream(
          o,
          {
            label: label + suffix,
            docs: o.docs,
            rate: o.rate,
            burst: o.burst,
            partitions: o.partitions,
            clientRate: o.clientRate,
            instances: o.instances,
            warmupDocs: o.warmupDocs,
            ...(delivery ? { delivery } : {}),
          },
          kafka,
          dir,
          files,
        );
      let docstream: RunMeasure & CpuMeasure;
      if (o.delivery === 'both') {
        // Alternating which mode runs first, so that a drift of the shared machine's load does not
        // always favour the same one.
        if (r % 2 === 1) {
          docstream = await main('at-least-once', ' at-least-once');
          eosRuns.push(await main('exactly-once', ' exactly-once'));
        } else {
          eosRuns.push(await main('exactly-once', ' exactly-once'));
          docstream = await main('at-least-once', ' at-least-once');
        }
      } else docstream = await main(o.delivery);
      const floors: FloorMeasure[] = [];
      for (const kind of o.floors) {
        floors.push(
          await runFloor(
            {
              kind,
              docs: o.docs,
              warmupDocs: o.warmupDocs,
              latencyMs: o.latencyMs,
              partitions: o.partitions,
              maxInFlight: o.maxInFlight,
              deadline: o.deadline,
              arrivals: (prefix, n) => arrivals(prefix, n, files),
              log: o.log,
              cpuProfDir: o.cpuProfDir,
            },
            kafka,
            dir,
          ),
        );
      }
      runs.push({ docstream, floors });
    }
    const repeats = runs.map(({ docstream: d, floors }) => repeatOf(d, floors, bound));
    // The run detailed in the table: the one with the median ratio (else the median CPU per document).
    const order = runs
      .map((_, i) => i)
      .sort(
        (a, b) =>
          (repeats[a]!.ratio ?? repeats[a]!.cpuMsPerDoc ?? 0) -
          (repeats[b]!.ratio ?? repeats[b]!.cpuMsPerDoc ?? 0),
      );
    const { docstream, floors: floorRuns } = runs[order[Math.floor((order.length - 1) / 2)]!]!;
    const floors = floorRuns.map((f) => floorRatio(docstream, f));
    const scaleOut: ScaleOutResult[] = [];
    for (const instances of o.scaleOut) {
      const burst = Math.max(1, Math.ceil(o.scaleRate / 5));
      const bound = boundOf(o.scaleRate, o.maxInFlight * instances, o.latencyMs);
      // One failed run (the shared Kafka refusing a topic creation, say) must not lose the others.
      let run: RunMeasure & CpuMeasure & { timeline?: TimelineSecond[] };
      try {
        run = await runDocstream(
          { ...o, cpuProfDir: null },
          {
            label: `scale-out x${instances}`,
            docs: o.scaleDocs,
            rate: o.scaleRate,
            burst,
            partitions: o.scalePartitions,
            clientRate: o.scaleRate,
            instances,
            // Scale-out measures pacing against the shared limit, which warm code does not change.
            warmupDocs: 0,
            timeline: o.timeline === true,
          },
          kafka,
          dir,
          files,
        );
      } catch (err) {
        o.log(`scale-out x${instances} failed: ${err instanceof Error ? err.message : String(err)}`);
        scaleOut.push({ instances, error: err instanceof Error ? err.message : String(err) });
        continue;
      }
      scaleOut.push({
        instances,
        docs: run.docs,
        completed: run.completed,
        deadLetters: run.deadLetters,
        throughputDocsPerS: run.throughputDocsPerS,
        boundDocsPerS: round(bound, 2),
        percentOfBound: round((100 * run.throughputDocsPerS) / bound, 1),
        calls: run.calls.total,
        rateLimited: run.calls.rateLimited,
        percent429: round((100 * run.calls.rateLimited) / Math.max(1, run.calls.total), 2),
        cpuMsPerDoc: run.cpuMsPerDoc,
        partitionDocs: run.partitionDocs ?? [],
        ...(run.timeline ? { timeline: run.timeline } : {}),
      });
    }
    const baseline = o.baselineDocs > 0 ? await runNaive(o, kafka, files) : null;
    const delivery =
      o.delivery === 'both'
        ? compareDeliveries(
            runs.map((r) => r.docstream),
            eosRuns,
          )
        : null;
    const { deadline: _deadline, log: _log, ...parameters } = o;
    return {
      parameters,
      bound: {
        rateLimitDocsPerS: round(rateLimitDocsPerS, 2),
        concurrencyDocsPerS: round(concurrencyDocsPerS, 2),
        docsPerS: round(bound, 2),
      },
      docstream: {
        ...docstream,
        percentOfBound: round((100 * docstream.throughputDocsPerS) / bound, 1),
      },
      floor: floors[0] ?? null,
      floors,
      repeats,
      delivery,
      scaleOut,
      baseline,
      speedup:
        baseline && baseline.throughputDocsPerS > 0
          ? round(docstream.throughputDocsPerS / baseline.throughputDocsPerS, 1)
          : null,
      expectedSpeedup:
        baseline && baseline.throughputDocsPerS > 0 ? round(bound / baseline.throughputDocsPerS, 1) : null,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function deliveryRuns(runs: Array<RunMeasure & CpuMeasure>): DeliveryRuns {
  return {
    cpuMsPerDoc: runs.map((r) => r.cpuMsPerDoc),
    throughputDocsPerS: runs.map((r) => r.throughputDocsPerS),
    stateRecordsPerDoc: runs.map((r) => r.stateRecordsPerDoc),
    outputRecordsPerDoc: runs.map((r) => r.outputRecordsPerDoc),
    latencyP50Ms: runs.map((r) => r.latencyP50Ms),
    latencyP99Ms: runs.map((r) => r.latencyP99Ms),
  };
}

function medianOf(values: Array<number | null>): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : percentile(known, 50);
}

function compareDeliveries(
  alo: Array<RunMeasure & CpuMeasure>,
  eos: Array<RunMeasure & CpuMeasure>,
): DeliveryComparison {
  const a = deliveryRuns(alo);
  const e = deliveryRuns(eos);
  const pairs = alo.map((run, i) => ({
    cpuRatio: ratioOf(eos[i]?.cpuMsPerDoc ?? null, run.cpuMsPerDoc),
    throughputRatio: ratioOf(eos[i]?.throughputDocsPerS ?? null, run.throughputDocsPerS),
  }));
  return {
    atLeastOnce: a,
    exactlyOnce: { ...e, transactions: eos.map((r) => r.transactions ?? null) },
    cpuRatio: ratioOf(medianOf(e.cpuMsPerDoc), medianOf(a.cpuMsPerDoc)),
    throughputRatio: ratioOf(medianOf(e.throughputDocsPerS), medianOf(a.throughputDocsPerS)),
    pairs,
    pairCpuRatio: medianOf(pairs.map((p) => p.cpuRatio)),
    pairThroughputRatio: medianOf(pairs.map((p) => p.throughputRatio)),
  };
}
