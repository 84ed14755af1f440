/**
 * `npm run bench -- --mode quiet`: what docstream costs in quiet hours and what its memory is, on the
 * process tree users run: `node dist/cli/index.js run` started with nothing added (as the `bin`
 * script and a shell start it), CPU and RSS summed over that process and every descendant, as `ps`
 * or a container's limit sees them.
 *
 * 1. Idle: one instance joined to 4 empty input partitions; CPU over `--idle-s` seconds after it is
 *    ready (and a 10 s settle), as % of one core.
 * 2. A trickle: documents (file:// blobs, the sandbox at 200 ms) at `--trickle-rate` a second for
 *    `--trickle-s` seconds to the same instance, after a 10 s unmeasured warm-up at that rate; CPU
 *    from the first measured document produced to the last one settled, per document.
 * 3. The floors (`--floor node|go|rdkafka|platformatic` or a comma list, none by default): each fed the same
 *    trickle (same rate, warm-up, pause and measured duration, the same file blob, a sandbox with
 *    the same processing time), its whole process tree's CPU from the first measured document
 *    produced to its report of the last one finished, per document: what bare kafkajs +
 *    node:http, the same on librdkafka or @platformatic/kafka, or Go, cost at that rate. Between its warm-up and the
 *    pause each floor also sits `--idle-s` seconds with nothing arriving: its idle CPU.
 * 4. Memory: `--held-docs` finished-document state records over 4 partitions of a state topic; two
 *    instances sharing them and one idle instance on empty topics, started together; RSS of each
 *    tree `--held-wait-s` seconds after all are ready; (loaded − idle) per finished document held.
 *    `--held-logs` keeps, per instance, its log at info level (restores, rebalances, the heap after
 *    each collection), /proc status and smaps read with the RSS, and /metrics: where a figure's
 *    bytes are, when one run differs from another.
 *
 * Topics have unique names and are deleted at the end; every wait is bounded by the deadline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { FLOOR_NAMES, prepareFloors, runFloor, TRICKLE_PAUSE_MS, type FloorKind } from './bench-floor.js';
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
  round,
  sleep,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  writeFinishedStates,
  type Arrival,
} from './harness.js';
import { sampleTree, type TreeSample } from './process-tree.js';
import { cpuRatio, produceTrickle, trickleCount, trickleMeasure, type TrickleMeasure } from './trickle.js';

const PARTITIONS = 4;
const SETTLE_MS = 10_000;
/** The sandbox's processing time, the connector's and the floors' alike. */
const LATENCY_MS = 200;
/** The connector's and the floors' bound on documents in flight. */
const MAX_IN_FLIGHT = 1000;

export interface QuietParameters {
  idleS: number;
  trickleRate: number;
  trickleS: number;
  heldDocs: number;
  heldWaitS: number;
  /** The floors fed the trickle after the connector (--floor), in that order. */
  floors: FloorKind[];
}

export interface QuietResult {
  parameters: QuietParameters;
  load: { before: number[]; after: number[] };
  idle: { processes: number; cpuPercent: number; rssMb: number };
  trickle: TrickleMeasure & { idleShareMsPerDoc: number };
  /** Each floor fed the same trickle after the connector (--floor), in that order. */
  floors: QuietFloor[];
  memory: {
    idleTreeMb: number;
    loadedTreeMb: number[];
    processes: number;
    rssBytesPerDoc: number;
    /** Where it is, per instance (the two loaded ones, then the idle one), from each one's /metrics. */
    heapUsedMb: number[];
    heapTotalMb: number[];
    externalMb: number[];
  } | null;
}

/** A floor's CPU per document at the trickle, measured as the connector's is. */
export interface QuietFloor extends TrickleMeasure {
  floor: FloorKind;
  /** The floor's own process CPU (its report: first measured record taken to last result acknowledged). */
  ownCpuMsPerDoc: number;
  /** Its whole process tree's CPU in % of a core over --idle-s, idle after its warm-up. */
  idleCpuPercent: number | null;
  httpCalls: number;
  kafkaRequests: number;
  /** The connector's CPU per document over the floor's; null when the floor's is 0. */
  connectorRatio: number | null;
}

