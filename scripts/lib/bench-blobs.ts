/**
 * `npm run bench -- --mode blobs`: what a blob's scheme costs `docstream run`, side by side in one
 * run: file:// blobs, http:// blobs from a loopback keep-alive server that counts GETs and accepted
 * connections, and s3:// blobs from the stack's S3 store behind the same kind of counting front (the
 * store itself closes every connection after its answer). Each scheme gets its own topics, sandbox and
 * connector process, warm-up documents first; measured: CPU per document of the connector's process
 * tree (/proc), throughput, GETs per blob and accepted connections per document.
 *
 * By default each phase's documents are produced at once and each scheme runs as fast as it can; the
 * stack's S3 store serves ~175 documents a second, so s3's CPU per document then also carries the
 * per-second costs (polls, timers, metrics) spread over fewer documents. `--blob-rate N` produces
 * every scheme's documents at N a second instead (a rate the store sustains, e.g. 120), so CPU per
 * document compares like with like.
 */
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CountingBlobServer } from '../../src/blobs/test-helpers.js';
import { Probe, probeNodeArgs } from './bench-throughput.js';
import { sampleTree } from './process-tree.js';
import { writeCorpus, type SampleKind } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import {
  BROKERS,
  ConnectorProcess,
  OutputCollector,
  deleteTopics,
  ensureInputTopics,
  freePort,
  prefixedTopics,
  produceArrivals,
  produceAtRate,
  round,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  type Arrival,
} from './harness.js';

export type BlobScheme = 'file' | 'http' | 's3';

export interface BlobsOptions {
  docs: number;
  warmupDocs: number;
  latencyMs: number;
  maxInFlight: number;
  partitions: number;
  schemes: BlobScheme[];
  /** Documents produced per second in every scheme's phases; 0: each phase's all at once. */
  blobRate: number;
  /** Where each scheme's connector writes a CPU profile of its measured documents; null: none. */
  cpuProfDir: string | null;
  deadline: number;
  log: (line: string) => void;
}

export interface BlobsMeasure {
  scheme: BlobScheme;
  docs: number;
  completed: number;
  deadLetters: number;
  durationS: number;
  /** Documents produced per second over the measured phase (the rate asked, when one was). */
  arrivalDocsPerS: number;
  throughputDocsPerS: number;
  /** user + system CPU of the connector's process tree over the measured documents, per document. */
  cpuMsPerDoc: number;
  /** GET requests the blob server saw per measured document (null for file://). */
  getsPerBlob: number | null;
  /** Connections the blob server accepted per measured document (null for file://). */
  connectionsPerDoc: number | null;
}

export interface BlobsResult {
  options: Omit<BlobsOptions, 'deadline' | 'log' | 'cpuProfDir'>;
  loadAverage: number[];
  runs: BlobsMeasure[];
  targets: Record<string, { value: number | null; target: string; met: boolean }>;
}

/** The throughput bench's corpus: documents the sandbox analyses (no unsupported file). */
const KINDS: SampleKind[] = ['clean-pdf', 'edited-pdf', 'trusted-pdf', 'backdated-pdf', 'png-image'];
const S3_ENDPOINT = process.env.DOCSTREAM_BLOBS_S3_ENDPOINT ?? 'http://localhost:9002';

function arrival(eventId: string, url: string): Arrival {
  return {
    event_id: eventId,
    value: JSON.stringify({ event_id: eventId, blob: { url }, query_id: eventId }),
  };
}

