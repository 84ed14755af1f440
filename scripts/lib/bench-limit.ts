/**
 * `npm run bench -- --mode limit`: what an API rate limit the client is not told costs (issue 28).
 *
 * Each scenario sets the sandbox's token bucket at the API's real limit (burst: a fifth of a second),
 * starts `docstream run` instance(s) told `clientRate` each, and sends good documents only (200 ms of
 * processing; 4 rate-limited calls each: create and three result GETs, so the bound is limit / 4
 * documents per second). The limit may change during the run. The sandbox's counters are read every
 * 100 ms. Reported per scenario:
 * - done and dead-lettered;
 * - share of the bound in the steady part: the middle half of the completions (25 % to 75 %), in
 *   documents per second against limit / 4; for a changing limit, the calls accepted per second over
 *   the last 10 s of each phase against that phase's limit;
 * - calls answered 429, as a share of all rate-limited calls;
 * - the longest stretch without a single call while documents waited to be submitted (until the last
 *   create: after it, the last documents wait for their results' poll times, not for the limiter);
 * - after each change of the limit, how long until a 2 s window had at least 90 % of the new limit
 *   accepted and at most 5 % of its calls refused.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { apiCalls } from './api-calls.js';
import {
  BROKERS,
  ConnectorProcess,
  OutputCollector,
  arrivalJson,
  deleteTopics,
  ensureInputTopics,
  freePort,
  prefixedTopics,
  produceArrivals,
  round,
  sleep,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
} from './harness.js';

/** The API's limit from `atS` seconds after the documents were sent. */
interface Phase {
  atS: number;
  limit: number;
}

export interface LimitScenario {
  name: string;
  phases: Phase[];
  clientRate: number;
  instances: number;
  docs: number;
}

export const LIMIT_SCENARIOS: LimitScenario[] = [
  { name: '40/s, told 5000', phases: [{ atS: 0, limit: 40 }], clientRate: 5000, instances: 1, docs: 400 },
  {
    name: '10/s, told 20 (default)',
    phases: [{ atS: 0, limit: 10 }],
    clientRate: 20,
    instances: 1,
    docs: 150,
  },
  { name: '40/s, told 40', phases: [{ atS: 0, limit: 40 }], clientRate: 40, instances: 1, docs: 400 },
  {
    name: '40/s, 2 instances told 5000 each',
    phases: [{ atS: 0, limit: 40 }],
    clientRate: 5000,
    instances: 2,
    docs: 400,
  },
  {
    name: '40 → 20 → 60/s, told 5000',
    phases: [
      { atS: 0, limit: 40 },
      { atS: 30, limit: 20 },
      { atS: 60, limit: 60 },
    ],
    clientRate: 5000,
    instances: 1,
    docs: 1300,
  },
];

/** One reading of the sandbox's counters: rate-limited calls answered so far, and refused among them. */
interface Sample {
  t: number;
  calls: number;
  refused: number;
  creates: number;
}

export interface PhaseMeasure {
  limit: number;
  /** Calls accepted per second over the last 10 s of the phase, against its limit. */
  shareOfLimitPercent: number | null;
  /** Seconds from the change until a 2 s window reached 90 % of the new limit with ≤ 5 % refused. */
  followedInS: number | null;
}

export interface LimitMeasure {
  name: string;
  clientRate: number;
  instances: number;
  docs: number;
  done: number;
  deadLettered: number;
  /** Middle half of the completions, documents per second against limit / 4 (single-limit scenarios). */
  steadyShareOfBoundPercent: number | null;
  callsRefusedPercent: number;
  calls: number;
  longestSilenceMs: number;
  phases: PhaseMeasure[];
  durationS: number;
  /** 429s by endpoint ("METHOD route 429"). */
  refusedBy: Record<string, number>;
  /** GETs of the three result endpoints answered 200 or 404, per result published. */
  getsPerResult: number;
  /** Per second from the start: [accepted, refused] calls. */
  perSecond: Array<[number, number]>;
}

const RATE_LIMITED_CALLS_PER_DOC = 4;
/** FRAUD_ONLY: fraud, quality and classification. */
const RESULTS_PER_DOC = 3;

