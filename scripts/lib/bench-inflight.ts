/**
 * `npm run bench -- --mode inflight`: live heap per in-flight document. A child process (with
 * `--expose-gc`) runs the real `DocumentEngine` with in-memory ports and admits `--inflight-docs`
 * documents, each with attributes and ~1 KB of characteristics, then measures the live heap (after
 * full GCs) against before, in two phases: every upload pending (the run holds its input and blob),
 * and every document uploaded and waiting for its results (the usual steady state).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { DocumentEngine } from '../../src/connector/document/engine.js';
import { ResultNotReady, type ApiPort } from '../../src/connector/document/ports.js';
import type { ArrivalEvent, OpenedBlob, SourceRecord } from '../../src/connector/types.js';
import { silentLogger } from '../../src/observability/logger.js';
import { PollScheduler } from '../../src/util/scheduler.js';

interface InflightResult {
  docs: number;
  uploadPendingBytesPerDoc: number;
  pollingBytesPerDoc: number;
}

function liveHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
}

const tick = () => new Promise((r) => setTimeout(r, 50));

async function measure(docs: number, uploadsHang: boolean): Promise<number> {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const api: ApiPort = {
    createSubmission: async () => ({
      submission_id: randomUUID(),
      upload_url: `https://upload.example/${randomUUID()}?sig=${'x'.repeat(200)}`,
    }),
    upload: async () => (uploadsHang ? gate : undefined),
    putCharacteristics: async () => undefined,
    getResult: async (kind) => {
      throw new ResultNotReady(kind);
    },
    getReportUrl: async () => '',
    deleteSubmission: async () => undefined,
  };
  const blob = (): OpenedBlob => ({
    open: async () => Readable.from([]),
    size: 100_000,
    contentType: 'application/pdf',
    sha256: undefined,
    cleanup: async () => undefined,
  });
  const scheduler = new PollScheduler();
  const engine = new DocumentEngine(
    {
      api,
      blobs: { resolve: async () => blob() },
      out: { publishResult: async () => undefined, deadLetter: async () => undefined },
      states: { writeState: async () => undefined },
      inputs: { recall: async (p) => p.map(() => null), read: async () => null },
      scheduler,
      logger: silentLogger,
    },
    {
      // Polls are far apart: the measure is what a waiting document holds, not polling garbage.
      pollInitialMs: 600_000,
      pollMaxMs: 600_000,
      deadlineMs: 3_600_000,
      decisionPolling: true,
      deleteAfterPublish: false,
      attachReportUrl: false,
    },
  );
  await tick();
  const before = liveHeap();
  for (let i = 0; i < docs; i++) {
    const eventId = randomUUID();
    const source: SourceRecord = {
      topic: 'documents.arrived',
      partition: i % 4,
      offset: String(i),
      key: null,
      value: null,
      traceparent: `00-${randomUUID().replaceAll('-', '')}-${'a'.repeat(16)}-01`,
    };
    const event: ArrivalEvent = {
      event_id: eventId,
      blob: {
        url: `s3://bucket/documents/${eventId}.pdf`,
        content_type: 'application/pdf',
        size_bytes: 100_000,
        sha256: null,
      },
      query_id: `query-${eventId}`,
      pipeline_configuration: 'FRAUD_ONLY',
      enable_decision: true,
      submission_characteristics: { customer_case_id: `case-${i}`, notes: 'n'.repeat(1000) } as never,
      attributes: { tenant: 'acme', region: 'eu-west-1', source: 'bench' },
      reprocess: false,
    };
    await engine.admit(source, event);
  }
  await tick();
  const after = liveHeap();
  release();
  await engine.stop(1000);
  scheduler.stop();
  return Math.round((after - before) / docs);
}

async function child(docs: number): Promise<void> {
  const uploadPendingBytesPerDoc = await measure(docs, true);
  const pollingBytesPerDoc = await measure(docs, false);
  const result: InflightResult = { docs, uploadPendingBytesPerDoc, pollingBytesPerDoc };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

export function runInflight(options: { docs: number; deadline: number }): Promise<InflightResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      ['--expose-gc', fileURLToPath(import.meta.url), '--inflight-child', String(options.docs)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const timer = setTimeout(() => proc.kill('SIGKILL'), Math.max(1000, options.deadline - Date.now()));
    proc.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`in-flight bench child exited with ${code}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1)!) as InflightResult);
    });
  });
}

export function printInflight(r: InflightResult): void {
  console.log(`\nlive heap per in-flight document (${r.docs} documents, after full GCs):`);
  console.log(`  upload pending (holds input + blob): ${r.uploadPendingBytesPerDoc} B`);
  console.log(`  uploaded, waiting for results:       ${r.pollingBytesPerDoc} B`);
}

if (process.argv[2] === '--inflight-child') {
  child(Number(process.argv[3])).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`in-flight bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
