/**
 * The churn scenario of `npm run resilience -- --churn`: what an autoscaler and a rolling update do
 * together, under a slow API. Five members of one group join and leave within about 40 s while
 * documents arrive at a steady pace and every API call is held `apiDelayMs`: a member is SIGKILLed
 * 0.3 s after the next one started (it is restoring and resuming the partitions it was just given),
 * another is stopped with SIGTERM 0.5 s after the next one started (it is preparing its
 * partitions), and the first member is stopped with SIGTERM in the middle. Then it waits for every
 * document and counts what the promise is about: documents analysed twice, lost, dead-lettered,
 * result records per result (read_committed) and empty submissions.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import type { Delivery } from '../../src/connector/outputs/delivery-modes.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
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
  sleep,
  uniqueName,
  uploadsPerQuery,
  waitUntil,
  writeConnectorConfig,
  type Arrival,
} from './harness.js';

export interface ChurnOptions {
  docs: number;
  partitions: number;
  delivery: Delivery;
  /** Every API call is held this long by the sandbox while the members come and go. */
  apiDelayMs: number;
  /** How long the documents take to arrive (at a steady pace). */
  arrivalMs: number;
  /** The members' session: a SIGKILLed member holds its partitions until it runs out. */
  sessionTimeoutMs: number;
  /** Bound on the whole run, in ms. */
  timeoutMs: number;
  log?: (line: string) => void;
}

export const CHURN: ChurnOptions = {
  docs: 300,
  partitions: 12,
  delivery: 'at-least-once',
  apiDelayMs: 5000,
  arrivalMs: 40_000,
  sessionTimeoutMs: 10_000,
  timeoutMs: 420_000,
};

export interface ChurnReport {
  options: Omit<ChurnOptions, 'log'>;
  durationS: number;
  /** What happened to the members, in order, with the time since the start. */
  moves: string[];
  documentsIn: number;
  resultsOut: number;
  /** Result records per awaited result of the documents with every result (1 = none twice). */
  resultRecordsPerResult: number;
  deadLetters: number;
  deadLetterCodes: Record<string, number>;
  analysedTwice: number;
  analysedTwiceQueryIds: string[];
  emptySubmissions: number;
  /** Empty submissions by the last member move before the sandbox created them. */
  emptyAfter: Record<string, number>;
  lost: number;
  lostIds: string[];
  /** Members that exited on their own (not stopped or killed by the scenario), with their log tail. */
  ownExits: string[];
}

