/**
 * Throughput mode of the benchmark: a backlog of documents through docstream (a `docstream run`
 * child process) and then through the naive baseline, each against its own fresh sandbox with the
 * same latency and rate limit, on the real Kafka and registry.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus, type SampleKind } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { Progress } from '../../src/util/progress.js';
import { runBaseline } from '../baseline.js';
import { apiCalls, type ApiCalls } from './api-calls.js';
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
  docstream: RunMeasure & { percentOfBound: number };
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

async function sandboxFor(o: ThroughputOptions, docs: number): Promise<Sandbox> {
  return startSandbox({
    processing: { distribution: 'fixed', meanMs: o.latencyMs },
    rateLimit: { ratePerSecond: o.rate, burst: o.burst },
    maxSubmissions: Math.max(1000, docs * 2),
  });
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

export function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

async function runDocstream(
  o: ThroughputOptions,
  kafka: KafkaClient,
  dir: string,
  files: string[],
): Promise<RunMeasure> {
  const id = uniqueName('bench');
  const topics = prefixedTopics(id, o.partitions);
  const sandbox = await sandboxFor(o, o.docs);
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  let connector: ConnectorProcess | null = null;
  try {
    await ensureInputTopics(kafka, topics);
    const httpPort = await freePort();
    const config = writeConnectorConfig(dir, {
      topics,
      groupId: `${id}-group`,
      apiBaseUrl: sandbox.baseUrl,
      ratePerSecond: o.clientRate,
      maxInFlight: o.maxInFlight,
      fileRoots: [dir],
      httpPort,
    });
    connector = new ConnectorProcess(config, httpPort);
    await connector.ready();
    await collector.start();
    await producer.connect();
    const idleRss = connector.memoryKb('VmRSS');
    const idleHeap = (await connector.gauges([HEAP]))[HEAP] ?? null;
    let peakHeap = 0;
    let peakInFlight = 0;
    const sampling = setInterval(() => {
      void connector?.gauges([HEAP, IN_FLIGHT]).then((g) => {
        peakHeap = Math.max(peakHeap, g[HEAP] ?? 0);
        peakInFlight = Math.max(peakInFlight, g[IN_FLIGHT] ?? 0);
      });
    }, 1000);
    o.log(`docstream: connector ready (pid ${connector.pid}), producing ${o.docs} documents`);
    const batch = arrivals(id, o.docs, files);
    const sentAt = await produceArrivals(producer, topics.arrived, batch);
    const ids = batch.map((a) => a.event_id);
    const start = Math.min(...sentAt.values());
    // On a terminal a progress line replaces the periodic log lines; in logs and CI, the log lines.
    const progress = new Progress({ label: 'docstream', total: ids.length, unit: 'docs' });
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
          `docstream: ${done}/${ids.length} done, RSS ${Math.round((connector?.memoryKb('VmRSS') ?? 0) / 1024)} MB`,
        );
      },
    );
    clearInterval(sampling);
    progress.finish();
    if (!ok) o.log('docstream: time limit reached before every document finished');
    const peak = connector.memoryKb('VmHWM');
    const end = Math.max(...ids.map((e) => collector.byEvent.get(e)?.lastResultAt ?? 0), start + 1);
    const calls = apiCalls(sandbox.stats());
    return {
      ...measure(ids, sentAt, collector, calls, { start, end }),
      peakRssMb: peak === null ? null : round(peak / 1024, 1),
      idleRssMb: idleRss === null ? null : round(idleRss / 1024, 1),
      idleHeapMb: idleHeap === null ? null : round(idleHeap / 2 ** 20, 1),
      peakHeapMb: peakHeap > 0 ? round(peakHeap / 2 ** 20, 1) : null,
      peakInFlight: peakInFlight > 0 ? peakInFlight : null,
      heapKbPerInFlight:
        idleHeap !== null && peakHeap > 0 && peakInFlight > 0
          ? round((peakHeap - idleHeap) / 1024 / peakInFlight, 1)
          : null,
    };
  } finally {
    if (connector) {
      const code = await connector.stop();
      if (code !== 0) o.log(`docstream: connector exited with ${code}:\n${connector.logTail}`);
    }
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
  }
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

export async function runThroughput(o: ThroughputOptions): Promise<ThroughputResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  try {
    const files = (await writeCorpus(dir, KINDS)).map((s) => s.file);
    const docstream = await runDocstream(o, kafka, dir, files);
    const baseline = o.baselineDocs > 0 ? await runNaive(o, kafka, files) : null;
    const rateLimitDocsPerS = o.rate / RATE_LIMITED_CALLS;
    const concurrencyDocsPerS = o.maxInFlight / (o.latencyMs / 1000);
    const bound = Math.min(rateLimitDocsPerS, concurrencyDocsPerS);
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
