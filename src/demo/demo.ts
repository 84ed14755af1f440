/**
 * `docstream demo`: the main job on the embedded default. Starts what is missing of the local stack,
 * the sandbox and the connector; sends a generated corpus (clean and suspicious PDFs, an image, an
 * unsupported file, and malformed events); shows each document as its results arrive; ends with a table
 * of results and dead letters; stops what it started. The sandbox also serves an organisation of two
 * tenants in two cells (`tenants.ts`), the connector reads their directory, and a clean PDF of each
 * tenant shows where its document was created and by which application.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, prefixedTopics } from '../config/index.js';
import { Connector } from '../connector/connector.js';
import { OutputReader } from '../connector/outputs/output-reader.js';
import { KafkaClient } from '../kafka/client.js';
import { createLogger } from '../observability/logger.js';
import { DEFAULT_CLIENT, startSandbox, type Sandbox } from '../sandbox/index.js';
import { Registry } from '../serde/registry.js';
import { defaultStackOptions, stackDown, stackUp, type ServiceName } from '../stack/index.js';
import { registryUrl } from '../stack/services.js';
import { colourWanted } from '../util/progress.js';
import { retry } from '../util/retry.js';
import { writeCorpus, writeTenantPayslip, type Sample } from './corpus.js';
import { fitTable, type Cell } from './table.js';
import {
  DEMO_TENANTS,
  makeOrganisation,
  sandboxSubmissions,
  tenantOutcome,
  tenantTable,
  writeDirectory,
  type SandboxSubmission,
} from './tenants.js';

interface DemoOptions {
  /** Keep the stack running afterwards even if the demo started it. */
  keepStack: boolean;
  timeoutMs: number;
  /** Configuration files under the demo's own settings (the default files when not given). */
  files?: string[];
  out: (line: string) => void;
}

export interface Row {
  event: string;
  what: string;
  pipeline: string;
  fraud?: string;
  quality?: string;
  classification?: string;
  decision?: string;
  dead?: string;
  expect: 'results' | 'dead letter';
  awaited: number;
  got: number;
  /** The tenant the event names; absent: the default credentials. */
  tenant?: string;
  /** The tenant each of its results and dead letters carries (null: none). */
  carried?: Array<string | null>;
}

// Colour only on a terminal, and never with NO_COLOR set.
const color = (code: number) => (s: string) =>
  colourWanted(process.stdout, process.env) ? `\u001b[${code}m${s}\u001b[0m` : s;
const green = color(32);
const red = color(31);
const yellow = color(33);
const dim = color(2);

function scoreColor(score: string | undefined): string {
  if (!score) return '';
  if (['HIGH_RISK', 'DECLINED', 'LOW_QUALITY'].includes(score)) return red(score);
  if (['WARNING', 'MANUAL_REVIEW'].includes(score)) return yellow(score);
  return green(score);
}

function scorePaint(score: string): (line: string) => string {
  if (['HIGH_RISK', 'DECLINED', 'LOW_QUALITY'].includes(score)) return red;
  if (['WARNING', 'MANUAL_REVIEW'].includes(score)) return yellow;
  return green;
}

/** The width the final table must fit: the terminal's, at most 100 columns (100 when not a terminal). */
function tableWidth(): number {
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  return Math.max(60, Math.min(100, columns ?? 100));
}

