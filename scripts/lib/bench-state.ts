/**
 * `npm run bench -- --mode state`: the footprint and restore time of partition-local state.
 *
 * 1. Footprint: `--state-docs` finished-document state records (v2) over 4 partitions; two reader
 *    processes, each owning 2 partitions through the changelog reader into the finished index.
 *    Each reports RSS, heap and array buffers after restore minus its own idle baseline (started,
 *    nothing assigned), after a full GC, divided by the documents it holds.
 * 2. Restore: `--restore-docs` finished records over 4 partitions; one reader process assigns all
 *    4 and reports how long `assign` took (restored to the end offsets).
 *
 * Topics have unique names and are deleted at the end. Every wait is bounded by the deadline.
 * The reader processes are this same file run with `--state-child`.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { OwnedState } from '../../src/connector/state/store.js';
import { ChangelogReader } from '../../src/kafka/changelog.js';
import { KafkaClient, type KafkaAdmin } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { RUNTIME_ENV, RUNTIME_NODE_FLAGS } from '../../src/cli/runtime-defaults.js';
import { BROKERS, ensureStateTopic, uniqueName, writeFinishedStates } from './harness.js';

const PARTITIONS = 4;

interface Usage {
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  arrayBuffersMb: number;
}

interface ChildReport {
  partitions: number[];
  docs: number;
  restoreMs: number;
  idle: Usage;
  after: Usage;
  indexBytesPerDoc: number;
  rssBytesPerDoc: number;
  /** RSS growth per document of the partitions restored after the first one (stepwise only). */
  marginalRssBytesPerDoc: number | null;
  heapPlusBuffersBytesPerDoc: number;
}

interface StateBenchResult {
  parameters: { stateDocs: number; restoreDocs: number; partitions: number };
  footprint: { produceS: number; children: ChildReport[]; tuned: ChildReport[] };
  restore: { produceS: number; child: ChildReport } | null;
}

const mb = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;

function usage(): { rss: number; heapUsed: number; heapTotal: number; arrayBuffers: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) gc?.();
  const u = process.memoryUsage();
  return { rss: u.rss, heapUsed: u.heapUsed, heapTotal: u.heapTotal, arrayBuffers: u.arrayBuffers };
}

function inMb(u: ReturnType<typeof usage>): Usage {
  return {
    rssMb: mb(u.rss),
    heapUsedMb: mb(u.heapUsed),
    heapTotalMb: mb(u.heapTotal),
    arrayBuffersMb: mb(u.arrayBuffers),
  };
}

/**
 * docstream's runtime defaults (`src/cli/runtime-defaults.ts`: what `docstream run` starts itself
 * with and the image sets), against Node's own. "tuned" below means these.
 */
const TUNED_ENV = RUNTIME_ENV;
const TUNED_NODE_FLAGS = RUNTIME_NODE_FLAGS;

/**
 * The reader process: restore the given partitions, report, exit. With `stepwise`, the first partition
 * is restored alone and measured, so the growth from the rest is the marginal cost per document,
 * free of the one-off growth of the first restore (young generation, fetch buffers).
 */
async function child(topic: string, partitions: number[], stepwise: boolean): Promise<void> {
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench-state' });
  const admin = kafka.admin();
  await admin.connect();
  // The connector's own store (`OwnedState`: changelog reader + partition state), as wired.
  const owned = new OwnedState(
    (sink) =>
      new ChangelogReader(kafka, admin, topic, sink, silentLogger, {
        restoreTimeoutMs: 600_000,
        maxBytesPerPartition: 1024 * 1024,
      }),
    {
      inputTopic: 'bench-input',
      retentionMs: 7 * 86_400_000,
      logger: silentLogger,
      tombstone: async () => {},
    },
  );
  const state = owned.partitions;
  const reader = owned;
  await reader.start();
  await settle();
  const idle = usage();
  let restoreMs = 0;
  let mid: ReturnType<typeof usage> | null = null;
  let midDocs = 0;
  const steps = stepwise ? [partitions.slice(0, 1), partitions.slice(1)] : [partitions];
  for (const step of steps) {
    if (step.length === 0) continue;
    if (restoreMs > 0) {
      await settle();
      mid = usage();
      midDocs = state.finished.size();
    }
    const started = process.hrtime.bigint();
    await reader.assign(step);
    restoreMs += Number(process.hrtime.bigint() - started) / 1e6;
  }
  await settle();
  const after = usage();
  const docs = state.finished.size();
  const perDoc = (bytes: number, n: number) => Math.round((bytes / n) * 10) / 10;
  const report: ChildReport = {
    partitions,
    docs,
    restoreMs: Math.round(restoreMs),
    idle: inMb(idle),
    after: inMb(after),
    indexBytesPerDoc: perDoc(state.finished.bytes(), docs),
    rssBytesPerDoc: perDoc(after.rss - idle.rss, docs),
    marginalRssBytesPerDoc: mid ? perDoc(after.rss - mid.rss, docs - midDocs) : null,
    heapPlusBuffersBytesPerDoc: perDoc(
      after.heapUsed + after.arrayBuffers - idle.heapUsed - idle.arrayBuffers,
      docs,
    ),
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  await reader.stop();
  await admin.disconnect();
}

/** Lets the fetch buffers of a restore go before measuring what stays. */
const settle = () =>
  new Promise((resolve) => setTimeout(resolve, Number(process.env.BENCH_STATE_SETTLE_MS ?? 1500)));

function runChild(
  topic: string,
  partitions: number[],
  deadline: number,
  options: { tuned: boolean; stepwise: boolean },
): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [
        '--expose-gc',
        ...(options.tuned ? TUNED_NODE_FLAGS : []),
        fileURLToPath(import.meta.url),
        '--state-child',
        topic,
        partitions.join(','),
        options.stepwise ? 'stepwise' : 'all',
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: options.tuned
          ? { ...process.env, ...TUNED_ENV }
          : Object.fromEntries(Object.entries(process.env).filter(([k]) => !(k in TUNED_ENV))),
      },
    );
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const timer = setTimeout(() => proc.kill('SIGKILL'), Math.max(1000, deadline - Date.now()));
    proc.on('exit', (code) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').at(-1);
      if (code === 0 && line) resolve(JSON.parse(line) as ChildReport);
      else reject(new Error(`state reader ${partitions.join(',')} exited with ${code}`));
    });
  });
}