async function runScheme(
  scheme: BlobScheme,
  o: BlobsOptions,
  kafka: KafkaClient,
  dir: string,
  urls: string[],
  blobs: Record<string, unknown>,
  counter: CountingBlobServer | null,
): Promise<BlobsMeasure> {
  const id = uniqueName(`blobs-${scheme}`);
  const topics = prefixedTopics(id, o.partitions);
  const sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: o.latencyMs },
    rateLimit: { ratePerSecond: 10_000, burst: 2000 },
    maxSubmissions: (o.docs + o.warmupDocs) * 2,
  });
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  let connector: ConnectorProcess | null = null;
  try {
    await ensureInputTopics(kafka, topics);
    const httpPort = await freePort();
    const file = writeConnectorConfig(dir, {
      topics,
      groupId: `${id}-group`,
      apiBaseUrl: sandbox.baseUrl,
      ratePerSecond: 10_000,
      maxInFlight: o.maxInFlight,
      fileRoots: [dir],
      httpPort,
    });
    const config = JSON.parse(fs.readFileSync(file, 'utf8')) as { blobs: Record<string, unknown> };
    config.blobs = { ...config.blobs, ...blobs };
    fs.writeFileSync(file, JSON.stringify(config, null, 2));
    connector = o.cpuProfDir
      ? new ConnectorProcess(file, httpPort, { nodeArgs: probeNodeArgs(), ipc: true })
      : new ConnectorProcess(file, httpPort);
    const probe = o.cpuProfDir ? new Probe(connector.child) : null;
    await connector.ready();
    await collector.start();
    await producer.connect();
    const send = async (prefix: string, n: number) => {
      const batch = Array.from({ length: n }, (_, i) => arrival(`${prefix}-${i}`, urls[i % urls.length]!));
      const sentAt =
        o.blobRate > 0
          ? await produceAtRate(producer, topics.arrived, batch, o.blobRate, o.deadline)
          : await produceArrivals(producer, topics.arrived, batch);
      const ids = batch.map((a) => a.event_id);
      const ok = await waitUntil(() => ids.every((e) => collector.settled(e)), o.deadline - Date.now());
      if (!ok) throw new Error(`${scheme}: documents not settled before the time limit`);
      const times = [...sentAt.values()];
      return { ids, start: Math.min(...times), producedS: (Math.max(...times) - Math.min(...times)) / 1000 };
    };
    const pace = o.blobRate > 0 ? ` at ${o.blobRate}/s` : '';
    o.log(`${scheme}: warming up with ${o.warmupDocs} documents${pace} (not measured)`);
    if (o.warmupDocs > 0) await send(`${id}-warm`, o.warmupDocs);
    // The profile covers the measured documents only (not start-up, not the warm-up).
    if (probe) await probe.profile('start');
    const cpuBefore = sampleTree(connector.pid).cpuMs;
    const gets = counter?.gets ?? 0;
    const connections = counter?.connections ?? 0;
    o.log(`${scheme}: ${o.docs} documents${pace} (measured)`);
    const { ids, start, producedS } = await send(id, o.docs);
    const durationS = Math.max(0.001, (Date.now() - start) / 1000);
    const cpuMs = sampleTree(connector.pid).cpuMs - cpuBefore;
    if (probe && o.cpuProfDir) {
      fs.mkdirSync(o.cpuProfDir, { recursive: true });
      const written = await probe.profile('stop', path.join(o.cpuProfDir, `${id}-connector.cpuprofile`));
      o.log(
        `${scheme}: ${written ? 'CPU profile written' : "the connector's CPU profile could not be taken"}`,
      );
    }
    let completed = 0;
    let deadLetters = 0;
    for (const e of ids) {
      if (collector.complete(e)) completed += 1;
      if (collector.byEvent.get(e)?.deadLetters.length) deadLetters += 1;
    }
    return {
      scheme,
      docs: ids.length,
      completed,
      deadLetters,
      durationS: round(durationS, 2),
      arrivalDocsPerS: round(ids.length / Math.max(0.001, producedS), 1),
      throughputDocsPerS: round(completed / durationS, 1),
      cpuMsPerDoc: round(cpuMs / ids.length, 3),
      getsPerBlob: counter ? round((counter.gets - gets) / ids.length, 3) : null,
      connectionsPerDoc: counter ? round((counter.connections - connections) / ids.length, 3) : null,
    };
  } finally {
    await connector?.stop();
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
  }
}

