/**
 * `docstream demo`: the main job on the embedded default. Starts what is missing of the local stack,
 * the sandbox and the connector; sends a generated corpus (clean and suspicious PDFs, an image, an
 * unsupported file, and malformed events); shows each document as its results arrive; ends with a table
 * of results and dead letters; stops what it started.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { loadConfig, prefixedTopics } from '../config/index.js';
import { Connector } from '../connector/connector.js';
import { OutputReader } from '../connector/output-reader.js';
import { KafkaClient } from '../kafka/client.js';
import { createLogger } from '../observability/logger.js';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { Registry } from '../serde/registry.js';
import { defaultStackOptions, stackDown, stackUp, type ServiceName } from '../stack/index.js';
import { writeCorpus, type Sample } from './corpus.js';

interface DemoOptions {
  /** Keep the stack running afterwards even if the demo started it. */
  keepStack: boolean;
  timeoutMs: number;
  out: (line: string) => void;
}

interface Row {
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
}

const color = (code: number) => (s: string) => (process.stdout.isTTY ? `\u001b[${code}m${s}\u001b[0m` : s);
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

function table(rows: string[][]): string {
  const plain = (s: string) => stripVTControlCharacters(s);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => plain(r[i] ?? '').length)));
  return rows
    .map((r) => r.map((cell, i) => cell + ' '.repeat(widths[i]! - plain(cell).length)).join('  '))
    .join('\n');
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
  const up = await stackUp(stackOptions);

  const run = `demo-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}-${randomBytes(2).toString('hex')}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-demo-'));
  let sandbox: Sandbox | null = null;
  let connector: Connector | null = null;
  const kafka = new KafkaClient({ brokers: ['localhost:9092'], clientId: 'docstream-demo' });
  const producer = kafka.producer();
  let collector: OutputReader | null = null;
  try {
    say('2/4  sandbox of the Document Analysis API');
    sandbox = await startSandbox({
      port: (await listenable(8080)) ? 8080 : 0,
      processing: { distribution: 'uniform', meanMs: 900, minMs: 400, maxMs: 1400 },
    });
    say(dim(`       ${sandbox.baseUrl} (client sandbox-client)`));

    say('3/4  connector');
    const topics = prefixedTopics(run, 1);
    const config = loadConfig({
      overrides: {
        topics,
        kafka: { groupId: `${run}-connector` },
        api: { baseUrl: sandbox.baseUrl },
        connector: { pollInitialMs: 300, pollMaxMs: 2000 },
        blobs: { fileRoots: [dir] },
      },
    });
    connector = await Connector.start({ config, logger: createLogger({ level: 'warn' }) });
    say(
      dim(
        `       input ${topics.arrived}; results on ${run}.documents.{fraud,quality,classification,decision,dlq}`,
      ),
    );

    say('4/4  sending a generated corpus\n');
    const samples = await writeCorpus(dir);
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
    ): void => {
      rows.set(id, {
        event: id,
        what,
        pipeline,
        expect,
        awaited: expect === 'results' ? awaited : 1,
        got: 0,
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
      say(`  [${String(done).padStart(2)}/${rows.size}] ${row.event.padEnd(18)} ${detail}`);
    };
    collector = new OutputReader({ kafka, topics, groupId: `${run}-viewer`, decoder: registry });
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
      row.got += 1;
      if (row.got === row.awaited) finished(row);
    });
    await producer.connect();
    await producer.send(
      topics.arrived,
      events.map((e) => ({ key: e.key, value: e.value })),
    );

    const deadline = Date.now() + options.timeoutMs;
    while (done < rows.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));

    say('');
    const header = ['event', 'document', 'pipeline', 'fraud', 'quality', 'class', 'decision', 'dead letter'];
    const body = [...rows.values()].map((r) => [
      r.event,
      r.what,
      r.pipeline,
      scoreColor(r.fraud),
      scoreColor(r.quality),
      r.classification ?? '',
      scoreColor(r.decision),
      r.dead ? red(r.dead) : '',
    ]);
    say(table([header, ...body]));
    const stats = sandbox.stats();
    const incomplete = [...rows.values()].filter((r) => r.got < r.awaited);
    const wrong = [...rows.values()].filter((r) => (r.expect === 'dead letter') !== (r.dead !== undefined));
    say(
      `\n${rows.size} events, ${stats.submissionsCreated} submissions, ` +
        `${[...rows.values()].filter((r) => r.dead).length} dead letters, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    if (incomplete.length > 0 || wrong.length > 0) {
      say(red(`demo incomplete: ${[...incomplete, ...wrong].map((r) => r.event).join(', ')}`));
      return 1;
    }
    say(green('demo complete'));
    return 0;
  } finally {
    await collector?.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await connector?.stop().catch(() => undefined);
    await sandbox?.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    if (!options.keepStack && up.started.length > 0) {
      say(dim(`stopping what the demo started: ${up.started.join(', ')}`));
      await stackDown({ ...stackOptions, services: up.started }).catch(() => undefined);
    }
  }
}
