/**
 * `npm run bench -- --mode tenants`: whether one tenant at its application's rate limit, with a
 * backlog, holds back another tenant's documents on the same partitions. An organisation sandbox
 * (test/harness/organisation.ts) with `busy` in eu-1 (its application limited to `busyLimit`/s) and
 * `calm` in us-1 (a generous limit), a tenant directory for both, and `docstream run` as users run
 * it. Two phases, each on fresh topics, sandbox and connector with the same settings:
 * - baseline: only calm's events, `calmRate`/s for `streamS`;
 * - contended: `backlog` busy events at once, then the same calm stream.
 * Reported per phase: calm's delay after ready (each result's record timestamp minus the sandbox's
 * `ready_at` for it), its time from production to creation and to its last result; for busy, the
 * limited calls the API accepted per second over the window in which it had documents left to
 * create (tenant-fairness.ts), against its limit. Each phase ends once every calm document is out
 * or `drainS` after its stream, whichever is first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { OutputReader } from '../../src/connector/outputs/output-reader.js';
import { startOrganisationSandbox, type Organisation } from '../../test/harness/organisation.js';
import {
  BROKERS,
  ConnectorProcess,
  RESULT_KINDS,
  deleteTopics,
  ensureInputTopics,
  freePort,
  prefixedTopics,
  produceArrivals,
  produceAtRate,
  sleep,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  type Arrival,
} from './harness.js';
import {
  achievedRate,
  backlogWindow,
  delayStats,
  documentDelays,
  isCreate,
  ratio,
  type AchievedRate,
  type BacklogWindow,
  type DelayStats,
  type ListedSubmission,
} from './tenant-fairness.js';

/** Sandbox results ready 1-4 s after the upload (uniform), as in the freshness mode. */
const PROCESSING = { distribution: 'uniform', meanMs: 2500, minMs: 1000, maxMs: 4000 } as const;
/** The default credentials' ceiling; no event here goes with them. */
const DEFAULT_RATE = 5000;
/** The goals of the issue. */
export const DELAY_RATIO_GOAL = 1.3;
export const BUSY_SHARE_GOAL = 95;

export interface TenantsOptions {
  backlog: number;
  /** busy's application's limit at the API, calls per second. */
  busyLimit: number;
  /** busy's token bucket's burst at the API; 0: a fifth of a second of its limit, at least 1. */
  busyBurst: number;
  /** busy's `ratePerSecond` in the directory; 0: not told (api.ratePerSecond, the limiter finds it). */
  busyToldRate: number;
  calmLimit: number;
  calmRate: number;
  streamS: number;
  drainS: number;
  partitions: number;
  maxInFlight: number;
  /** tenants.maxInFlightShare; null: the connector's default. */
  maxInFlightShare: number | null;
  rampUpS: number;
  deadline: number;
  log: (line: string) => void;
}

type Phase = 'baseline' | 'contended';

export interface PhaseMeasure {
  phase: Phase;
  calm: {
    docs: number;
    done: number;
    deadLetters: number;
    afterReady: DelayStats | null;
    producedToCreated: DelayStats | null;
    endToEnd: DelayStats | null;
  };
  busy: {
    backlog: number;
    created: number;
    window: (BacklogWindow & { fromS: number; toS: number }) | null;
    rate: AchievedRate | null;
  } | null;
  peakInFlight: { total: number | null; busy: number | null; calm: number | null };
  /** Peak of busy's documents waiting for its share of the slots (docstream_tenant_documents_waiting). */
  peakBusyWaiting: number | null;
  /** Calls the sandbox's record no longer held (its ring was full): the figures would be short. */
  callsDropped: number;
  durationS: number;
}

export interface TenantsResult {
  parameters: Omit<TenantsOptions, 'deadline' | 'log'> & { processing: typeof PROCESSING; calmDocs: number };
  baseline: PhaseMeasure;
  contended: PhaseMeasure | null;
  ratios: { p50: number | null; p95: number | null; max: number | null; endToEndP95: number | null };
  goals: {
    delay: { ratioP95: number | null; goal: number; met: boolean; why: string };
    busyShare: { percent: number | null; goal: number; met: boolean; why: string };
  };
}