interface Common {
  kafka: KafkaClient;
  sandbox: Sandbox;
  dir: string;
  /** The blob every trickled document points at (the demo corpus's clean PDF). */
  file: string;
  nodeArgs: string[];
  log: (line: string) => void;
  deadline: number;
  /** Where the memory phase's instances write their logs (info level) and last /metrics; null: nowhere. */
  logsDir: string | null;
}

async function startInstance(
  c: Common,
  topics: ReturnType<typeof prefixedTopics>,
  groupId: string,
  logFile: string | null = null,
): Promise<ConnectorProcess> {
  const httpPort = await freePort();
  const config = writeConnectorConfig(c.dir, {
    topics,
    groupId,
    apiBaseUrl: c.sandbox.baseUrl,
    ratePerSecond: 100,
    maxInFlight: MAX_IN_FLIGHT,
    fileRoots: [c.dir],
    httpPort,
    // The product's own defaults for everything the harness would otherwise shorten.
    connector: { commitIntervalMs: 5000 },
    kafka: { sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3000 },
    ...(logFile ? { logLevel: 'info' } : {}),
  });
  const out = logFile ? fs.createWriteStream(logFile) : null;
  return new ConnectorProcess(config, httpPort, {
    asUserRuns: true,
    nodeArgs: c.nodeArgs,
    ...(out ? { onLine: (line: string) => out.write(`${line}\n`) } : {}),
  });
}

async function idleAndTrickle(
  c: Common,
  o: { idleS: number; trickleRate: number; trickleS: number },
): Promise<Pick<QuietResult, 'idle' | 'trickle'>> {
  const id = uniqueName('bench-quiet');
  const topics = prefixedTopics(id, PARTITIONS);
  const collector = new OutputCollector(c.kafka, topics);
  const producer = c.kafka.producer();
  let connector: ConnectorProcess | null = null;
  try {
    await ensureInputTopics(c.kafka, topics);
    connector = await startInstance(c, topics, `${id}-group`);
    await connector.ready();
    await collector.start();
    await producer.connect();
    await sleep(SETTLE_MS);
    c.log(`idle: measuring ${o.idleS} s`);
    const idleFrom = sampleTree(connector.pid);
    await sleep(o.idleS * 1000);
    const idleTo = sampleTree(connector.pid);
    const idleCpuPerS = (idleTo.cpuMs - idleFrom.cpuMs) / o.idleS;
    const idle = {
      processes: idleTo.pids.length,
      cpuPercent: round(idleCpuPerS / 10, 2),
      rssMb: round(idleTo.rssKb / 1024, 1),
    };
    c.log(`idle: ${idle.cpuPercent} % of a core, ${idle.processes} process(es), RSS ${idle.rssMb} MB`);

    // One document every 1/rate s, each sent alone (a trickle, not a batch).
    const send = (prefix: string, seconds: number): Promise<string[]> =>
      produceTrickle(
        producer,
        topics.arrived,
        arrivals(c.file, `${id}-${prefix}`, trickleCount(o.trickleRate, seconds)),
        o.trickleRate,
        c.deadline,
      );
    const settledAll = (ids: string[]) =>
      waitUntil(() => ids.every((e) => collector.settled(e)), Math.max(1000, c.deadline - Date.now()));
    c.log(`trickle: warm-up ${SETTLE_MS / 1000} s at ${o.trickleRate}/s`);
    await settledAll(await send('warm', SETTLE_MS / 1000));
    await sleep(TRICKLE_PAUSE_MS);
    c.log(`trickle: measuring ${o.trickleS} s at ${o.trickleRate}/s`);
    const from = sampleTree(connector.pid);
    const t0 = Date.now();
    const ids = await send('m', o.trickleS);
    await settledAll(ids);
    const to = sampleTree(connector.pid);
    const seconds = (Date.now() - t0) / 1000;
    const settled = ids.filter((e) => collector.settled(e)).length;
    const trickle = {
      ...trickleMeasure(from, to, { docs: ids.length, settled, seconds }),
      idleShareMsPerDoc: round((idleCpuPerS * seconds) / Math.max(1, settled), 2),
    };
    c.log(`trickle: ${trickle.cpuMsPerDoc} ms of CPU per document (${settled}/${ids.length} settled)`);
    return { idle, trickle };
  } finally {
    await connector?.stop();
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await deleteTopics(c.kafka, topics).catch(() => undefined);
  }
}