export async function runChurn(options: ChurnOptions): Promise<ChurnReport> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const moves: string[] = [];
  const moveTimes: Array<{ what: string; at: number }> = [];
  const move = (what: string) => {
    moves.push(`${at()} ${what}`);
    moveTimes.push({ what, at: Date.now() });
    log(what);
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-churn-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-churn' });
  const id = uniqueName('churn');
  const topics = prefixedTopics(id, options.partitions);
  const sandbox: Sandbox = await startSandbox({
    processing: { distribution: 'uniform', meanMs: 1500, minMs: 500, maxMs: 2500 },
    rateLimit: { ratePerSecond: 100, burst: 20 },
  });
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  const members = new Map<string, ConnectorProcess>();
  /** Members the scenario stopped or killed: any other exit is the connector's own. */
  const ended = new Set<string>();
  try {
    const corpus = await writeCorpus(dir, ['clean-pdf', 'edited-pdf', 'trusted-pdf', 'png-image']);
    const input: Arrival[] = Array.from({ length: options.docs }, (_, i) => {
      const eventId = `${id}-doc-${i}`;
      return { event_id: eventId, value: arrivalJson(eventId, corpus[i % corpus.length]!.file) };
    });
    await ensureInputTopics(kafka, topics);
    await producer.connect();
    const spawnMember = async (name: string): Promise<ConnectorProcess> => {
      const port = await freePort();
      const config = writeConnectorConfig(dir, {
        topics,
        groupId: `${id}-group`,
        apiBaseUrl: sandbox.baseUrl,
        ratePerSecond: 100,
        maxInFlight: 200,
        fileRoots: [dir],
        httpPort: port,
        kafka: { sessionTimeoutMs: options.sessionTimeoutMs },
        connector: { pollInitialMs: 300, pollMaxMs: 2000, delivery: options.delivery, admissionWaitMs: 1000 },
      });
      const member = new ConnectorProcess(config, port);
      members.set(name, member);
      move(`${name} started`);
      return member;
    };
    const ready = async (name: string) => {
      await members.get(name)!.ready(120_000);
      move(`${name} ready`);
    };
    const kill = (name: string) => {
      ended.add(name);
      members.get(name)!.kill('SIGKILL');
      move(`${name} SIGKILLed`);
    };
    const terminate = (name: string) => {
      ended.add(name);
      move(`${name} sent SIGTERM`);
      const member = members.get(name)!;
      void member.stop(60_000).then((code) => move(`${name} exited (${code})`));
    };

    sandbox.configure({ faults: { extraLatencyMs: options.apiDelayMs } });
    await spawnMember('m1');
    await ready('m1');
    // The first member created the output topics.
    await collector.start();
    // The documents arrive at a steady pace over `arrivalMs`, in the background.
    const pace = options.arrivalMs / options.docs;
    const arriving = (async () => {
      for (let i = 0; i < input.length && Date.now() < deadline; i += 5) {
        await produceArrivals(producer, topics.arrived, input.slice(i, i + 5));
        await sleep(pace * 5);
      }
    })();

    await sleep(3000);
    await spawnMember('m2');
    await ready('m2');
    // m2 was just given its partitions: killed 0.3 s after the next member started, while it
    // restores and resumes them (and m3's join moves them again).
    await spawnMember('m3');
    await sleep(300);
    kill('m2');
    await ready('m3');
    await sleep(3000);
    // m3 stopped with SIGTERM 0.5 s after the next member started, while it prepares its partitions.
    await spawnMember('m4');
    await sleep(500);
    terminate('m3');
    await ready('m4');
    await sleep(2000);
    // The first member leaves in the middle of it all.
    terminate('m1');
    await spawnMember('m5');
    await ready('m5');
    await arriving;
    move('all documents produced');
    sandbox.configure({ faults: { extraLatencyMs: 0 } });

    const settled = () => input.filter((a) => collector.settled(a.event_id)).length;
    await waitUntil(
      () => settled() === input.length,
      Math.max(0, deadline - Date.now()),
      () => log(`${settled()}/${input.length} settled`),
    );
    // Late duplicates change the counts: let them arrive.
    await sleep(3000);

    let resultsOut = 0;
    let completeRecords = 0;
    let awaited = 0;
    let deadLetters = 0;
    const deadLetterCodes: Record<string, number> = {};
    const lostIds: string[] = [];
    for (const a of input) {
      const o = collector.byEvent.get(a.event_id);
      if (collector.complete(a.event_id)) {
        resultsOut += 1;
        completeRecords += o!.resultRecords;
        awaited += o!.results.size;
      }
      if (o?.deadLetters.length) {
        deadLetters += 1;
        const code = `${o.deadLetters[0]!.stage}/${o.deadLetters[0]!.error_code}`;
        deadLetterCodes[code] = (deadLetterCodes[code] ?? 0) + 1;
      }
      if (!collector.settled(a.event_id)) lostIds.push(a.event_id);
    }
    const { analysedTwice, empty } = await uploadsPerQuery(sandbox.baseUrl);
    const emptyAfter = await emptiesByMove(sandbox.baseUrl, moveTimes);
    const ownExits = [...members]
      .filter(([name, m]) => !ended.has(name) && !m.running)
      .map(([name, m]) => `${name} (code ${m.child.exitCode}): ${m.logTail.slice(-500)}`);
    return {
      options: { ...options, log: undefined } as Omit<ChurnOptions, 'log'>,
      durationS: Math.round((Date.now() - started) / 1000),
      moves,
      documentsIn: input.length,
      resultsOut,
      resultRecordsPerResult: awaited > 0 ? Math.round((completeRecords / awaited) * 1000) / 1000 : 0,
      deadLetters,
      deadLetterCodes,
      analysedTwice: analysedTwice.length,
      analysedTwiceQueryIds: analysedTwice,
      emptySubmissions: empty,
      emptyAfter,
      lost: lostIds.length,
      lostIds,
      ownExits,
    };
  } finally {
    // The counts are taken: the members are killed, not stopped (nothing reads what they do now).
    for (const member of members.values()) {
      if (!member.running) continue;
      member.kill('SIGKILL');
      await member.exited;
    }
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The sandbox's submissions never given a file, by the last member move before each was created. */
async function emptiesByMove(
  baseUrl: string,
  moves: Array<{ what: string; at: number }>,
): Promise<Record<string, number>> {
  const res = await fetch(`${baseUrl}/_sandbox/submissions`);
  const { items } = (await res.json()) as { items: Array<{ sha256: string | null; created: string }> };
  const out: Record<string, number> = {};
  for (const s of items) {
    if (s.sha256 !== null) continue;
    const created = Date.parse(s.created);
    let last = 'none';
    for (const m of moves) if (m.at <= created) last = m.what;
    out[last] = (out[last] ?? 0) + 1;
  }
  return out;
}

export function printChurnReport(r: ChurnReport): void {
  const lines = [
    `churn (${r.durationS} s, delivery ${r.options.delivery}, ${r.options.partitions} partitions, ` +
      `every API call held ${r.options.apiDelayMs} ms during the churn)`,
    `  moves:                 ${r.moves.join(', ')}`,
    `  documents in:          ${r.documentsIn}`,
    `  results out:           ${r.resultsOut} documents with every result`,
    `  result records per result: ${r.resultRecordsPerResult} (read_committed; 1 = none published twice)`,
    `  dead letters:          ${r.deadLetters}${r.deadLetters ? ` ${JSON.stringify(r.deadLetterCodes)}` : ''}`,
    `  analysed twice:        ${r.analysedTwice}` +
      (r.analysedTwice ? ` (${r.analysedTwiceQueryIds.slice(0, 10).join(', ')})` : ''),
    `  empty submissions:     ${r.emptySubmissions} (created, never given a file: never analysed)` +
      (r.emptySubmissions
        ? `; by the move before each was created: ${Object.entries(r.emptyAfter)
            .map(([m, n]) => `${m} ${n}`)
            .join(', ')}`
        : ''),
    `  lost documents:        ${r.lost}${r.lost ? ` (${r.lostIds.slice(0, 10).join(', ')})` : ''}`,
    `  members that exited on their own: ${r.ownExits.length ? r.ownExits.join('\n    ') : 'none'}`,
  ];
  console.log(lines.join('\n'));
}

/** The scenario's verdict: what the churn must not cost. */
export function churnFailures(r: ChurnReport): string[] {
  const out: string[] = [];
  if (r.analysedTwice > 0) out.push(`${r.analysedTwice} analysed twice`);
  if (r.lost > 0) out.push(`${r.lost} lost`);
  if (r.deadLetters > 0) out.push(`${r.deadLetters} dead letters`);
  if (r.emptySubmissions > 5) out.push(`${r.emptySubmissions} empty submissions (more than 5)`);
  if (r.options.delivery === 'exactly-once' && r.resultRecordsPerResult !== 1)
    out.push(`${r.resultRecordsPerResult} result records per result (exactly-once: 1)`);
  if (r.ownExits.length > 0) out.push(`${r.ownExits.length} members exited on their own`);
  return out;
}