export async function runTenants(o: TenantsOptions): Promise<TenantsResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-tenants-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  try {
    const file = (await writeCorpus(dir, ['clean-pdf']))[0]!.file;
    const baseline = await runPhase('baseline', o, kafka, dir, file);
    const contended = Date.now() < o.deadline ? await runPhase('contended', o, kafka, dir, file) : null;
    return summarise(o, baseline, contended);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function summarise(o: TenantsOptions, baseline: PhaseMeasure, contended: PhaseMeasure | null): TenantsResult {
  const b = baseline.calm.afterReady;
  const c = contended?.calm.afterReady;
  const ratios = {
    p50: ratio(c?.p50, b?.p50),
    p95: ratio(c?.p95, b?.p95),
    max: ratio(c?.max, b?.max),
    endToEndP95: ratio(contended?.calm.endToEnd?.p95, baseline.calm.endToEnd?.p95),
  };
  const missing = contended ? contended.calm.docs - contended.calm.done : null;
  let delay: TenantsResult['goals']['delay'];
  if (!contended)
    delay = {
      ratioP95: null,
      goal: DELAY_RATIO_GOAL,
      met: false,
      why: 'contended phase not run (time limit)',
    };
  else if (missing! > 0 || baseline.calm.done < baseline.calm.docs)
    delay = {
      ratioP95: ratios.p95,
      goal: DELAY_RATIO_GOAL,
      met: false,
      why: `calm documents not out within ${o.drainS} s of their stream: ${missing} contended, ${baseline.calm.docs - baseline.calm.done} baseline`,
    };
  else if (ratios.p95 === null)
    delay = { ratioP95: null, goal: DELAY_RATIO_GOAL, met: false, why: 'no delays measured' };
  else
    delay = {
      ratioP95: ratios.p95,
      goal: DELAY_RATIO_GOAL,
      met: ratios.p95 <= DELAY_RATIO_GOAL,
      why: `p95 ${c!.p95} ms contended against ${b!.p95} ms baseline`,
    };
  const rate = contended?.busy?.rate ?? null;
  const busyShare: TenantsResult['goals']['busyShare'] = rate
    ? {
        percent: rate.percentOfLimit,
        goal: BUSY_SHARE_GOAL,
        met: rate.percentOfLimit >= BUSY_SHARE_GOAL && contended!.callsDropped === 0,
        why: `${rate.acceptedPerS} accepted calls/s of ${o.busyLimit}/s over ${rate.seconds} s`,
      }
    : { percent: null, goal: BUSY_SHARE_GOAL, met: false, why: 'no backlog window measured' };
  return {
    parameters: {
      backlog: o.backlog,
      busyLimit: o.busyLimit,
      busyBurst: busyBurst(o),
      busyToldRate: o.busyToldRate,
      calmLimit: o.calmLimit,
      calmRate: o.calmRate,
      streamS: o.streamS,
      drainS: o.drainS,
      partitions: o.partitions,
      maxInFlight: o.maxInFlight,
      maxInFlightShare: o.maxInFlightShare,
      rampUpS: o.rampUpS,
      processing: PROCESSING,
      calmDocs: calmDocs(o),
    },
    baseline,
    contended,
    ratios,
    goals: { delay, busyShare },
  };
}

const busyBurst = (o: TenantsOptions) => o.busyBurst || Math.max(1, Math.ceil(o.busyLimit / 5));
const calmDocs = (o: TenantsOptions) => Math.max(1, Math.round(o.calmRate * o.streamS));

/** A tenant's arrival event (JSON, FRAUD_ONLY, query_id = event_id). */
function tenantArrival(eventId: string, file: string, tenant: string): Arrival {
  return {
    event_id: eventId,
    value: JSON.stringify({ event_id: eventId, blob: { url: `file://${file}` }, query_id: eventId, tenant }),
  };
}

/** The directory file and each tenant's key file beside it, as a mounted Secret holds them. */
function writeDirectory(dir: string, org: Organisation, o: TenantsOptions): string {
  const secrets = fs.mkdtempSync(path.join(dir, 'tenants-'));
  const told: Record<string, number> = { calm: o.calmLimit };
  if (o.busyToldRate > 0) told.busy = o.busyToldRate;
  const tenants: Record<string, unknown> = {};
  for (const t of Object.values(org.tenants)) {
    fs.writeFileSync(path.join(secrets, `${t.name}.pem`), t.privateKeyPem!);
    tenants[t.name] = {
      cell: t.cell,
      clientId: t.clientId,
      privateKeyFile: `${t.name}.pem`,
      kid: t.kid,
      ...(told[t.name] !== undefined ? { ratePerSecond: told[t.name] } : {}),
    };
  }
  const file = path.join(secrets, 'directory.json');
  fs.writeFileSync(file, JSON.stringify({ cells: org.cells, tenants }, null, 2));
  return file;
}

/** The connector's in-flight gauges (all documents, each tenant's) and busy's documents waiting for its share. */
function inFlight(text: string): {
  total: number | null;
  busy: number | null;
  calm: number | null;
  busyWaiting: number | null;
} {
  const value = (re: RegExp) => {
    const m = re.exec(text);
    return m ? Number(m[1]) : null;
  };
  return {
    total: value(/^docstream_documents_in_flight ([0-9.e+-]+)$/m),
    busy: value(/^docstream_tenant_documents_in_flight\{tenant="busy"\} ([0-9.e+-]+)$/m),
    calm: value(/^docstream_tenant_documents_in_flight\{tenant="calm"\} ([0-9.e+-]+)$/m),
    busyWaiting: value(/^docstream_tenant_documents_waiting\{tenant="busy"\} ([0-9.e+-]+)$/m),
  };
}

const maxOf = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

async function runPhase(
  phase: Phase,
  o: TenantsOptions,
  kafka: KafkaClient,
  dir: string,
  file: string,
): Promise<PhaseMeasure> {
  const startedAt = Date.now();
  const id = uniqueName(`bench-tenants-${phase}`);
  const topics = prefixedTopics(id, o.partitions);
  const docs = calmDocs(o);
  const org = await startOrganisationSandbox({
    cells: ['eu-1', 'us-1'],
    tenants: [
      {
        name: 'busy',
        cell: 'eu-1',
        rateLimit: { ratePerSecond: o.busyLimit, burst: busyBurst(o) },
      },
      {
        name: 'calm',
        cell: 'us-1',
        rateLimit: { ratePerSecond: o.calmLimit, burst: Math.max(1, Math.ceil(o.calmLimit / 5)) },
      },
    ],
    config: {
      processing: PROCESSING,
      maxSubmissions: Math.max(10_000, 2 * (o.backlog + docs)),
      maxCallRecords: 500_000,
    },
  });
  // First record timestamp of each result kind, per event id.
  const out = new Map<string, Map<string, number>>();
  const deadLettered = new Set<string>();
  const reader = new OutputReader({
    kafka,
    topics,
    groupId: uniqueName('bench-tenants-collect'),
    kinds: [...RESULT_KINDS, 'dlq'],
    decoded: [],
  });
  const producer = kafka.producer();
  let connector: ConnectorProcess | null = null;
  let sampler: NodeJS.Timeout | undefined;
  const peak: PhaseMeasure['peakInFlight'] = { total: null, busy: null, calm: null };
  let peakBusyWaiting: number | null = null;
  try {
    await ensureInputTopics(kafka, topics);
    const httpPort = await freePort();
    const config = writeConnectorConfig(dir, {
      topics,
      groupId: `${id}-group`,
      apiBaseUrl: org.sandbox.baseUrl,
      ratePerSecond: DEFAULT_RATE,
      maxInFlight: o.maxInFlight,
      fileRoots: [dir],
      httpPort,
      tenants: {
        directoryFile: writeDirectory(dir, org, o),
        ...(o.maxInFlightShare !== null ? { maxInFlightShare: o.maxInFlightShare } : {}),
      },
    });
    connector = new ConnectorProcess(config, httpPort);
    await connector.ready();
    await reader.start((r) => {
      const eventId = r.headers.event_id;
      if (!eventId) return;
      if (r.kind === 'dlq') {
        deadLettered.add(eventId);
        return;
      }
      let kinds = out.get(eventId);
      if (!kinds) out.set(eventId, (kinds = new Map()));
      if (!kinds.has(r.kind)) kinds.set(r.kind, r.timestamp);
    });
    const running = connector;
    let sampling = false;
    sampler = setInterval(() => {
      if (sampling) return;
      sampling = true;
      void running
        .metricsText()
        .then((text) => {
          if (text === null) return;
          const now = inFlight(text);
          peak.total = maxOf(peak.total, now.total);
          peak.busy = maxOf(peak.busy, now.busy);
          peak.calm = maxOf(peak.calm, now.calm);
          peakBusyWaiting = maxOf(peakBusyWaiting, now.busyWaiting);
        })
        .finally(() => (sampling = false));
    }, 1000);
    await producer.connect();
    if (phase === 'contended') {
      o.log(`tenants ${phase}: ${o.backlog} busy events at once`);
      await produceArrivals(
        producer,
        topics.arrived,
        Array.from({ length: o.backlog }, (_, i) => tenantArrival(`${id}-busy-${i}`, file, 'busy')),
      );
    }
    o.log(`tenants ${phase}: ${docs} calm events at ${o.calmRate}/s`);
    const calmIds = Array.from({ length: docs }, (_, i) => `${id}-calm-${i}`);
    const producedAt = await produceAtRate(
      producer,
      topics.arrived,
      calmIds.map((e) => tenantArrival(e, file, 'calm')),
      o.calmRate,
      o.deadline,
    );
    const settled = () =>
      calmIds.every((e) => deadLettered.has(e) || RESULT_KINDS.every((k) => out.get(e)?.has(k)));
    const ok = await waitUntil(settled, Math.min(o.drainS * 1000, o.deadline - Date.now()), () => {
      const n = calmIds.filter((e) => RESULT_KINDS.every((k) => out.get(e)?.has(k))).length;
      o.log(`tenants ${phase}: ${n}/${docs} calm documents out`);
    });
    if (!ok) o.log(`tenants ${phase}: not every calm document was out within ${o.drainS} s of its stream`);
    const endedAt = Date.now();
    clearInterval(sampler);

    const res = await fetch(`${org.sandbox.baseUrl}/_sandbox/submissions?tenant_id=calm`);
    const calmSubs = ((await res.json()) as { items: ListedSubmission[] }).items;
    const delays = documentDelays(calmSubs, out, producedAt, RESULT_KINDS);
    const busyCalls = org.sandbox.calls({ clientId: org.tenants.busy!.clientId }).items;
    let busy: PhaseMeasure['busy'] = null;
    if (phase === 'contended') {
      const window = backlogWindow(busyCalls, {
        backlog: o.backlog,
        endedAt,
        rampUpMs: o.rampUpS * 1000,
        minMs: 5000,
      });
      busy = {
        backlog: o.backlog,
        created: busyCalls.filter(isCreate).length,
        window: window
          ? { ...window, fromS: (window.from - startedAt) / 1000, toS: (window.to - startedAt) / 1000 }
          : null,
        rate: window ? achievedRate(busyCalls, window, o.busyLimit) : null,
      };
    }
    return {
      phase,
      calm: {
        docs,
        done: delays.done,
        deadLetters: calmIds.filter((e) => deadLettered.has(e)).length,
        afterReady: delayStats(delays.afterReady),
        producedToCreated: delayStats(delays.toCreate),
        endToEnd: delayStats(delays.endToEnd),
      },
      busy,
      peakInFlight: peak,
      peakBusyWaiting,
      callsDropped: org.sandbox.calls().dropped,
      durationS: Math.round((endedAt - startedAt) / 100) / 10,
    };
  } finally {
    clearInterval(sampler);
    await connector?.stop();
    await reader.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await org.close();
    await deleteTopics(kafka, topics).catch(() => undefined);
    await sleep(500);
  }
}

export function printTenants(r: TenantsResult): void {
  const p = r.parameters;
  console.log(
    `\ntenants: busy (eu-1, API limit ${p.busyLimit} calls/s burst ${p.busyBurst}, directory ratePerSecond ${p.busyToldRate || 'not set'}), ` +
      `backlog ${p.backlog} at once in the contended phase; calm (us-1, limit ${p.calmLimit}/s) ${p.calmDocs} events at ` +
      `${p.calmRate}/s; ${p.partitions} input partitions shared by both (keyed by event id); ` +
      `connector.maxInFlight ${p.maxInFlight}, tenants.maxInFlightShare ${p.maxInFlightShare ?? "the connector's default"}; results ready 1-4 s after the upload`,
  );
  const phases = [r.baseline, r.contended];
  const stats = (s: DelayStats | null | undefined) => (s ? `${s.p50} / ${s.p95} / ${s.max}` : '-');
  const rows: Array<[string, (m: PhaseMeasure) => string, string]> = [
    ['calm documents out', (m) => `${m.calm.done}/${m.calm.docs} (DLQ ${m.calm.deadLetters})`, ''],
    [
      'calm delay after ready ms p50/p95/max',
      (m) => stats(m.calm.afterReady),
      `${r.ratios.p50 ?? '-'}x / ${r.ratios.p95 ?? '-'}x / ${r.ratios.max ?? '-'}x`,
    ],
    ['calm produced to created ms', (m) => stats(m.calm.producedToCreated), ''],
    ['calm produced to last result ms', (m) => stats(m.calm.endToEnd), `p95 ${r.ratios.endToEndP95 ?? '-'}x`],
    [
      'peak in flight all / busy / calm',
      (m) => `${m.peakInFlight.total ?? '-'} / ${m.peakInFlight.busy ?? '-'} / ${m.peakInFlight.calm ?? '-'}`,
      '',
    ],
    ['peak busy documents waiting for its share', (m) => String(m.peakBusyWaiting ?? '-'), ''],
    ['phase duration s', (m) => String(m.durationS), ''],
  ];
  const widths = [40, 26, 26];
  const line = (cells: string[]) =>
    console.log(
      cells
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join(' ')
        .trimEnd(),
    );
  line(['', 'baseline', 'contended', 'contended / baseline']);
  for (const [label, f, ratioText] of rows) line([label, ...phases.map((m) => (m ? f(m) : '-')), ratioText]);
  const busy = r.contended?.busy;
  if (busy) {
    const w = busy.window;
    console.log(
      `busy, contended phase: created ${busy.created}/${busy.backlog}; ` +
        (w && busy.rate
          ? `window ${w.fromS.toFixed(1)}-${w.toS.toFixed(1)} s into the phase (${busy.rate.seconds} s: from its first API call + ${p.rampUpS} s ramp-up ` +
            `to ${w.end === 'backlog created' ? 'its last create, the ramp-down after it left out' : 'the end of the measurement, creates still waiting'}): ` +
            `${busy.rate.acceptedPerS} accepted calls/s (${busy.rate.percentOfLimit} % of ${p.busyLimit}/s), ` +
            `${busy.rate.createsPerS} creates/s, ${busy.rate.refused} answered 429`
          : 'no window of at least 5 s with a backlog'),
    );
  }
  if ((r.contended?.callsDropped ?? 0) > 0 || r.baseline.callsDropped > 0)
    console.log(`warning: the sandbox's call record dropped calls; busy's rate is short`);
  const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
  const g = r.goals;
  console.log(
    `goal: calm's delay after ready p95 within ${g.delay.goal}x of the baseline: ${g.delay.ratioP95 ?? '-'}x, ${verdict(g.delay.met)} (${g.delay.why})`,
  );
  console.log(
    `goal: busy gets >= ${g.busyShare.goal} % of its limit while it has a backlog: ${g.busyShare.percent ?? '-'} %, ${verdict(g.busyShare.met)} (${g.busyShare.why})`,
  );
}