/** `n` arrivals of the trickle, each its own event (query_id = event_id), all on one file blob. */
function arrivals(file: string, prefix: string, n: number): Arrival[] {
  return Array.from({ length: n }, (_, i) => {
    const eventId = `${prefix}-${i}`;
    return { event_id: eventId, value: arrivalJson(eventId, file) };
  });
}

/** Each floor fed the connector's trickle: same rate, warm-up, pause, duration, blob and latency. */
async function floorsAtTrickle(
  c: Common,
  o: { idleS: number; trickleRate: number; trickleS: number; floors: FloorKind[] },
  connectorMsPerDoc: number,
): Promise<QuietFloor[]> {
  const out: QuietFloor[] = [];
  for (const kind of o.floors) {
    const m = await runFloor(
      {
        kind,
        docs: trickleCount(o.trickleRate, o.trickleS),
        warmupDocs: Math.max(1, trickleCount(o.trickleRate, SETTLE_MS / 1000)),
        latencyMs: LATENCY_MS,
        partitions: PARTITIONS,
        maxInFlight: MAX_IN_FLIGHT,
        deadline: c.deadline,
        arrivals: (prefix, n) => arrivals(c.file, prefix, n),
        log: c.log,
        trickleRate: o.trickleRate,
        idleMs: o.idleS * 1000,
      },
      c.kafka,
      c.dir,
    );
    if (!m.trickle) throw new Error(`floor ${kind}: no trickle measure`);
    const f: QuietFloor = {
      floor: kind,
      ...m.trickle,
      ownCpuMsPerDoc: m.cpuMsPerDoc,
      idleCpuPercent: m.idleCpuPercent ?? null,
      httpCalls: m.httpCalls,
      kafkaRequests: m.kafkaRequests,
      connectorRatio: cpuRatio(connectorMsPerDoc, m.trickle.cpuMsPerDoc),
    };
    c.log(`floor ${kind}: ${f.cpuMsPerDoc} ms of CPU per document (${f.settled}/${f.docs} finished)`);
    out.push(f);
  }
  return out;
}

