/**
 * `npm run resilience`: documents flow through `docstream run` (a child process) on the real stack
 * while the suite SIGKILLs and restarts the connector at random moments, storms the sandbox with
 * 5xx answers, dropped connections and 429s, restarts Kafka (long form), and mixes malformed input
 * in. Then it waits for the end and counts: documents in, results out, dead letters (expected or
 * not), documents analysed twice (a file uploaded to two submissions of one event), empty submissions
 * left behind (created, never given a file: a lost create answer or a kill before the state record),
 * good documents dead-lettered by the 5xx/drop storms, result records per document, lost documents.
 * Exits non-zero when anything was lost or analysed twice.
 *
 *   npm run resilience -- --short      CI size: 100 documents, 2 kills, short storms (~1.5 min)
 *   npm run resilience                 1000 documents, 10 kills, a Kafka restart and stall, a rebalance,
 *                                      a scale-out and a scale-in while creates are slow, storms
 *   npm run resilience -- --group-moves=false   without the stall and the slow-API scale events
 *   npm run resilience -- --delivery exactly-once   the same with connector.delivery = exactly-once
 *   npm run resilience -- --churn      five members joining and leaving under a slow API (`lib/churn.ts`)
 *
 * Some of the kills (--crash-point-kills) fall between a result's publication and its state record:
 * the connectors run with DOCSTREAM_TEST_CRASH_AFTER_PUBLISH=0 (`src/connector/consumer/crash-point.ts`) and
 * the suite sends SIGUSR2, so the connector SIGKILLs itself right after the next result was handed to
 * Kafka. The rebalance: a second connector joins the group, works a few seconds and leaves. The
 * collector reads the outputs read_committed (kafkajs' default), so under exactly-once a result of an
 * aborted or fenced transaction is never counted.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeCorpus, type SampleKind } from '../src/demo/corpus.js';
import { CRASH_AFTER_PUBLISH_ENV } from '../src/connector/consumer/crash-point.js';
import type { Delivery } from '../src/connector/outputs/delivery-modes.js';
import { KafkaClient } from '../src/kafka/index.js';
import {
  startSandbox,
  type DeepPartial,
  type Sandbox,
  type SandboxConfig,
  type SandboxStats,
} from '../src/sandbox/index.js';
import { defaultStackOptions } from '../src/stack/options.js';
import { servicePaths } from '../src/stack/paths.js';
import { readPidFile } from '../src/stack/process.js';
import {
  BROKERS,
  CLI,
  ConnectorProcess,
  OutputCollector,
  arrivalJson,
  deleteTopics,
  endOfRun,
  ensureInputTopics,
  freePort,
  parseFlags,
  produceArrivals,
  recordedSubmissions,
  sleep,
  prefixedTopics,
  uploadsPerQuery,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
  type Arrival,
} from './lib/harness.js';
import { CHURN, churnFailures, printChurnReport, runChurn, type ChurnOptions } from './lib/churn.js';
import { malformedInputs, type MalformedInput } from './lib/malformed.js';

/** Counts re-emitted result records by the latest action that started before each was written. */
function reemittedByAction(
  repeats: number[],
  actionTimes: Array<{ action: string; at: number }>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const at of repeats) {
    let last = 'none';
    for (const a of actionTimes) if (a.at <= at) last = a.action;
    out[last] = (out[last] ?? 0) + 1;
  }
  return out;
}