export async function runBlobs(o: BlobsOptions): Promise<BlobsResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-blobs-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  // The stack's store takes any key pair; the connector child inherits these.
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  const http = await new CountingBlobServer().start();
  const s3Front = await new CountingBlobServer(new URL(S3_ENDPOINT)).start();
  const bucket = uniqueName('bench-blobs').toLowerCase();
  const admin = new S3Client({ endpoint: S3_ENDPOINT, region: 'us-east-1', forcePathStyle: true });
  const runs: BlobsMeasure[] = [];
  try {
    const files = (await writeCorpus(dir, KINDS)).map((s) => s.file);
    const names = files.map((f) => path.basename(f));
    const httpUrls = files.map((f, i) => http.put(`/${names[i]}`, fs.readFileSync(f)));
    if (o.schemes.includes('s3')) {
      await admin.send(new CreateBucketCommand({ Bucket: bucket }));
      for (const [i, f] of files.entries()) {
        await admin.send(new PutObjectCommand({ Bucket: bucket, Key: names[i], Body: fs.readFileSync(f) }));
      }
    }
    for (const scheme of o.schemes) {
      if (scheme === 'file') {
        runs.push(
          await runScheme(
            'file',
            o,
            kafka,
            dir,
            files.map((f) => `file://${f}`),
            {},
            null,
          ),
        );
      } else if (scheme === 'http') {
        const blobs = { httpHosts: [http.host], allowPrivateNetworks: true };
        runs.push(await runScheme('http', o, kafka, dir, httpUrls, blobs, http));
      } else {
        const urls = names.map((n) => `s3://${bucket}/${n}`);
        const blobs = { s3Buckets: [bucket], s3Endpoint: s3Front.origin, s3ForcePathStyle: true };
        runs.push(await runScheme('s3', o, kafka, dir, urls, blobs, s3Front));
      }
      o.log(`${scheme}: ${JSON.stringify(runs[runs.length - 1])}`);
    }
  } finally {
    admin.destroy();
    await http.stop();
    await s3Front.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const { deadline: _deadline, log: _log, cpuProfDir: _cpuProfDir, ...options } = o;
  return { options, loadAverage: os.loadavg(), runs, targets: targetsOf(runs) };
}

/** The targets of issue 31, judged on this run. */
function targetsOf(runs: BlobsMeasure[]): BlobsResult['targets'] {
  const file = runs.find((r) => r.scheme === 'file');
  const out: BlobsResult['targets'] = {};
  for (const r of runs) {
    if (r.scheme === 'file') continue;
    out[`${r.scheme} GETs per blob`] = {
      value: r.getsPerBlob,
      target: '≤ 1.05',
      met: (r.getsPerBlob ?? 99) <= 1.05,
    };
    out[`${r.scheme} connections per document`] = {
      value: r.connectionsPerDoc,
      target: '≤ 0.1',
      met: (r.connectionsPerDoc ?? 99) <= 0.1,
    };
    if (file) {
      const extra = round(r.cpuMsPerDoc - file.cpuMsPerDoc, 3);
      out[`${r.scheme} CPU per document over file's (ms)`] = {
        value: extra,
        target: '≤ 0.1',
        met: extra <= 0.1,
      };
    }
  }
  return out;
}

export function printBlobs(result: BlobsResult): void {
  const { docs, warmupDocs, blobRate } = result.options;
  const arrivals = blobRate > 0 ? `produced at ${blobRate}/s` : 'each phase produced at once';
  console.log(
    `\nblobs: ${docs} measured documents per scheme after ${warmupDocs} warm-up, ${arrivals}; load ${result.loadAverage.map((l) => l.toFixed(2)).join(' ')}`,
  );
  console.log('scheme  done   dead letters  s      in/s     docs/s   CPU ms/doc  GETs/blob  connections/doc');
  for (const r of result.runs) {
    console.log(
      [
        r.scheme.padEnd(6),
        String(r.completed).padStart(5),
        String(r.deadLetters).padStart(13),
        String(r.durationS).padStart(6),
        String(r.arrivalDocsPerS).padStart(8),
        String(r.throughputDocsPerS).padStart(8),
        String(r.cpuMsPerDoc).padStart(11),
        String(r.getsPerBlob ?? '-').padStart(10),
        String(r.connectionsPerDoc ?? '-').padStart(16),
      ].join(' '),
    );
  }
  for (const [name, t] of Object.entries(result.targets)) {
    console.log(`${t.met ? 'met   ' : 'MISSED'} ${name}: ${t.value} (target ${t.target})`);
  }
}