/** The final table: one row per event, wrapped (or the document and pipeline columns dropped) to fit. */
export function resultTable(rows: Row[], width: number): string[] {
  const score = (s: string | undefined): Cell => (s ? { text: s, paint: scorePaint(s) } : { text: '' });
  const header = ['event', 'document', 'pipeline', 'fraud', 'quality', 'class', 'decision', 'dead letter'];
  const body = rows.map((r): Cell[] => [
    { text: r.event },
    { text: r.what },
    { text: r.pipeline },
    score(r.fraud),
    score(r.quality),
    { text: r.classification ?? '' },
    score(r.decision),
    r.dead ? { text: r.dead, paint: red } : { text: '' },
  ]);
  return fitTable([header.map((text) => ({ text })), ...body], { width, keep: [0], droppable: [1, 2] });
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Awaits `work`; when it takes more than a moment, says what the demo is waiting for (after 3 s,
 * then at growing intervals up to every 30 s), so that a slow first start is never silent.
 */
export async function waitingFor<T>(
  say: (line: string) => void,
  what: string,
  work: Promise<T>,
  firstAfterMs = 3000,
): Promise<T> {
  const since = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const next = (delay: number) => {
    timer = setTimeout(() => {
      say(dim(`       … waiting for ${what} (${seconds(Date.now() - since)})`));
      next(Math.min(delay * 2, 30_000));
    }, delay);
  };
  next(firstAfterMs);
  try {
    return await work;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Makes sure Kafka's group coordinator answers for `groupId`. A broker that never had a consumer
 * group creates its offsets topic on the first request for a coordinator and answers "loading"
 * until it is ready; a consumer that joins then crashes and restarts after a back-off.
 */
async function groupCoordinatorReady(kafka: KafkaClient, groupId: string, timeoutMs: number): Promise<void> {
  const admin = kafka.admin();
  const started = Date.now();
  try {
    await admin.connect();
    await retry(() => admin.describeGroup(groupId), {
      budgetMs: timeoutMs - (Date.now() - started),
      lastTryAtBudget: true,
      backoff: { initialMs: 250, maxMs: 250, jitter: false },
      classify: () => ({ retry: true }),
    });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function listenable(port: number): Promise<boolean> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function runDemo(options: DemoOptions): Promise<number> {
  const say = options.out;
  const started = Date.now();
  const services: ServiceName[] = ['kafka', 'registry'];
  const stackOptions = { ...defaultStackOptions(), services, log: (l: string) => say(dim(`  stack  ${l}`)) };
  say('docstream demo — stack, sandbox and connector on this machine\n');
  say('1/4  local stack (Kafka, schema registry)');
  const run = `demo-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}-${randomBytes(2).toString('hex')}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-demo-'));
  // The tenants' keys and directory: a folder of their own, outside the blob roots (`dir`).
  const keys = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-demo-tenants-'));
  // The corpus, the tenants' keys and the sandbox need nothing of the stack: made while it starts.
  const corpus = writeCorpus(dir);
  corpus.catch(() => undefined);
  const tenantCorpus = Promise.all(DEMO_TENANTS.map((t) => writeTenantPayslip(dir, t.name)));
  tenantCorpus.catch(() => undefined);
  const organisation = makeOrganisation(keys);
  organisation.catch(() => undefined);
  let up: Awaited<ReturnType<typeof stackUp>> | undefined;
  let sandbox: Sandbox | null = null;
  const sandboxStarting = Promise.all([listenable(8080), organisation]).then(async ([free, org]) => {
    sandbox = await startSandbox({
      port: free ? 8080 : 0,
      processing: { distribution: 'uniform', meanMs: 900, minMs: 400, maxMs: 1400 },
      ...org.sandbox,
    });
    return sandbox;
  });
  sandboxStarting.catch(() => undefined);
  let connector: Connector | null = null;
  // The stack the demo started or found, on its ports (DOCSTREAM_STACK_KAFKA_PORT, ...).
  const brokers = [`localhost:${stackOptions.ports.kafka}`];
  const kafka = new KafkaClient({ brokers, clientId: 'docstream-demo' });
  const producer = kafka.producer();
  let collector: OutputReader | null = null;
  try {
    let step = Date.now();
    up = await waitingFor(
      say,
      'Kafka and the schema registry (a first start also sets them up)',
      stackUp(stackOptions),
    );
    say(dim(`       ready in ${seconds(Date.now() - step)}`));

    say('2/4  sandbox of the Document Analysis API');
    step = Date.now();
    const api = await waitingFor(say, 'the sandbox', sandboxStarting);
    say(dim(`       ${api.baseUrl} (client sandbox-client), ready in ${seconds(Date.now() - step)}`));
    const org = await organisation;
    for (const t of org.tenants)
      say(
        dim(
          `       ${api.cells[t.cell]?.baseUrl} cell ${t.cell}: tenant ${t.name}, application ${t.clientId}`,
        ),
      );
    const directoryFile = await writeDirectory(org, api.cells);

    say('3/4  connector');
    step = Date.now();
    const topics = prefixedTopics(run, 1);
    const config = loadConfig({
      ...(options.files ? { files: options.files } : {}),
      overrides: {
        topics,
        kafka: { brokers, groupId: `${run}-connector` },
        registry: { url: registryUrl(stackOptions) },
        // Only the demo's sandbox, whatever the files say: never a real cell, client or proxy.
        api: {
          baseUrl: api.baseUrl,
          cell: '',
          tokenUrl: '',
          clientId: DEFAULT_CLIENT.clientId,
          clientSecret: DEFAULT_CLIENT.clientSecret,
          proxyUrl: 'none',
        },
        webhooks: { enabled: false },
        connector: { pollInitialMs: 300, pollMaxMs: 2000 },
        blobs: { fileRoots: [dir] },
        // The demo's two tenants, in the sandbox's cells, whatever the files say.
        tenants: { directoryFile },
      },
    });
    await waitingFor(
      say,
      'the group coordinator (a new Kafka first creates its offsets topic)',
      groupCoordinatorReady(kafka, config.kafka.groupId, options.timeoutMs),
    );
    connector = await waitingFor(
      say,
      'the connector (topics, schemas, joining its consumer group)',
      Connector.start({ config, logger: createLogger({ level: 'warn' }) }),
    );
    say(dim(`       input ${topics.arrived}`));
    say(dim(`       results on ${run}.documents.{fraud,quality,classification,decision,dlq}`));
    say(dim(`       tenant directory: ${org.tenants.map((t) => `${t.name} in ${t.cell}`).join(', ')}`));
    say(dim(`       ready in ${seconds(Date.now() - step)}`));

    say('4/4  sending a generated corpus\n');
    const samples = await corpus;
    const byKind = Object.fromEntries(samples.map((s) => [s.kind, s])) as Record<Sample['kind'], Sample>;
    const rows = new Map<string, Row>();
    const events: Array<{ key: string; value: string }> = [];
    const add = (
      id: string,
      what: string,
      value: unknown,
      expect: Row['expect'],
      pipeline = 'FRAUD_ONLY',
      awaited = 3,
      tenant?: string,
    ): void => {
      rows.set(id, {
        event: id,
        what,
        pipeline,
        expect,
        awaited: expect === 'results' ? awaited : 1,
        got: 0,
        carried: [],
        ...(tenant ? { tenant } : {}),
      });
      events.push({ key: id, value: typeof value === 'string' ? value : JSON.stringify(value) });
    };
    const doc = (id: string, s: Sample, extra: Record<string, unknown> = {}) => ({
      event_id: id,
      blob: { url: `file://${s.file}`, sha256: s.sha256 },
      query_id: id,
      attributes: { demo_run: run },
      ...extra,
    });
    add(
      'payslip-clean',
      'clean PDF payslip',
      doc('payslip-clean', byKind['clean-pdf'], { enable_decision: true }),
      'results',
      'FRAUD_ONLY + decision',
      4,
    );
    add(
      'payslip-edited',
      'PDF saved by an image editor',
      doc('payslip-edited', byKind['edited-pdf'], { enable_decision: true }),
      'results',
      'FRAUD_ONLY + decision',
      4,
    );
    add(
      'statement-trusted',
      'PDF from a trusted issuer',
      doc('statement-trusted', byKind['trusted-pdf']),
      'results',
    );
    add(
      'invoice-backdated',
      'PDF modified months later',
      doc('invoice-backdated', byKind['backdated-pdf'], {
        submission_characteristics: {
          document_characteristics: { document_type: 'invoice', source_channel: 'web' },
        },
      }),
      'results',
      'FRAUD_ONLY + characteristics',
    );
    add('id-photo', 'PNG image', doc('id-photo', byKind['png-image']), 'results');
    add(
      'id-photo-quality',
      'PNG image, quality only',
      doc('id-photo-quality', byKind['png-image'], { pipeline_configuration: 'QUALITY_ONLY' }),
      'results',
      'QUALITY_ONLY',
      1,
    );
    add('spreadsheet', 'unsupported file (CSV)', doc('spreadsheet', byKind.unsupported), 'results');
    add('garbage', 'not JSON', '{ this is not json', 'dead letter', '-');
    add('no-id', 'no event_id', { blob: { url: `file://${byKind['clean-pdf'].file}` } }, 'dead letter', '-');
    add(
      'outside',
      'blob outside the allowed roots',
      { event_id: 'outside', blob: { url: 'file:///etc/passwd' } },
      'dead letter',
      '-',
    );
    add(
      'missing',
      'blob that does not exist',
      { event_id: 'missing', blob: { url: `file://${dir}/nope.pdf` } },
      'dead letter',
      '-',
    );
    add(
      'tampered',
      'sha256 that does not match',
      {
        ...doc('tampered', byKind['clean-pdf']),
        blob: { url: `file://${byKind['clean-pdf'].file}`, sha256: '0'.repeat(64) },
      },
      'dead letter',
      '-',
    );
    // One clean PDF of each tenant: created in its tenant's cell by its tenant's application.
    const tenantSamples = await tenantCorpus;
    for (const [i, t] of org.tenants.entries())
      add(
        `${t.name}-payslip`,
        `clean PDF payslip of ${t.name}`,
        doc(`${t.name}-payslip`, tenantSamples[i]!, { tenant: t.name }),
        'results',
        'FRAUD_ONLY',
        3,
        t.name,
      );

    const registry = new Registry({ url: config.registry.url });
    let done = 0;
    const finished = (row: Row) => {
      done += 1;
      const detail = row.dead
        ? red(`dead letter: ${row.dead}`)
        : [
            row.fraud && `fraud ${scoreColor(row.fraud)}`,
            row.quality && `quality ${scoreColor(row.quality)}`,
            row.decision && `decision ${scoreColor(row.decision)}`,
          ]
            .filter(Boolean)
            .join('  ');
      const tenant = row.tenant
        ? dim(`  tenant ${[...new Set(row.carried)].map((t) => t ?? '-').join(',')}`)
        : '';
      say(`  [${String(done).padStart(2)}/${rows.size}] ${row.event.padEnd(18)} ${detail}${tenant}`);
    };
    collector = new OutputReader({ kafka, topics, groupId: `${run}-viewer`, decoder: registry });
    const producing = producer.connect();
    producing.catch(() => undefined);
    await collector.start((m) => {
      const v = m.value!;
      // Dead letters of unreadable events have no event_id: they carry the original key, which is the id.
      const originalKey = Buffer.isBuffer(v.key) ? v.key.toString('utf8') : null;
      const id = m.kind === 'dlq' ? (originalKey ?? (v.event_id as string)) : (v.event_id as string);
      const row = rows.get(id);
      if (!row) return;
      const status = String(v.status ?? '');
      const score = (v.score as string | null) ?? (status !== 'SUCCESS' ? status : undefined);
      if (m.kind === 'fraud') row.fraud = score;
      else if (m.kind === 'quality') row.quality = score;
      else if (m.kind === 'classification') row.classification = (v.document_type as string | null) ?? status;
      else if (m.kind === 'decision') row.decision = (v.decision as string | null) ?? status;
      else row.dead = `${v.stage as string}/${v.error_code as string}`;
      row.carried?.push((v.tenant as string | null | undefined) ?? null);
      row.got += 1;
      if (row.got === row.awaited) finished(row);
    });
    await producing;
    await producer.send(
      topics.arrived,
      events.map((e) => ({ key: e.key, value: e.value })),
    );

    const deadline = Date.now() + options.timeoutMs;
    const allDone = (async () => {
      while (done < rows.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    })();
    await waitingFor(say, 'the analyses (the sandbox takes 0.4-1.4 s per document)', allDone, 5000);

    say('');
    say(resultTable([...rows.values()], tableWidth()).join('\n'));
    const stats = api.stats();
    // Where each tenant's document was created and by which application: the sandbox's record.
    const submissions: SandboxSubmission[] = await sandboxSubmissions(api.baseUrl).catch(() => []);
    const outcomes = [...rows.values()].flatMap((r) => {
      const tenant = org.tenants.find((t) => t.name === r.tenant);
      return tenant ? [tenantOutcome(r.event, tenant, r.carried ?? [], submissions)] : [];
    });
    say('');
    say(tenantTable(outcomes, tableWidth()).join('\n'));
    const ofTenants = submissions.filter((s) => s.tenant_id !== null);
    const tenantsSeen = new Set(ofTenants.map((s) => s.tenant_id)).size;
    const cellsSeen = new Set(ofTenants.map((s) => s.cell)).size;
    const incomplete = [...rows.values()].filter((r) => r.got < r.awaited);
    const wrong = [
      ...[...rows.values()].filter((r) => (r.expect === 'dead letter') !== (r.dead !== undefined)),
      ...outcomes.filter((o) => !o.ok),
    ];
    say(
      `\n${rows.size} events, ${stats.submissionsCreated} submissions, ` +
        `${[...rows.values()].filter((r) => r.dead).length} dead letters, ` +
        `${tenantsSeen} tenants in ${cellsSeen} cells, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    if (incomplete.length > 0 || wrong.length > 0) {
      const events = new Set([...incomplete, ...wrong].map((r) => r.event));
      say(red(`demo incomplete: ${[...events].join(', ')}`));
      return 1;
    }
    say(green('demo complete'));
    return 0;
  } finally {
    const stopping = Date.now();
    if (connector)
      say(dim('stopping the connector (it commits its offsets and leaves its group) and the sandbox'));
    await collector?.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await connector?.stop().catch(() => undefined);
    await sandboxStarting.catch(() => undefined);
    await (sandbox as Sandbox | null)?.close().catch(() => undefined);
    await corpus.catch(() => undefined);
    await tenantCorpus.catch(() => undefined);
    await organisation.catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(keys, { recursive: true, force: true });
    if (connector) say(dim(`stopped in ${seconds(Date.now() - stopping)}`));
    if (!options.keepStack && up && up.started.length > 0) {
      say(dim(`stopping what the demo started: ${up.started.join(', ')}`));
      await stackDown({ ...stackOptions, services: up.started }).catch(() => undefined);
    }
  }
}