export async function runLimit(o: {
  scenarios: LimitScenario[];
  deadline: number;
  log: (line: string) => void;
}): Promise<LimitMeasure[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-limit-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  try {
    const files = (await writeCorpus(dir, ['clean-pdf'])).map((s) => s.file);
    const out: LimitMeasure[] = [];
    for (const s of o.scenarios) out.push(await runScenario(s, kafka, dir, files, o));
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function bucketOf(limit: number): { ratePerSecond: number; burst: number } {
  return { ratePerSecond: limit, burst: Math.max(1, Math.ceil(limit / 5)) };
}

async function runScenario(
  s: LimitScenario,
  kafka: KafkaClient,
  dir: string,
  files: string[],
  o: { deadline: number; log: (line: string) => void },
): Promise<LimitMeasure> {
  const id = uniqueName('bench-limit');
  const topics = prefixedTopics(id, 4);
  const sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: 200 },
    rateLimit: bucketOf(s.phases[0]!.limit),
    maxSubmissions: s.docs * 2,
  });
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  const connectors: ConnectorProcess[] = [];
  const timers: NodeJS.Timeout[] = [];
  try {
    await ensureInputTopics(kafka, topics);
    for (let i = 0; i < s.instances; i++) {
      const httpPort = await freePort();
      const config = writeConnectorConfig(dir, {
        topics,
        groupId: `${id}-group`,
        apiBaseUrl: sandbox.baseUrl,
        ratePerSecond: s.clientRate,
        maxInFlight: 2000,
        fileRoots: [dir],
        httpPort,
      });
      connectors.push(new ConnectorProcess(config, httpPort));
    }
    await Promise.all(connectors.map((c) => c.ready()));
    await collector.start();
    await producer.connect();
    o.log(`${s.name}: ${s.instances} connector(s) ready; sending ${s.docs} documents`);
    const ids = Array.from({ length: s.docs }, (_, i) => `${id}-${i}`);
    const samples: Sample[] = [];
    const read = (): Sample => {
      const c = apiCalls(sandbox.stats());
      return { t: Date.now(), calls: c.total - c.uploads, refused: c.rateLimited, creates: c.creates };
    };
    const start = Date.now();
    for (const p of s.phases.slice(1)) {
      timers.push(
        setTimeout(() => {
          sandbox.configure({ rateLimit: bucketOf(p.limit) });
          o.log(`${s.name}: the API's limit is now ${p.limit}/s`);
        }, p.atS * 1000),
      );
    }
    samples.push(read());
    timers.push(setInterval(() => samples.push(read()), 100));
    await produceArrivals(
      producer,
      topics.arrived,
      ids.map((e, i) => ({ event_id: e, value: arrivalJson(e, files[i % files.length]!) })),
    );
    const ok = await waitUntil(
      () => ids.every((e) => collector.settled(e)),
      o.deadline - Date.now(),
      () => o.log(`${s.name}: ${ids.filter((e) => collector.settled(e)).length}/${ids.length} settled`),
    );
    if (!ok) o.log(`${s.name}: time limit reached before every document settled`);
    for (const t of timers) clearInterval(t);
    samples.push(read());
    const requests = sandbox.stats().requests;
    const refusedBy = Object.fromEntries(Object.entries(requests).filter(([key]) => key.endsWith(' 429')));
    const c = apiCalls(sandbox.stats());
    const measured = measureScenario(s, ids, collector, samples, start);
    const getsPerResult = round(
      (c.resultsReady + c.resultsNotReady) / Math.max(1, measured.done * RESULTS_PER_DOC),
      2,
    );
    return { ...measured, refusedBy, getsPerResult };
  } finally {
    for (const t of timers) clearInterval(t);
    await Promise.all(connectors.map((c) => c.stop()));
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics).catch(() => undefined);
    await sleep(500);
  }
}

