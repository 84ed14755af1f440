/**
 * `npm run bench -- --scale-events`: what a scale event costs under a steady load, on the real stack.
 *
 * A steady stream of FRAUD_ONLY documents (`--events-rate` per second, the sandbox analysing each
 * in 0.5-2.5 s, its rate limit out of the way) flows through a group of `docstream run` processes
 * whose size goes through `--events` (default 1,2,3,4,3,2: a process started, or the newest stopped
 * with SIGTERM). Per event, from the connectors' own log lines (level info) and the sandbox:
 * - partitions moved: input partitions whose owner changed between the settled assignments before
 *   and after, against the fewest any balanced assignment allows;
 * - documents interrupted: running documents stopped by a revoke (the join line's `stopped`) and
 *   resumed by a new owner (`resumed unfinished documents`), split by partitions that moved and
 *   partitions that stayed with their owner (must be 0);
 * - state records re-read: the records the new owners restored (`state partition restored`);
 * - admission pause per partition: how long the first document admitted after the event's last join
 *   waited, from when it was produced or from the partition's last admission before the first join,
 *   whichever is later (a create follows its admission within milliseconds), p50 and p99 over the
 *   partitions; beside it the raw gap between those two admissions (p99), which also holds the
 *   natural gap between arrivals;
 * - throughput dip: the lowest 1-s rate of submissions created around the event against the offered
 *   rate.
 * At the end the load stops and every document must finish: lost, analysed twice (files uploaded to
 * two submissions of one event id), result records per awaited result.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../../src/demo/corpus.js';
import { KafkaClient } from '../../src/kafka/index.js';
import { partitionOfKey } from '../../src/kafka/partitioner.js';
import { startSandbox } from '../../src/sandbox/index.js';
import {
  BROKERS,
  ConnectorProcess,
  OutputCollector,
  RESULT_KINDS,
  arrivalJson,
  deleteTopics,
  ensureInputTopics,
  freePort,
  percentile,
  prefixedTopics,
  round,
  sleep,
  uniqueName,
  waitUntil,
  writeConnectorConfig,
} from './harness.js';

export interface ScaleEventsOptions {
  rate: number;
  partitions: number;
  sizes: number[];
  holdS: number;
  assignor: 'sticky' | 'round-robin';
  maxInFlight: number;
  deadline: number;
  log: (line: string) => void;
}

interface Instance {
  n: number;
  process: ConnectorProcess;
  /** The last assignment it logged (input partitions), null before its first join or after it left. */
  partitions: number[] | null;
}

interface LogEvent {
  instance: number;
  time: number;
  kind: 'join' | 'restored' | 'resumed';
  partitions: number[];
  /** join: documents stopped; restored: records; resumed: documents. */
  count: number;
}

export interface EventMeasure {
  from: number;
  to: number;
  moved: number;
  minimum: number;
  /** Running documents of moved partitions stopped by the revoke / resumed by the new owner. */
  stoppedMoved: number;
  resumedMoved: number;
  /** Documents of partitions that stayed with their owner that were resumed or stopped: must be 0. */
  interruptedStayed: number;
  stateRecordsReread: number;
  /** ms from the trigger (process started / SIGTERM) to the last join of the event. */
  rebalanceMs: number;
  pauseP50Ms: number;
  pauseP99Ms: number;
  pauseMaxMs: number;
  /** The raw gap between the last admission before and the first after, p99 (the earlier measure). */
  gapP99Ms: number;
  /** Lowest 1-s submissions rate from 5 s before the first join to 10 s after the last, % of offered. */
  dipPercent: number;
  error?: string;
}

export interface ScaleEventsResult {
  parameters: Omit<ScaleEventsOptions, 'deadline' | 'log'>;
  events: EventMeasure[];
  produced: number;
  offeredRate: number;
  completed: number;
  deadLetters: number;
  lost: number;
  analysedTwice: number;
  resultRecordsPerAwaited: number;
  durationS: number;
}

/** The fewest moves of any balanced assignment of `partitions` over `members`, from `before`. */
export function minimumMovesOf(before: Map<number, number>, members: number[], partitions: number): number {
  const held = members.map((m) => [...before.values()].filter((o) => o === m).length).sort((a, b) => b - a);
  const q = Math.floor(partitions / members.length);
  const extra = partitions % members.length;
  // The members holding most keep the larger quotas.
  const kept = held.reduce((sum, h, i) => sum + Math.min(h, q + (i < extra ? 1 : 0)), 0);
  return partitions - kept;
}