export interface ResilienceOptions {
  docs: number;
  malformed: number;
  kills: number;
  /** How many of the kills are at the crash point after a result's publication (part of `kills`). */
  crashPointKills: number;
  /** A second connector joins the group mid-run and leaves again. */
  rebalance: boolean;
  delivery: Delivery;
  partitions: number;
  storms: boolean;
  stormMs: number;
  kafkaRestart: boolean;
  /**
   * The group's and Kafka's routine moves while creates are slow (every API call slower than the
   * admission wait): the broker stalled past the session timeout (SIGSTOP, SIGCONT), a second
   * member joining, and a member stopped with SIGTERM.
   */
  groupMoves: boolean;
  /**
   * The members' session timeout: a SIGKILLed member holds its partitions until its session ends,
   * so each kill costs about this long before its successor is ready; the stall outlasts it. An idle
   * or fully paused member heartbeats only about every 5 s (kafkajs's fetch wait): keep a margin.
   */
  sessionTimeoutMs: number;
  /** Bound on the whole run, in ms. */
  timeoutMs: number;
  seed?: number;
  log?: (line: string) => void;
}

export const SHORT: ResilienceOptions = {
  docs: 100,
  malformed: 16,
  kills: 2,
  crashPointKills: 1,
  rebalance: false,
  delivery: 'at-least-once',
  partitions: 2,
  storms: true,
  stormMs: 3000,
  kafkaRestart: false,
  groupMoves: false,
  sessionTimeoutMs: 8000,
  timeoutMs: 240_000,
};

export const LONG: ResilienceOptions = {
  docs: 1000,
  malformed: 80,
  kills: 10,
  crashPointKills: 4,
  rebalance: true,
  delivery: 'at-least-once',
  partitions: 3,
  storms: true,
  stormMs: 8000,
  kafkaRestart: true,
  groupMoves: true,
  sessionTimeoutMs: 10_000,
  timeoutMs: 900_000,
};

export interface ResilienceReport {
  options: Omit<ResilienceOptions, 'log'>;
  durationS: number;
  documentsIn: number;
  goodIn: number;
  malformedIn: number;
  resultsOut: number;
  resultRecords: number;
  deadLetters: { expected: number; unexpected: number; unexpectedByCode: Record<string, number> };
  /** Events with more than one submission in the sandbox... */
  duplicateSubmissions: number;
  duplicateQueryIds: string[];
  /**
   * ...of which the first was never recorded in the state topic: the connector was killed between
   * the create and the state write, the window the design documents (the API has no idempotency key).
   */
  duplicatesInCrashWindow: number;
  /** ...and those created although another submission of the event was recorded: broken promise. */
  duplicatesAfterRecording: number;
  /** Events whose file was uploaded to more than one submission: analysed (and billed) twice. */
  analysedTwice: number;
  analysedTwiceQueryIds: string[];
  /** Submissions never given a file (no sha256): left by a resent create or a kill before recording. */
  emptySubmissions: number;
  /** Good documents dead-lettered with a 5xx or a connection failure (what the storms cause). */
  goodDeadLetteredByStorms: number;
  /**
   * Result records per awaited result of the documents with every result (1.0 = none published
   * twice; a redelivered document publishes its results again).
   */
  resultRecordsPerDocument: number;
  /** Re-emitted result records, by the chaos action that preceded them ('none': before any). */
  reemittedAfter: Record<string, number>;
  lost: number;
  lostIds: string[];
  kills: number;
  /** Kills at the crash point (the connector SIGKILLed itself right after handing a result to Kafka). */
  crashPointKills: number;
  /** Crash-point kills that fell back to a plain SIGKILL (no result published within 30 s). */
  crashPointFallbacks: number;
  rebalances: number;
  connectorExitsOnItsOwn: number;
  kafkaRestarted: boolean;
  /**
   * Per Kafka outage (restart, stall), the time from the broker's return to the first result
   * published after it, in ms (null: none within a minute).
   */
  kafkaRecoveryMs: Array<{ action: string; ms: number | null }>;
  actions: string[];
  sandbox: {
    submissionsCreated: number;
    rateLimited: number;
    droppedConnections: number;
    serverErrors: number;
  };
}

type Action =
  | 'kill'
  | 'kill-after-publish'
  | 'rebalance'
  | 'storm-5xx'
  | 'storm-drop'
  | 'storm-429'
  | 'kafka-restart'
  | 'kafka-stall'
  | 'scale-out-slow-api'
  | 'scale-in-slow-api';

