/**
 * Stream mode of the benchmark: one large file:// blob per run through a fresh `docstream run` child,
 * uploaded to the sandbox, with the child's peak resident memory read from /proc. Run at two sizes,
 * it shows whether memory follows the file size (it must not: uploads stream).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox } from '../../src/sandbox/index.js';
import {
  BROKERS,
  ConnectorProcess,
  round,
  OutputCollector,
  arrivalJson,
  deleteTopics,
  ensureInputTopics,
  freePort,
  produceArrivals,
  prefixedTopics,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
} from './harness.js';

interface StreamOptions {
  sizesMb: number[];
  deadline: number;
  log: (line: string) => void;
}

export interface StreamMeasure {
  sizeMb: number;
  outcome: 'results' | 'dead-letter' | 'timeout';
  deadLetter: string | null;
  uploadSeconds: number;
  idleRssMb: number | null;
  peakRssMb: number | null;
  /** Peak minus the resident set measured once ready and idle: what the document itself cost. */
  growthMb: number | null;
}

const BLOCK = 1024 * 1024;

/** Writes `sizeMb` MiB of random-looking bytes (one random block, each copy stamped with its index). */
async function writeLargeFile(file: string, sizeMb: number): Promise<void> {
  const block = randomBytes(BLOCK);
  const out = fs.createWriteStream(file);
  for (let i = 0; i < sizeMb; i++) {
    const chunk = Buffer.from(block);
    chunk.writeUInt32BE(i, 0);
    chunk.writeUInt32BE(i ^ 0x5bd1e995, BLOCK - 4);
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  out.end();
  await finished(out);
}

async function streamOne(
  sizeMb: number,
  o: StreamOptions,
  kafka: KafkaClient,
  dir: string,
): Promise<StreamMeasure> {
  const file = path.join(dir, `large-${sizeMb}mb.bin`);
  o.log(`stream: writing a ${sizeMb} MiB file`);
  await writeLargeFile(file, sizeMb);
  const bytes = sizeMb * BLOCK;
  const sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: 200 },
    maxUploadBytes: bytes + BLOCK,
  });
  const id = uniqueName('bench-stream');
  const topics = prefixedTopics(id, 1);
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  let connector: ConnectorProcess | null = null;
  try {
    await ensureInputTopics(kafka, topics);
    const httpPort = await freePort();
    connector = new ConnectorProcess(
      writeConnectorConfig(dir, {
        topics,
        groupId: `${id}-group`,
        apiBaseUrl: sandbox.baseUrl,
        ratePerSecond: 50,
        maxInFlight: 10,
        fileRoots: [dir],
        httpPort,
        maxBytes: bytes + BLOCK,
        api: { timeoutMs: 600_000 },
      }),
      httpPort,
    );
    await connector.ready();
    await collector.start();
    await producer.connect();
    // Let start-up allocations settle before the idle reading.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const idle = connector.memoryKb('VmRSS');
    const eventId = `${id}-doc`;
    const started = Date.now();
    await produceArrivals(producer, topics.arrived, [
      { event_id: eventId, value: arrivalJson(eventId, file) },
    ]);
    let uploadSeconds = Number.NaN;
    const settled = await waitUntil(
      () => {
        if (Number.isNaN(uploadSeconds) && sandbox.stats().uploads > 0)
          uploadSeconds = (Date.now() - started) / 1000;
        return collector.settled(eventId);
      },
      o.deadline - Date.now(),
      () =>
        o.log(
          `stream: ${sizeMb} MiB in progress, RSS ${Math.round((connector?.memoryKb('VmRSS') ?? 0) / 1024)} MB`,
        ),
    );
    const peak = connector.memoryKb('VmHWM');
    const outcome = collector.byEvent.get(eventId);
    const deadLetter = outcome?.deadLetters[0];
    return {
      sizeMb,
      outcome: !settled ? 'timeout' : deadLetter ? 'dead-letter' : 'results',
      deadLetter: deadLetter ? `${deadLetter.stage}/${deadLetter.error_code}` : null,
      uploadSeconds: round(uploadSeconds, 1),
      idleRssMb: idle === null ? null : round(idle / 1024, 1),
      peakRssMb: peak === null ? null : round(peak / 1024, 1),
      growthMb: idle === null || peak === null ? null : round((peak - idle) / 1024, 1),
    };
  } finally {
    if (connector) await connector.stop();
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
    fs.rmSync(file, { force: true });
  }
}

export async function runStream(o: StreamOptions): Promise<StreamMeasure[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-bench-stream-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  const out: StreamMeasure[] = [];
  try {
    for (const size of o.sizesMb) out.push(await streamOne(size, o, kafka, dir));
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