function measureScenario(
  s: LimitScenario,
  ids: string[],
  collector: OutputCollector,
  samples: Sample[],
  start: number,
): Omit<LimitMeasure, 'refusedBy' | 'getsPerResult'> {
  const completions = ids
    .filter((e) => collector.complete(e))
    .map((e) => collector.byEvent.get(e)!.lastResultAt)
    .sort((a, b) => a - b);
  const deadLettered = ids.filter((e) => (collector.byEvent.get(e)?.deadLetters.length ?? 0) > 0).length;
  const last = samples[samples.length - 1]!;
  const first = samples[0]!;
  const lastDone = completions[completions.length - 1] ?? last.t;

  // Steady part: the middle half of the completions.
  let steady: number | null = null;
  if (s.phases.length === 1 && completions.length >= 8) {
    const a = completions[Math.floor(completions.length / 4)]!;
    const b = completions[Math.floor((3 * completions.length) / 4)]!;
    const docsPerS = completions.length / 2 / Math.max(0.001, (b - a) / 1000);
    steady = round((100 * docsPerS) / (s.phases[0]!.limit / RATE_LIMITED_CALLS_PER_DOC), 1);
  }

  // The longest run of samples without a call while documents waited to be submitted: from the first
  // call until the last create (after it, the few documents left wait for their results' poll times).
  const lastCreate = samples.find((x) => x.creates === last.creates)?.t ?? lastDone;
  let silence = 0;
  let quietSince: number | null = null;
  for (let i = 1; i < samples.length; i++) {
    const prev = samples[i - 1]!;
    const cur = samples[i]!;
    if (cur.t > lastCreate) break;
    if (cur.calls === prev.calls && prev.calls > first.calls) {
      quietSince ??= prev.t;
      silence = Math.max(silence, cur.t - quietSince);
    } else quietSince = null;
  }

  const between = (from: number, to: number) => {
    const a = samples.find((x) => x.t >= from);
    const b = [...samples].reverse().find((x) => x.t <= to);
    if (!a || !b || b.t <= a.t) return null;
    const calls = b.calls - a.calls;
    const refused = b.refused - a.refused;
    return { accepted: (calls - refused) / ((b.t - a.t) / 1000), refused: calls > 0 ? refused / calls : 0 };
  };
  const phases: PhaseMeasure[] = s.phases.map((p, i) => {
    const from = start + p.atS * 1000;
    const to = Math.min(i + 1 < s.phases.length ? start + s.phases[i + 1]!.atS * 1000 : lastDone, lastDone);
    const tail = between(Math.max(from, to - 10_000), to);
    let followed: number | null = null;
    if (i > 0) {
      for (let t = from; t + 2000 <= to; t += 100) {
        const w = between(t, t + 2000);
        if (w && w.accepted >= 0.9 * p.limit && w.refused <= 0.05) {
          followed = round((t - from) / 1000, 1);
          break;
        }
      }
    }
    return {
      limit: p.limit,
      shareOfLimitPercent: tail ? round((100 * tail.accepted) / p.limit, 1) : null,
      followedInS: followed,
    };
  });
  const perSecond: Array<[number, number]> = [];
  for (let t = start; t < lastDone; t += 1000) {
    const a = samples.find((x) => x.t >= t);
    const b = samples.find((x) => x.t >= t + 1000) ?? last;
    if (!a) break;
    perSecond.push([b.calls - a.calls - (b.refused - a.refused), b.refused - a.refused]);
  }
  const calls = last.calls - first.calls;
  return {
    perSecond,
    name: s.name,
    clientRate: s.clientRate,
    instances: s.instances,
    docs: ids.length,
    done: completions.length,
    deadLettered,
    steadyShareOfBoundPercent: steady,
    callsRefusedPercent: round((100 * (last.refused - first.refused)) / Math.max(1, calls), 2),
    calls,
    longestSilenceMs: silence,
    phases,
    durationS: round((lastDone - start) / 1000, 1),
  };
}

export function printLimit(measures: LimitMeasure[]): void {
  const rows = [
    [
      'scenario',
      'done',
      'dead letters',
      'steady % of bound',
      '429 % of calls',
      'GETs / result',
      'longest silence',
      'per phase',
    ],
  ];
  for (const m of measures) {
    rows.push([
      m.name,
      `${m.done}/${m.docs}`,
      String(m.deadLettered),
      m.steadyShareOfBoundPercent === null ? '-' : `${m.steadyShareOfBoundPercent} %`,
      `${m.callsRefusedPercent} %`,
      String(m.getsPerResult),
      `${m.longestSilenceMs} ms`,
      m.phases
        .map(
          (p) =>
            `${p.limit}/s: ${p.shareOfLimitPercent ?? '-'} %` +
            (p.followedInS === null ? '' : `, followed in ${p.followedInS} s`),
        )
        .join('; '),
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}\n`);
}