const KINDS = ['clean-pdf', 'edited-pdf', 'trusted-pdf', 'backdated-pdf', 'png-image'] as const;

export async function runScaleEvents(o: ScaleEventsOptions): Promise<ScaleEventsResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-scale-'));
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-bench' });
  const id = uniqueName('scale');
  const topics = prefixedTopics(id, o.partitions);
  const files = (await writeCorpus(dir, [...KINDS])).map((s) => s.file);
  const sandbox = await startSandbox({
    processing: { distribution: 'uniform', meanMs: 1500, minMs: 500, maxMs: 2500 },
    rateLimit: { ratePerSecond: 100_000, burst: 10_000 },
    maxSubmissions: 2_000_000,
  });
  const collector = new OutputCollector(kafka, topics);
  const producer = kafka.producer();
  const instances: Instance[] = [];
  const logs: LogEvent[] = [];
  const sent: string[] = [];
  /** When each event was handed to Kafka: an admission pause counts from then, not from the last admission. */
  const producedAt = new Map<string, number>();
  let producing = false;
  let loadLoop: Promise<void> | null = null;

  const start = async (): Promise<Instance> => {
    const n = instances.length + 1;
    const httpPort = await freePort();
    const config = writeConnectorConfig(dir, {
      topics,
      groupId: `${id}-group`,
      apiBaseUrl: sandbox.baseUrl,
      ratePerSecond: 100_000,
      maxInFlight: o.maxInFlight,
      fileRoots: [dir],
      httpPort,
      kafka: { assignor: o.assignor },
      logLevel: 'info',
    });
    const instance: Instance = { n, partitions: null, process: null as unknown as ConnectorProcess };
    instance.process = new ConnectorProcess(config, httpPort, {
      onLine: (line) => {
        if (!line.startsWith('{')) return;
        let e: Record<string, unknown>;
        try {
          e = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        const time = Number(e.time);
        if (e.msg === 'partitions assigned') {
          const assignment = (e.assignment as Record<string, number[]>)[topics.arrived] ?? [];
          instance.partitions = assignment;
          logs.push({
            instance: n,
            time,
            kind: 'join',
            partitions: assignment,
            count: Number(e.stopped ?? 0),
          });
        } else if (e.msg === 'state partition restored' && e.topic === topics.state) {
          logs.push({
            instance: n,
            time,
            kind: 'restored',
            partitions: [Number(e.partition)],
            count: Number(e.records),
          });
        } else if (e.msg === 'resumed unfinished documents') {
          logs.push({
            instance: n,
            time,
            kind: 'resumed',
            partitions: [Number(e.partition)],
            count: Number(e.documents),
          });
        }
      },
    });
    instances.push(instance);
    return instance;
  };
  const live = () => instances.filter((i) => i.process.running && i.partitions !== null);
  const owners = (): Map<number, number> => {
    const out = new Map<number, number>();
    for (const i of live()) for (const p of i.partitions ?? []) out.set(p, i.n);
    return out;
  };

  /** Every partition owned once by the live members, each of which joined after `since`, stable for 3 s. */
  const settled = async (since: number, members: number): Promise<boolean> => {
    let stableSince = 0;
    let lastJoins = -1;
    return waitUntil(
      () => {
        const members_ = instances.filter((i) => i.process.running);
        const joinedAll = members_.every((i) =>
          logs.some((l) => l.kind === 'join' && l.instance === i.n && l.time >= since),
        );
        const owned = members_.flatMap((i) => i.partitions ?? []);
        const complete =
          members_.length === members &&
          joinedAll &&
          owned.length === o.partitions &&
          new Set(owned).size === o.partitions;
        const joins = logs.filter((l) => l.kind === 'join').length;
        if (!complete || joins !== lastJoins) {
          stableSince = Date.now();
          lastJoins = joins;
          return false;
        }
        return Date.now() - stableSince >= 3000;
      },
      Math.min(120_000, o.deadline - Date.now()),
    );
  };

  const began = Date.now();
  try {
    await ensureInputTopics(kafka, topics);
    await producer.connect();
    const first = await start();
    await first.process.ready();
    // The output topics exist once the first connector started.
    await collector.start();
    if (!(await settled(0, 1))) throw new Error('the first instance never held every partition');
    // The steady load: every 100 ms a tenth of the rate, keyed by event id.
    producing = true;
    const perTick = o.rate / 10;
    loadLoop = (async () => {
      let owed = 0;
      let next = Date.now();
      while (producing) {
        owed += perTick;
        const n = Math.floor(owed);
        owed -= n;
        const batch = Array.from({ length: n }, () => {
          const eventId = `${id}-${sent.length}`;
          sent.push(eventId);
          return {
            key: eventId,
            value: arrivalJson(eventId, files[sent.length % files.length] as string),
          };
        });
        const at = Date.now();
        for (const { key } of batch) producedAt.set(key, at);
        if (batch.length > 0) await producer.send(topics.arrived, batch);
        next += 100;
        await sleep(Math.max(0, next - Date.now()));
      }
    })();
    o.log(`steady load ${o.rate} docs/s on ${o.partitions} partitions, 1 instance; warming up ${o.holdS} s`);
    await sleep(o.holdS * 1000);

    const triggers: Array<{
      from: number;
      to: number;
      at: number;
      before: Map<number, number>;
      members: number[];
    }> = [];
    let size = 1;
    for (const target of o.sizes.slice(1)) {
      if (Date.now() > o.deadline - 60_000) throw new Error('time limit reached during the events');
      const before = owners();
      const at = Date.now();
      if (target > size) {
        for (let k = size; k < target; k++) await start();
      } else {
        const running = instances.filter((i) => i.process.running);
        for (const i of running.slice(target).reverse()) void i.process.stop();
      }
      o.log(`event ${size} -> ${target}`);
      const ok = await settled(at, target);
      if (!ok) o.log(`event ${size} -> ${target}: the group did not settle in time`);
      triggers.push({
        from: size,
        to: target,
        at,
        before,
        members: instances.filter((i) => i.process.running).map((i) => i.n),
      });
      size = target;
      await sleep(o.holdS * 1000);
    }
    producing = false;
    await loadLoop;
    const produced = sent.length;
    const loadEnd = Date.now();
    o.log(`load stopped after ${produced} documents; waiting for every one to finish`);
    await waitUntil(
      () => sent.every((e) => collector.settled(e)),
      Math.max(10_000, Math.min(180_000, o.deadline - Date.now())),
    );

    // Submissions by partition, by creation time.
    const res = await fetch(`${sandbox.baseUrl}/_sandbox/submissions`);
    const { items } = (await res.json()) as {
      items: Array<{ query_id: string | null; created: string; sha256: string | null }>;
    };
    const createdByPartition = new Map<number, Array<{ at: number; eventId: string }>>();
    const allCreated: number[] = [];
    const uploads = new Map<string, number>();
    for (const s of items) {
      if (s.query_id === null) continue;
      const t = Date.parse(s.created);
      allCreated.push(t);
      const p = partitionOfKey(s.query_id, o.partitions);
      if (!createdByPartition.has(p)) createdByPartition.set(p, []);
      createdByPartition.get(p)!.push({ at: t, eventId: s.query_id });
      if (s.sha256 !== null) uploads.set(s.query_id, (uploads.get(s.query_id) ?? 0) + 1);
    }
    for (const list of createdByPartition.values()) list.sort((a, b) => a.at - b.at);
    allCreated.sort((a, b) => a - b);

    const events: EventMeasure[] = triggers.map((t, k) => {
      const windowEnd = triggers[k + 1]?.at ?? loadEnd;
      const inWindow = logs.filter((l) => l.time >= t.at && l.time < windowEnd);
      const joins = inWindow.filter((l) => l.kind === 'join');
      const after = new Map<number, number>();
      // The settled assignment: each member's last join in the window.
      for (const j of joins) for (const p of j.partitions) after.set(p, j.instance);
      for (const [p, owner] of after) if (!t.members.includes(owner)) after.delete(p);
      const movedSet = new Set<number>();
      for (let p = 0; p < o.partitions; p++) if (t.before.get(p) !== after.get(p)) movedSet.add(p);
      const byMoved = (kind: LogEvent['kind'], moved: boolean) =>
        inWindow
          .filter((l) => l.kind === kind && movedSet.has(l.partitions[0] as number) === moved)
          .reduce((s, l) => s + l.count, 0);
      const t1 = Math.min(...joins.map((j) => j.time));
      const t2 = Math.max(...joins.map((j) => j.time));
      // Per partition: how long admission stopped while a document waited. The first document admitted
      // after the event's last join waited from when it was produced, or from the partition's last
      // admission before the first join if it was produced earlier; the gap between two documents that
      // arrive seconds apart anyway is not a pause (at 20 docs/s on 12 partitions such gaps alone
      // have a p99 of ~2.8 s).
      const pauses: number[] = [];
      const gaps: number[] = [];
      for (let p = 0; p < o.partitions; p++) {
        const list = createdByPartition.get(p) ?? [];
        const last = list.filter((c) => c.at < t1).at(-1);
        const next = list.find((c) => c.at > t2);
        if (last === undefined || next === undefined) continue;
        gaps.push(next.at - last.at);
        pauses.push(Math.max(0, next.at - Math.max(last.at, producedAt.get(next.eventId) ?? last.at)));
      }
      let lowest = Number.POSITIVE_INFINITY;
      for (let s = t1 - 5000; s < t2 + 10_000; s += 1000) {
        const n = allCreated.filter((c) => c >= s && c < s + 1000).length;
        lowest = Math.min(lowest, n);
      }
      const stoppedMoved = joins.filter((j) => j.count > 0).reduce((s, j) => s + j.count, 0);
      return {
        from: t.from,
        to: t.to,
        moved: movedSet.size,
        minimum: minimumMovesOf(t.before, t.members, o.partitions),
        // A revoke stops only removed partitions, which moved by definition.
        stoppedMoved,
        resumedMoved: byMoved('resumed', true),
        interruptedStayed: byMoved('resumed', false),
        stateRecordsReread: inWindow.filter((l) => l.kind === 'restored').reduce((s, l) => s + l.count, 0),
        rebalanceMs: joins.length > 0 ? t2 - t.at : -1,
        pauseP50Ms: pauses.length ? percentile(pauses, 50) : -1,
        pauseP99Ms: pauses.length ? percentile(pauses, 99) : -1,
        pauseMaxMs: pauses.length ? Math.max(...pauses) : -1,
        gapP99Ms: gaps.length ? percentile(gaps, 99) : -1,
        dipPercent: round((100 * lowest) / o.rate, 0),
      };
    });

    let completed = 0;
    let deadLetters = 0;
    let lost = 0;
    let records = 0;
    for (const e of sent) {
      const out = collector.byEvent.get(e);
      if (collector.complete(e)) {
        completed += 1;
        records += out!.resultRecords;
      } else if (out?.deadLetters.length) deadLetters += 1;
      else lost += 1;
    }
    const { deadline: _d, log: _l, ...parameters } = o;
    return {
      parameters,
      events,
      produced,
      offeredRate: o.rate,
      completed,
      deadLetters,
      lost,
      analysedTwice: [...uploads.values()].filter((n) => n > 1).length,
      resultRecordsPerAwaited: round(records / Math.max(1, completed * RESULT_KINDS.length), 3),
      durationS: round((Date.now() - began) / 1000, 1),
    };
  } finally {
    producing = false;
    await loadLoop?.catch(() => undefined);
    await Promise.all(instances.map((i) => i.process.stop()));
    await collector.stop();
    await producer.disconnect().catch(() => undefined);
    await sandbox.close();
    await deleteTopics(kafka, topics);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function printScaleEvents(r: ScaleEventsResult): void {
  const p = r.parameters;
  console.log(
    `\nscale events: ${p.rate} docs/s FRAUD_ONLY offered, ${p.partitions} partitions, assignor ${p.assignor}, ` +
      `sandbox processing 0.5-2.5 s, ${p.holdS} s between events`,
  );
  const w = [8, 14, 22, 12, 12, 13, 12, 11, 8];
  const row = (cells: Array<string | number>) => cells.map((c, i) => String(c).padEnd(w[i] ?? 10)).join(' ');
  console.log(
    row([
      'event',
      'moved/minimum',
      'interrupted moved/stay',
      'state reread',
      'rebalance ms',
      'pause p50/p99',
      'pause max ms',
      'raw gap p99',
      'lowest 1s',
    ]),
  );
  for (const e of r.events) {
    console.log(
      row([
        `${e.from}->${e.to}`,
        `${e.moved}/${e.minimum}`,
        `${e.stoppedMoved} stopped, ${e.resumedMoved} resumed / ${e.interruptedStayed}`,
        e.stateRecordsReread,
        e.rebalanceMs,
        `${e.pauseP50Ms}/${e.pauseP99Ms}`,
        e.pauseMaxMs,
        e.gapP99Ms,
        `${e.dipPercent}%`,
      ]),
    );
  }
  console.log(
    `documents: ${r.produced} produced (${round(r.produced / Math.max(1, r.durationS), 1)}/s over the run), ` +
      `${r.completed} with every result, ${r.deadLetters} dead-lettered, lost ${r.lost}, ` +
      `analysed twice ${r.analysedTwice}, result records per awaited result ${r.resultRecordsPerAwaited}`,
  );
}