async function memory(
  c: Common,
  o: { heldDocs: number; heldWaitS: number },
): Promise<NonNullable<QuietResult['memory']>> {
  const loadedId = uniqueName('bench-held');
  const idleId = uniqueName('bench-held-idle');
  const loadedTopics = prefixedTopics(loadedId, PARTITIONS);
  const idleTopics = prefixedTopics(idleId, PARTITIONS);
  const admin = c.kafka.admin();
  await admin.connect();
  const instances: ConnectorProcess[] = [];
  try {
    for (const t of [loadedTopics, idleTopics]) {
      await ensureInputTopics(c.kafka, t);
      await ensureStateTopic(admin, t.state, PARTITIONS);
    }
    c.log(`memory: writing ${o.heldDocs} finished documents to the state topic`);
    await writeFinishedStates(c.kafka, {
      stateTopic: loadedTopics.state,
      inputTopic: loadedTopics.arrived,
      partitions: PARTITIONS,
      docs: o.heldDocs,
    });
    const logs = ['loaded-1', 'loaded-2', 'idle'].map((n) =>
      c.logsDir ? path.join(c.logsDir, `${loadedId}-${n}`) : null,
    );
    const logFile = (i: number) => (logs[i] ? `${logs[i]}.log` : null);
    instances.push(await startInstance(c, loadedTopics, `${loadedId}-group`, logFile(0)));
    instances.push(await startInstance(c, loadedTopics, `${loadedId}-group`, logFile(1)));
    instances.push(await startInstance(c, idleTopics, `${idleId}-group`, logFile(2)));
    await Promise.all(instances.map((i) => i.ready(Math.max(1000, c.deadline - Date.now()))));
    c.log(`memory: all ready; measuring RSS in ${o.heldWaitS} s`);
    await sleep(o.heldWaitS * 1000);
    const [a, b, idle] = instances.map((i) => sampleTree(i.pid)) as [TreeSample, TreeSample, TreeSample];
    const perDoc = ((a.rssKb + b.rssKb - 2 * idle.rssKb) * 1024) / o.heldDocs;
    // What the kernel counts in each RSS (anonymous, file-backed, per mapping), read with it: a
    // /metrics request allocates.
    if (c.logsDir)
      instances.forEach((instance, i) => {
        for (const file of ['status', 'smaps'])
          try {
            fs.writeFileSync(`${logs[i]!}.${file}`, fs.readFileSync(`/proc/${instance.pid}/${file}`));
          } catch {
            // Not Linux, or gone: the log and metrics are kept anyway.
          }
      });
    const names = [
      'docstream_nodejs_heap_size_used_bytes',
      'docstream_nodejs_heap_size_total_bytes',
      'docstream_nodejs_external_memory_bytes',
    ];
    const gauges = await Promise.all(instances.map((i) => i.gauges(names)));
    if (c.logsDir) {
      // Every metric as measured (the heap by space among them), beside each instance's log.
      const texts = await Promise.all(instances.map((i) => i.metricsText()));
      texts.forEach((text, i) => fs.writeFileSync(`${logs[i]!}.metrics`, text ?? ''));
      c.log(`memory: logs and metrics of the three instances in ${c.logsDir}/${loadedId}-*`);
    }
    const mb = (name: string) => gauges.map((g) => round((g[name] ?? NaN) / 1048576, 1));
    return {
      idleTreeMb: round(idle.rssKb / 1024, 1),
      loadedTreeMb: [round(a.rssKb / 1024, 1), round(b.rssKb / 1024, 1)],
      processes: idle.pids.length,
      rssBytesPerDoc: round(perDoc, 1),
      heapUsedMb: mb(names[0]!),
      heapTotalMb: mb(names[1]!),
      externalMb: mb(names[2]!),
    };
  } finally {
    await Promise.all(instances.map((i) => i.stop()));
    await admin.disconnect().catch(() => undefined);
    for (const t of [loadedTopics, idleTopics]) await deleteTopics(c.kafka, t).catch(() => undefined);
  }
}