/** The API's answer time during the slow-API moves: longer than the members' admission wait. */
const SLOW_API_MS = 2500;
const ADMISSION_WAIT_MS = 1000;

/** Small seeded generator, so a failing run can be repeated with --seed. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

async function stackCommand(args: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'stack', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-2000)));
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`stack ${args.join(' ')} exited ${code}: ${err}`)),
    );
  });
}

const GOOD_KINDS: SampleKind[] = ['clean-pdf', 'edited-pdf', 'trusted-pdf', 'backdated-pdf', 'png-image'];

export async function runResilience(options: ResilienceOptions): Promise<ResilienceReport> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = rng(seed);
  log(`seed ${seed}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-resilience-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-resilience' });
  const id = uniqueName('resilience');
  const topics = prefixedTopics(id, options.partitions);
  const sandbox: Sandbox = await startSandbox({
    processing: { distribution: 'uniform', meanMs: 1500, minMs: 500, maxMs: 2500 },
    rateLimit: { ratePerSecond: 100, burst: 20 },
  });
  const collector = new OutputCollector(kafka, topics);
  let producer = kafka.producer();
  const actions: string[] = [];
  /** When each action started, to tell which one a re-emitted result followed. */
  const actionTimes: Array<{ action: string; at: number }> = [];
  let connector: ConnectorProcess | null = null;
  let kills = 0;
  let crashPointKills = 0;
  let crashPointFallbacks = 0;
  let rebalances = 0;
  let ownExits = 0;
  let kafkaRestarted = false;
  const kafkaRecoveryMs: Array<{ action: string; ms: number | null }> = [];
  /** The member a slow-API scale-out added, until a scale-in stops it. */
  let extra: ConnectorProcess | null = null;

  try {
    const corpus = await writeCorpus(dir, GOOD_KINDS);
    fs.copyFileSync(corpus[0]!.file, path.join(dir, 'doc-0.pdf'));
    const good: Arrival[] = Array.from({ length: options.docs }, (_, i) => {
      const eventId = `${id}-doc-${i}`;
      return { event_id: eventId, value: arrivalJson(eventId, corpus[i % corpus.length]!.file) };
    });
    const bad: MalformedInput[] = malformedInputs(id, options.malformed, dir);
    // Malformed records spread evenly through the good ones.
    const input: Arrival[] = [];
    const every = Math.max(1, Math.floor(good.length / Math.max(1, bad.length)));
    let b = 0;
    good.forEach((g, i) => {
      input.push(g);
      if (i % every === every - 1 && b < bad.length) input.push(bad[b++]!);
    });
    while (b < bad.length) input.push(bad[b++]!);

    await ensureInputTopics(kafka, topics);
    await producer.connect();
    // Every member of the run's group, on a port of its own.
    const memberConfig = (port: number) =>
      writeConnectorConfig(dir, {
        topics,
        groupId: `${id}-group`,
        apiBaseUrl: sandbox.baseUrl,
        ratePerSecond: 100,
        maxInFlight: 200,
        fileRoots: [dir],
        httpPort: port,
        kafka: { sessionTimeoutMs: options.sessionTimeoutMs },
        connector: {
          pollInitialMs: 300,
          pollMaxMs: 2000,
          delivery: options.delivery,
          admissionWaitMs: ADMISSION_WAIT_MS,
        },
      });
    const httpPort = await freePort();
    const config = memberConfig(httpPort);
    log(`delivery ${options.delivery}; outputs read read_committed`);
    const startConnector = async () => {
      // The crash point installed, dormant until SIGUSR2 arms it.
      connector = new ConnectorProcess(config, httpPort, { env: { [CRASH_AFTER_PUBLISH_ENV]: '0' } });
      await connector.ready(120_000);
    };
    await startConnector();
    await collector.start();

    const plan: Action[] = shuffle(
      [
        ...Array.from(
          { length: Math.max(0, options.kills - options.crashPointKills) },
          () => 'kill' as const,
        ),
        ...Array.from(
          { length: Math.min(options.kills, options.crashPointKills) },
          () => 'kill-after-publish' as const,
        ),
        ...(options.rebalance ? (['rebalance'] as const) : []),
        ...(options.storms ? (['storm-5xx', 'storm-drop', 'storm-429'] as const) : []),
        ...(options.kafkaRestart ? (['kafka-restart'] as const) : []),
        ...(options.groupMoves ? (['kafka-stall', 'scale-out-slow-api', 'scale-in-slow-api'] as const) : []),
      ],
      random,
    );
    // The input arrives in waves, one before each action, so that every action hits work in flight.
    const waves = plan.length + 1;
    const per = Math.ceil(input.length / waves);
    let produced = 0;
    const produceWave = async () => {
      const wave = input.slice(produced, produced + per);
      if (wave.length === 0) return;
      for (let attempt = 0; ; attempt++) {
        try {
          await produceArrivals(producer, topics.arrived, wave);
          break;
        } catch (err) {
          // Kafka may be coming back from a restart.
          if (attempt >= 20 || Date.now() > deadline) throw err;
          await sleep(2000);
        }
      }
      produced += wave.length;
    };
    const badById = new Map(bad.map((m) => [m.event_id, m]));
    /** Finished: every result or a dead letter; a record without a readable event_id, by its value. */
    const isSettled = (a: Arrival): boolean => {
      if (collector.settled(a.event_id)) return true;
      const m = badById.get(a.event_id);
      if (!m) return false;
      const raw = (Buffer.isBuffer(m.value) ? m.value : Buffer.from(m.value, 'utf8')).toString('base64');
      return collector.anonymousDeadLetters.some((l) => (l.value ?? '') === raw || l.key === a.event_id);
    };
    const settledCount = () => input.slice(0, produced).filter(isSettled).length;

    for (const action of plan) {
      if (Date.now() > deadline) break;
      await produceWave();
      // Act at a random moment while the wave is in flight.
      await sleep(300 + random() * 2500);
      await waitUntil(() => settledCount() < produced, 10_000);
      const current = connector as ConnectorProcess | null;
      if (current && !current.running) {
        ownExits += 1;
        log(`connector had exited on its own (code ${current.child.exitCode}):\n${current.logTail}`);
        await startConnector();
      }
      const inFlight = produced - settledCount();
      actions.push(`${action} (${inFlight} unsettled)`);
      actionTimes.push({ action, at: Date.now() });
      log(`${action}: ${produced} produced, ${inFlight} not settled yet`);
      switch (action) {
        case 'kill': {
          connector!.kill('SIGKILL');
          await connector!.exited;
          kills += 1;
          await sleep(300 + random() * 1500);
          await startConnector();
          break;
        }
        case 'kill-after-publish': {
          // Armed: the next result handed to Kafka is followed by a SIGKILL before its state record.
          const current = connector!;
          current.kill('SIGUSR2');
          const timer = setTimeout(() => current.kill('SIGKILL'), 30_000);
          await current.exited;
          clearTimeout(timer);
          if (current.logTail.includes(CRASH_AFTER_PUBLISH_ENV)) crashPointKills += 1;
          else {
            crashPointFallbacks += 1;
            log('no result published within 30 s of arming the crash point: killed plainly');
          }
          kills += 1;
          await sleep(300 + random() * 1500);
          await startConnector();
          break;
        }
        case 'rebalance': {
          // A second member joins (the group rebalances), works, and leaves (it rebalances again).
          const port2 = await freePort();
          const config2 = memberConfig(port2);
          const second = new ConnectorProcess(config2, port2);
          try {
            await second.ready(120_000);
            await sleep(4000 + random() * 4000);
          } finally {
            await second.stop();
          }
          rebalances += 1;
          break;
        }
        case 'storm-5xx':
        case 'storm-drop':
        case 'storm-429': {
          const patch: DeepPartial<SandboxConfig> =
            action === 'storm-5xx'
              ? { faults: { errorRate: 0.3 } }
              : action === 'storm-drop'
                ? { faults: { dropRate: 0.1 } }
                : { faults: { storm429: { durationMs: options.stormMs } } };
          // A storm is to reach the connector: one that failed no request (the connector was between
          // waves, or held back after the storm before, and sent few) goes on for another stormMs, up
          // to three in all. The report counts what every storm failed, and the short form's test
          // asserts that each one failed some.
          const failedSoFar = () => stormFailures(sandbox.stats(), action);
          const before = failedSoFar();
          for (let round = 0; round < 3 && failedSoFar() === before; round++) {
            sandbox.configure(patch);
            await sleep(options.stormMs);
          }
          sandbox.configure({ faults: { errorRate: 0, dropRate: 0, storm429: null } });
          break;
        }
        case 'kafka-restart': {
          await producer.disconnect().catch(() => undefined);
          await stackCommand(['down', '--services', 'kafka']);
          await sleep(3000);
          await stackCommand(['up', '--services', 'kafka']);
          kafkaRestarted = true;
          kafkaRecoveryMs.push({ action, ms: await firstResultAfter(collector, Date.now()) });
          producer = kafka.producer();
          await producer.connect();
          break;
        }
        case 'kafka-stall': {
          // The broker stops answering for longer than the session timeout, then goes on.
          const pid = kafkaPid();
          process.kill(pid, 'SIGSTOP');
          try {
            await sleep(options.sessionTimeoutMs + 4000);
          } finally {
            process.kill(pid, 'SIGCONT');
          }
          kafkaRecoveryMs.push({ action, ms: await firstResultAfter(collector, Date.now()) });
          break;
        }
        case 'scale-out-slow-api': {
          // Creates slower than the admission wait are under way when a second member joins.
          sandbox.configure({ faults: { extraLatencyMs: SLOW_API_MS } });
          try {
            await sleep(ADMISSION_WAIT_MS);
            if (!extra) {
              const port = await freePort();
              extra = new ConnectorProcess(memberConfig(port), port);
              await extra.ready(120_000);
            }
            await sleep(SLOW_API_MS * 2);
          } finally {
            sandbox.configure({ faults: { extraLatencyMs: 0 } });
          }
          rebalances += 1;
          break;
        }
        case 'scale-in-slow-api': {
          // A member is stopped with SIGTERM while creates slower than the admission wait are out.
          if (!extra) {
            const port = await freePort();
            extra = new ConnectorProcess(memberConfig(port), port);
            await extra.ready(120_000);
            await sleep(2000);
          }
          sandbox.configure({ faults: { extraLatencyMs: SLOW_API_MS } });
          try {
            await sleep(ADMISSION_WAIT_MS);
            await extra.stop();
            extra = null;
          } finally {
            sandbox.configure({ faults: { extraLatencyMs: 0 } });
          }
          rebalances += 1;
          break;
        }
      }
    }
    while (produced < input.length && Date.now() < deadline) await produceWave();

    log(`chaos over after ${Math.round((Date.now() - started) / 1000)} s; waiting for every document`);
    await waitUntil(
      () => settledCount() === input.length,
      Math.max(0, deadline - Date.now()),
      () => {
        const c = connector as ConnectorProcess | null;
        if (c && !c.running) {
          ownExits += 1;
          log(`connector had exited on its own (code ${c.child.exitCode}):\n${c.logTail}`);
          void startConnector();
        }
        log(`${settledCount()}/${input.length} settled`);
      },
    );
    // Late duplicates of dead letters or results do not change the counts, but let them arrive.
    await sleep(2000);

    const stats = sandbox.stats();
    const lostIds: string[] = [];
    let resultsOut = 0;
    let resultRecords = 0;
    /** Result records of the documents with every result, and how many distinct results they await. */
    let completeRecords = 0;
    let awaitedRecords = 0;
    let expected = 0;
    const unexpectedByCode: Record<string, number> = {};
    let unexpected = 0;
    for (const g of good) {
      const o = collector.byEvent.get(g.event_id);
      if (collector.complete(g.event_id)) {
        resultsOut += 1;
        completeRecords += o?.resultRecords ?? 0;
        awaitedRecords += o?.results.size ?? 0;
      }
      resultRecords += o?.resultRecords ?? 0;
      if (o?.deadLetters.length) {
        unexpected += 1;
        const code = `${o.deadLetters[0]!.stage}/${o.deadLetters[0]!.error_code}`;
        unexpectedByCode[code] = (unexpectedByCode[code] ?? 0) + 1;
      }
      if (!collector.settled(g.event_id)) lostIds.push(g.event_id);
    }
    for (const m of bad) {
      if (isSettled(m)) expected += 1;
      else lostIds.push(`${m.event_id} (${m.kind})`);
    }
    let byStorms = 0;
    for (const g of good) {
      const deadLetter = collector.byEvent.get(g.event_id)?.deadLetters[0];
      if (deadLetter && isStormFailure(deadLetter.error_code)) byStorms += 1;
    }
    const { analysedTwice, empty } = await uploadsPerQuery(sandbox.baseUrl);
    const duplicated = Object.entries(stats.submissionsByQueryId).filter(([, n]) => n > 1);
    const duplicateQueryIds = duplicated.map(([q, n]) => `${q} x${n}`);
    const recorded = duplicated.length > 0 ? await recordedSubmissions(kafka, topics.state) : new Map();
    // query_id = event_id for every good document.
    const afterRecording = duplicated.filter(([q]) => (recorded.get(q)?.size ?? 0) > 1).length;
    return {
      options: { ...options, seed, log: undefined } as Omit<ResilienceOptions, 'log'>,
      durationS: Math.round((Date.now() - started) / 1000),
      documentsIn: input.length,
      goodIn: good.length,
      malformedIn: bad.length,
      resultsOut,
      resultRecords,
      deadLetters: { expected, unexpected, unexpectedByCode },
      duplicateSubmissions: duplicateQueryIds.length,
      duplicateQueryIds,
      duplicatesInCrashWindow: duplicated.length - afterRecording,
      duplicatesAfterRecording: afterRecording,
      analysedTwice: analysedTwice.length,
      analysedTwiceQueryIds: analysedTwice,
      emptySubmissions: empty,
      goodDeadLetteredByStorms: byStorms,
      resultRecordsPerDocument:
        awaitedRecords > 0 ? Math.round((completeRecords / awaitedRecords) * 1000) / 1000 : 0,
      reemittedAfter: reemittedByAction(collector.repeats, actionTimes),
      lost: lostIds.length,
      lostIds,
      kills,
      crashPointKills,
      crashPointFallbacks,
      rebalances,
      connectorExitsOnItsOwn: ownExits,
      kafkaRestarted,
      kafkaRecoveryMs,
      actions,
      sandbox: {
        submissionsCreated: stats.submissionsCreated,
        rateLimited: stats.rateLimited,
        droppedConnections: stats.droppedConnections,
        serverErrors: serverErrors(stats),
      },
    };
  } finally {
    // The report is complete (or the run failed): nothing reads what the members do from here, so
    // they are killed, not stopped gracefully (a graceful stop waits for the consumer's fetch and
    // commits into topics about to be deleted; graceful-stop.test.ts checks it).
    for (const member of [connector, extra] as Array<ConnectorProcess | null>) {
      if (!member) continue;
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

/** The local stack's Kafka process (its pid file under the stack's run directory). */
function kafkaPid(): number {
  const rec = readPidFile(servicePaths(defaultStackOptions().runDir, 'kafka').pidFile);
  if (!rec) throw new Error('the local stack runs no Kafka (no pid file)');
  return rec.pid;
}

/** Milliseconds from `since` to the first result read after it (null: none within a minute). */
async function firstResultAfter(collector: OutputCollector, since: number): Promise<number | null> {
  const first = () => collector.resultsReadAt.find((t) => t >= since);
  await waitUntil(() => first() !== undefined, 60_000).catch(() => undefined);
  const at = first();
  return at === undefined ? null : at - since;
}

/** The sandbox's 5xx answers so far. */
function serverErrors(stats: SandboxStats): number {
  return Object.entries(stats.requests)
    .filter(([k]) => / 5\d\d$/.test(k))
    .reduce((n, [, c]) => n + c, 0);
}

/** What a storm fails, counted by the sandbox so far: 5xx answers, dropped connections or 429s. */
function stormFailures(stats: SandboxStats, storm: 'storm-5xx' | 'storm-drop' | 'storm-429'): number {
  if (storm === 'storm-5xx') return serverErrors(stats);
  return storm === 'storm-drop' ? stats.droppedConnections : stats.rateLimited;
}

/** A failure the 5xx and dropped-connection storms cause: an HTTP 5xx, or a connection error code. */
function isStormFailure(code: string): boolean {
  return /^api_5\d\d$/.test(code) || /^E[A-Z]+$/.test(code);
}

export function printReport(r: ResilienceReport): void {
  const lines = [
    `resilience (${r.durationS} s, seed ${r.options.seed}, delivery ${r.options.delivery}): ${r.kills} kills ` +
      `(${r.crashPointKills} at the crash point after a publication${
        r.crashPointFallbacks ? `, ${r.crashPointFallbacks} fell back to a plain kill` : ''
      }), ${r.rebalances} rebalances, ` +
      `Kafka restart ${r.kafkaRestarted ? 'yes' : 'no'}, storms ${r.options.storms ? 'yes' : 'no'}`,
    `  actions:               ${r.actions.join(', ')}`,
    `  documents in:          ${r.documentsIn} (${r.goodIn} good, ${r.malformedIn} malformed)`,
    `  results out:           ${r.resultsOut} documents with every result (${r.resultRecords} result records)`,
    `  dead letters:          ${r.deadLetters.expected} expected, ${r.deadLetters.unexpected} unexpected` +
      (r.deadLetters.unexpected > 0 ? ` ${JSON.stringify(r.deadLetters.unexpectedByCode)}` : ''),
    `  Kafka back to first result: ${
      r.kafkaRecoveryMs
        .map((k) => `${k.action} ${k.ms === null ? 'none within 60 s' : `${k.ms} ms`}`)
        .join(', ') || 'no Kafka outage'
    }`,
    `  submitted twice:       ${r.duplicateSubmissions}` +
      (r.duplicateSubmissions
        ? ` (${r.duplicatesAfterRecording} after a recorded submission, ${r.duplicatesInCrashWindow} killed ` +
          `between create and record: ${r.duplicateQueryIds.slice(0, 10).join(', ')})`
        : ''),
    `  analysed twice:        ${r.analysedTwice}` +
      (r.analysedTwice ? ` (${r.analysedTwiceQueryIds.slice(0, 10).join(', ')})` : ''),
    `  empty submissions:     ${r.emptySubmissions} (created, never given a file: never analysed)`,
    `  good documents dead-lettered by storms: ${r.goodDeadLetteredByStorms}`,
    `  result records per document: ${r.resultRecordsPerDocument} (per awaited result, read_committed; 1 = none published twice)`,
    `  re-emitted results by the action before them: ${
      Object.entries(r.reemittedAfter)
        .map(([a, n]) => `${a} ${n}`)
        .join(', ') || 'none'
    }`,
    `  lost documents:        ${r.lost}${r.lost ? ` (${r.lostIds.slice(0, 10).join(', ')})` : ''}`,
    `  connector exits on its own: ${r.connectorExitsOnItsOwn}`,
    `  sandbox: ${r.sandbox.submissionsCreated} submissions, ${r.sandbox.rateLimited} 429s, ` +
      `${r.sandbox.serverErrors} 5xx, ${r.sandbox.droppedConnections} dropped connections`,
  ];
  console.log(lines.join('\n'));
}

async function main(end: (code: number) => Promise<never>): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), {
    short: false,
    docs: 0,
    kills: -1,
    crashPointKills: -1,
    rebalance: true,
    delivery: 'at-least-once',
    seed: 0,
    kafkaRestart: true,
    groupMoves: true,
    storms: true,
    allowCrashWindow: false,
    timeoutS: 0,
    churn: false,
  });
  const base = flags.short ? SHORT : LONG;
  const delivery = String(flags.delivery);
  if (delivery !== 'at-least-once' && delivery !== 'exactly-once') {
    process.stderr.write(`error: --delivery is at-least-once or exactly-once, not ${delivery}\n`);
    process.exit(2);
  }
  const log = (line: string) =>
    process.stderr.write(`[resilience ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  if (flags.churn === true) return runChurnScenario({ ...CHURN, delivery, log }, end);
  const options: ResilienceOptions = {
    ...base,
    ...(Number(flags.docs) > 0 ? { docs: Math.min(5000, Number(flags.docs)) } : {}),
    ...(Number(flags.kills) >= 0 ? { kills: Math.min(50, Number(flags.kills)) } : {}),
    ...(Number(flags.crashPointKills) >= 0
      ? { crashPointKills: Math.min(50, Number(flags.crashPointKills)) }
      : {}),
    ...(Number(flags.seed) > 0 ? { seed: Number(flags.seed) } : {}),
    delivery,
    rebalance: base.rebalance && flags.rebalance !== false,
    ...(Number(flags.timeoutS) > 0 ? { timeoutMs: Math.min(3600, Number(flags.timeoutS)) * 1000 } : {}),
    kafkaRestart: base.kafkaRestart && flags.kafkaRestart !== false,
    groupMoves: base.groupMoves && flags.groupMoves !== false,
    storms: base.storms && flags.storms !== false,
    log,
  };
  // The hard stop, past the run's own bound (the clean-up included).
  setTimeout(() => {
    process.stderr.write('resilience: hard stop\n');
    void end(3);
  }, options.timeoutMs + 120_000).unref();
  const report = await runResilience(options);
  printReport(report);
  const dir = path.resolve('bench-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `resilience-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(report, null, 2));
  console.log(`written ${path.relative(process.cwd(), file)}`);
  // A second submission of an event fails the run only when it was analysed (given the file); an
  // empty one (a resent create, or a kill between create and record) costs a submission, not a
  // second analysis. --allow-crash-window is kept for old invocations and changes nothing now.
  void flags.allowCrashWindow;
  await end(report.lost > 0 || report.analysedTwice > 0 ? 1 : 0);
}

/** `--churn`: members joining and leaving under a slow API (`lib/churn.ts`); exits 1 on a broken promise. */
async function runChurnScenario(options: ChurnOptions, end: (code: number) => Promise<never>): Promise<void> {
  setTimeout(() => {
    process.stderr.write('resilience: hard stop\n');
    void end(3);
  }, options.timeoutMs + 120_000).unref();
  const report = await runChurn(options);
  printChurnReport(report);
  const failures = churnFailures(report);
  console.log(failures.length ? `FAILED: ${failures.join('; ')}` : 'passed');
  const dir = path.resolve('bench-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(
    dir,
    `churn-${options.delivery}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  fs.writeFileSync(file, JSON.stringify(report, null, 2));
  console.log(`written ${path.relative(process.cwd(), file)}`);
  await end(failures.length > 0 ? 1 : 0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Every way out deletes the topics the run left behind (a failure, the hard stop, SIGINT, SIGTERM).
  const end = endOfRun((line) => process.stderr.write(`resilience: ${line}\n`));
  main(end).catch((err: unknown) => {
    process.stderr.write(
      `resilience failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return end(2);
  });
}