/** Writes `docs` finished v2 records over the partitions; returns how long it took, in seconds. */
async function fill(kafka: KafkaClient, topic: string, docs: number, deadline: number): Promise<number> {
  const started = Date.now();
  await writeFinishedStates(kafka, {
    stateTopic: topic,
    inputTopic: 'documents.arrived',
    partitions: PARTITIONS,
    docs,
    parallel: 4,
    deadline,
  });
  return Math.round((Date.now() - started) / 100) / 10;
}

async function withTopic<T>(
  admin: KafkaAdmin,
  prefix: string,
  work: (topic: string) => Promise<T>,
): Promise<T> {
  const topic = uniqueName(prefix);
  await ensureStateTopic(admin, topic, PARTITIONS);
  try {
    return await work(topic);
  } finally {
    await admin.deleteTopics([topic]).catch(() => undefined);
  }
}

export async function runState(options: {
  stateDocs: number;
  restoreDocs: number;
  deadline: number;
  log: (line: string) => void;
}): Promise<StateBenchResult> {
  const { stateDocs, restoreDocs, deadline, log } = options;
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench-state' });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const footprint = await withTopic(admin, 'bench-state', async (topic) => {
      log(`producing ${stateDocs} finished state records over ${PARTITIONS} partitions`);
      const produceS = await fill(kafka, topic, stateDocs, deadline);
      log(`produced in ${produceS} s; two readers restore 2 partitions each`);
      const pair = (tuned: boolean) =>
        Promise.all([
          runChild(topic, [0, 1], deadline, { tuned, stepwise: true }),
          runChild(topic, [2, 3], deadline, { tuned, stepwise: true }),
        ]);
      const children = await pair(false);
      log("again with docstream's runtime defaults");
      const tuned = await pair(true);
      return { produceS, children, tuned };
    });
    let restore: StateBenchResult['restore'] = null;
    if (restoreDocs > 0) {
      restore = await withTopic(admin, 'bench-restore', async (topic) => {
        log(`producing ${restoreDocs} finished state records for the restore`);
        const produceS = await fill(kafka, topic, restoreDocs, deadline);
        log(`produced in ${produceS} s; one reader restores all ${PARTITIONS} partitions`);
        // As `docstream run` restores: with its runtime defaults.
        const child = await runChild(topic, [0, 1, 2, 3], deadline, { tuned: true, stepwise: false });
        return { produceS, child };
      });
    }
    return { parameters: { stateDocs, restoreDocs, partitions: PARTITIONS }, footprint, restore };
  } finally {
    await admin.disconnect();
  }
}

export function printState(r: StateBenchResult): void {
  console.log(
    `\nstate: ${r.parameters.stateDocs} finished documents over ${r.parameters.partitions} partitions, 2 readers`,
  );
  const line = (c: ChildReport) =>
    console.log(
      `  partitions ${c.partitions.join(',')}: ${c.docs} docs, restore ${c.restoreMs} ms, ` +
        `RSS ${c.idle.rssMb} → ${c.after.rssMb} MB = ${c.rssBytesPerDoc} B/doc ` +
        `(marginal ${c.marginalRssBytesPerDoc ?? '-'} B/doc); heap+buffers ${c.heapPlusBuffersBytesPerDoc} B/doc; ` +
        `index arrays ${c.indexBytesPerDoc} B/doc`,
    );
  console.log("Node's defaults:");
  r.footprint.children.forEach(line);
  console.log(
    `docstream's defaults (as docstream run starts itself and the image sets: ${TUNED_NODE_FLAGS.join(' ')}, ${Object.entries(
      TUNED_ENV,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}):`,
  );
  r.footprint.tuned.forEach(line);
  if (r.restore) {
    const c = r.restore.child;
    console.log(
      `restore (docstream's defaults): ${c.docs} finished documents, 4 partitions, one reader: ${(c.restoreMs / 1000).toFixed(1)} s ` +
        `(${Math.round(c.docs / (c.restoreMs / 1000))} records/s); RSS ${c.idle.rssMb} → ${c.after.rssMb} MB ` +
        `= ${c.rssBytesPerDoc} B/doc`,
    );
  }
}

if (process.argv[2] === '--state-child') {
  const [topic, list, how] = process.argv.slice(3) as [string, string, string];
  child(topic, list.split(',').map(Number), how === 'stepwise').then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`state reader failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