export async function runQuiet(
  o: QuietParameters & {
    nodeArgs: string[];
    /** Keep the memory phase's logs and metrics here (`--held-logs`); null: not kept. */
    logsDir: string | null;
    deadline: number;
    log: (line: string) => void;
  },
): Promise<QuietResult> {
  prepareFloors(o.floors, o.log);
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench-quiet' });
  const sandbox = await startSandbox({ processing: { distribution: 'fixed', meanMs: LATENCY_MS } });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-quiet-'));
  const before = os.loadavg().map((n) => round(n, 2));
  try {
    const file = (await writeCorpus(dir, ['clean-pdf']))[0]!.file;
    const c: Common = {
      kafka,
      sandbox,
      dir,
      file,
      nodeArgs: o.nodeArgs,
      log: o.log,
      deadline: o.deadline,
      logsDir: o.logsDir,
    };
    const { idle, trickle } = await idleAndTrickle(c, o);
    const floors = await floorsAtTrickle(c, o, trickle.cpuMsPerDoc);
    const mem = o.heldDocs > 0 ? await memory(c, o) : null;
    return {
      parameters: {
        idleS: o.idleS,
        trickleRate: o.trickleRate,
        trickleS: o.trickleS,
        heldDocs: o.heldDocs,
        heldWaitS: o.heldWaitS,
        floors: o.floors,
      },
      load: { before, after: os.loadavg().map((n) => round(n, 2)) },
      idle,
      trickle,
      floors,
      memory: mem,
    };
  } finally {
    await sandbox.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function printQuiet(r: QuietResult): void {
  const p = r.parameters;
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(`\nquiet hours (docstream run as users start it; CPU and RSS of its whole process tree)`);
  console.log(`  load average before ${r.load.before.join(' ')}, after ${r.load.after.join(' ')}`);
  console.log(
    `  idle, ${p.idleS} s: ${r.idle.cpuPercent} % of a core (${r.idle.processes} process(es), RSS ${r.idle.rssMb} MB)` +
      ` — target < 1 %: ${verdict(r.idle.cpuPercent < 1)}`,
  );
  console.log(
    `  ${p.trickleRate} documents/s for ${p.trickleS} s: ${r.trickle.cpuMsPerDoc} ms of CPU per document ` +
      `(${r.trickle.settled}/${r.trickle.docs} settled in ${r.trickle.seconds} s; the idle rate's share ` +
      `${r.trickle.idleShareMsPerDoc} ms) — target ≤ 4 ms: ${verdict(r.trickle.cpuMsPerDoc <= 4)}`,
  );
  if (r.floors.length > 0) printFloors(r);
  if (r.memory) {
    const m = r.memory;
    console.log(
      `  ${p.heldDocs} finished documents held by two instances, ${p.heldWaitS} s after ready: ` +
        `RSS ${m.loadedTreeMb.join(' and ')} MB against ${m.idleTreeMb} MB idle (${m.processes} process(es) each) ` +
        `= ${m.rssBytesPerDoc} B per document — target ≤ 100 B: ${verdict(m.rssBytesPerDoc <= 100)}`,
    );
    console.log(
      `    V8 heap used/total and external memory (loaded, loaded, idle): ` +
        m.heapUsedMb.map((u, i) => `${u}/${m.heapTotalMb[i]} MB + ${m.externalMb[i]} MB`).join(', '),
    );
  }
}

/** The floors beside the connector: CPU per document at the same trickle, measured the same way. */
function printFloors(r: QuietResult): void {
  const p = r.parameters;
  console.log(
    `  CPU per document at ${p.trickleRate}/s, whole process tree, first measured document produced to last finished (nothing subtracted):`,
  );
  const widths = [66, 10, 22, 24];
  const line = (cells: string[]) =>
    console.log(('    ' + cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('')).trimEnd());
  line(['', 'ms/doc', 'finished', 'docstream run ÷ floor', 'idle % of a core']);
  line([
    'docstream run',
    String(r.trickle.cpuMsPerDoc),
    `${r.trickle.settled}/${r.trickle.docs} in ${r.trickle.seconds} s`,
    '',
    String(r.idle.cpuPercent),
  ]);
  for (const f of r.floors) {
    line([
      `floor ${f.floor} (${FLOOR_NAMES[f.floor]})`,
      String(f.cpuMsPerDoc),
      `${f.settled}/${f.docs} in ${f.seconds} s`,
      f.connectorRatio === null ? '-' : `${f.connectorRatio}x`,
      f.idleCpuPercent === null ? '-' : String(f.idleCpuPercent),
    ]);
  }
  for (const f of r.floors)
    console.log(
      `    floor ${f.floor}: ${f.cpuMsPerDoc <= 4 ? 'within' : 'OVER'} the 4 ms target; its own process count ` +
        `(first measured record taken to last result acknowledged) ${f.ownCpuMsPerDoc} ms; ` +
        `${round(f.httpCalls / Math.max(1, f.settled), 2)} HTTP calls and ` +
        `${round(f.kafkaRequests / Math.max(1, f.settled), 2)} Kafka produce requests per document`,
    );
}
