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
 * 3. Memory: `--held-docs` finished-document state records over 4 partitions of a state topic; two
 *    instances sharing them and one idle instance on empty topics, started together; RSS of each
 *    tree `--held-wait-s` seconds after all are ready; (loaded − idle) per finished document held.
 *
 * Topics have unique names and are deleted at the end; every wait is bounded by the deadline.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
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
} from './harness.js';

const PARTITIONS = 4;
const SETTLE_MS = 10_000;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

interface TreeSample {
  pids: number[];
  cpuMs: number;
  rssKb: number;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces): [0] is field 3. */
function statFields(pid: number): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The process and all its descendants, as `ps --forest` would show them. */
function treePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = Number(statFields(Number(name))?.[1]);
    if (!Number.isFinite(ppid)) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU (user + system, ms) and RSS (KiB) summed over the tree. */
export function sampleTree(root: number): TreeSample {
  const pids = treePids(root);
  let ticks = 0;
  let rssKb = 0;
  for (const pid of pids) {
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]);
    try {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      rssKb += m ? Number(m[1]) : 0;
    } catch {
      // Gone between the listing and the read.
    }
  }
  return { pids, cpuMs: (ticks * 1000) / CLOCK_TICKS, rssKb };
}

export interface QuietResult {
  parameters: { idleS: number; trickleRate: number; trickleS: number; heldDocs: number; heldWaitS: number };
  load: { before: number[]; after: number[] };
  idle: { processes: number; cpuPercent: number; rssMb: number };
  trickle: { docs: number; settled: number; seconds: number; cpuMsPerDoc: number; idleShareMsPerDoc: number };
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

interface Common {
  kafka: KafkaClient;
  sandbox: Sandbox;
  dir: string;
  nodeArgs: string[];
  log: (line: string) => void;
  deadline: number;
}

async function startInstance(
  c: Common,
  topics: ReturnType<typeof prefixedTopics>,
  groupId: string,
): Promise<ConnectorProcess> {
  const httpPort = await freePort();
  const config = writeConnectorConfig(c.dir, {
    topics,
    groupId,
    apiBaseUrl: c.sandbox.baseUrl,
    ratePerSecond: 100,
    maxInFlight: 1000,
    fileRoots: [c.dir],
    httpPort,
    // The product's own defaults for everything the harness would otherwise shorten.
    connector: { commitIntervalMs: 5000 },
    kafka: { sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3000 },
  });
  return new ConnectorProcess(config, httpPort, { asUserRuns: true, nodeArgs: c.nodeArgs });
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
    const files = (await writeCorpus(c.dir, ['clean-pdf'])).map((s) => s.file);
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
    const send = async (prefix: string, seconds: number): Promise<string[]> => {
      const ids: string[] = [];
      const start = Date.now();
      const count = Math.round(seconds * o.trickleRate);
      for (let i = 0; i < count && Date.now() < c.deadline; i++) {
        const eventId = `${id}-${prefix}-${i}`;
        ids.push(eventId);
        await producer.send(topics.arrived, [
          { key: eventId, value: arrivalJson(eventId, files[0]!), timestamp: String(Date.now()) },
        ]);
        const next = start + ((i + 1) * 1000) / o.trickleRate;
        await sleep(Math.max(0, next - Date.now()));
      }
      return ids;
    };
    const settledAll = (ids: string[]) =>
      waitUntil(() => ids.every((e) => collector.settled(e)), Math.max(1000, c.deadline - Date.now()));
    c.log(`trickle: warm-up ${SETTLE_MS / 1000} s at ${o.trickleRate}/s`);
    await settledAll(await send('warm', SETTLE_MS / 1000));
    await sleep(2000);
    c.log(`trickle: measuring ${o.trickleS} s at ${o.trickleRate}/s`);
    const from = sampleTree(connector.pid);
    const t0 = Date.now();
    const ids = await send('m', o.trickleS);
    await settledAll(ids);
    const to = sampleTree(connector.pid);
    const seconds = (Date.now() - t0) / 1000;
    const settled = ids.filter((e) => collector.settled(e)).length;
    const trickle = {
      docs: ids.length,
      settled,
      seconds: round(seconds, 1),
      cpuMsPerDoc: round((to.cpuMs - from.cpuMs) / Math.max(1, settled), 2),
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
    instances.push(await startInstance(c, loadedTopics, `${loadedId}-group`));
    instances.push(await startInstance(c, loadedTopics, `${loadedId}-group`));
    instances.push(await startInstance(c, idleTopics, `${idleId}-group`));
    await Promise.all(instances.map((i) => i.ready(Math.max(1000, c.deadline - Date.now()))));
    c.log(`memory: all ready; measuring RSS in ${o.heldWaitS} s`);
    await sleep(o.heldWaitS * 1000);
    const [a, b, idle] = instances.map((i) => sampleTree(i.pid)) as [TreeSample, TreeSample, TreeSample];
    const perDoc = ((a.rssKb + b.rssKb - 2 * idle.rssKb) * 1024) / o.heldDocs;
    const names = [
      'docstream_nodejs_heap_size_used_bytes',
      'docstream_nodejs_heap_size_total_bytes',
      'docstream_nodejs_external_memory_bytes',
    ];
    const gauges = await Promise.all(instances.map((i) => i.gauges(names)));
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

export async function runQuiet(o: {
  idleS: number;
  trickleRate: number;
  trickleS: number;
  heldDocs: number;
  heldWaitS: number;
  nodeArgs: string[];
  deadline: number;
  log: (line: string) => void;
}): Promise<QuietResult> {
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench-quiet' });
  const sandbox = await startSandbox({ processing: { distribution: 'fixed', meanMs: 200 } });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-quiet-'));
  const c: Common = { kafka, sandbox, dir, nodeArgs: o.nodeArgs, log: o.log, deadline: o.deadline };
  const before = os.loadavg().map((n) => round(n, 2));
  try {
    const { idle, trickle } = await idleAndTrickle(c, o);
    const mem = o.heldDocs > 0 ? await memory(c, o) : null;
    return {
      parameters: {
        idleS: o.idleS,
        trickleRate: o.trickleRate,
        trickleS: o.trickleS,
        heldDocs: o.heldDocs,
        heldWaitS: o.heldWaitS,
      },
      load: { before, after: os.loadavg().map((n) => round(n, 2)) },
      idle,
      trickle,
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
