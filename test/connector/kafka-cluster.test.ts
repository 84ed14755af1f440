/**
 * Nodes of a three-node Kafka cluster (KRaft, replication 3, min ISR 2; `stack up --brokers 3`, the
 * file's own: `startPrivateCluster`) SIGKILLed one at a time under running connectors, in both delivery
 * modes at once: per mode two members (`docstream run` of the built CLI) in one group, with their own
 * topics, sandbox and input produced at a steady rate. The node leading most of the modes' partitions
 * is killed and started again ~17 s later, then, once healthy, the node leading most then. Checked,
 * per mode: every result is published within a minute of the return of the node that was down when
 * its document arrived (or before it), both members still run, no dead letter, no document analysed
 * twice, and in exactly-once mode one result record per document, counted by Kafka's own consumer
 * with read_committed. Run by `npm run test:cluster`, not by `npm test` (jest.config.js says why).
 */
import { execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import kafkajs from 'kafkajs';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor, type SandboxSubmission } from '../harness/e2e.js';
import { startPrivateCluster, type PrivateCluster } from '../harness/private-kafka.js';
import { uniqueName } from '../harness/topics.js';
import { findJava } from '../../src/stack/java.js';
import { cachePaths, defaultCacheDir } from '../../src/stack/paths.js';

const run = promisify(execFile);
const MODES = ['at-least-once', 'exactly-once'] as const;
type Delivery = (typeof MODES)[number];

/** One document per mode every PRODUCE_EVERY_MS, from before the first kill until after the last return. */
const PRODUCE_EVERY_MS = 500;
/** How long a killed node stays down. */
const DOWN_MS = 17_000;
/** The promise: every result within this long of the return of the node down when (or after) it arrived. */
const WITHIN_MS = 60_000;
/** Documents per mode at least, so that every outage meets some. */
const MIN_DOCS = 100;

interface Outcome {
  produced: Map<string, number>;
  /** When the collector first saw each document's result. */
  firstResultAt: Map<string, number>;
  /** Result records per document (read_committed, distinct offsets), and the submissions their keys name. */
  records: Map<string, number>;
  keys: Map<string, Set<string | null>>;
  /** The same count by kafkajs's read_committed consumer, for the message. */
  kafkajsRecords: Map<string, number>;
  dlq: number;
  exitCodes: Array<number | null>;
  /** Submissions analysed (a file uploaded) per query id, and created per query id. */
  analysed: Map<string, number>;
  created: Record<string, number>;
  /** Input records per document (the test's own producer sends one; a send it repeats may make two). */
  inputs: Map<string, number>;
  /** What the sandbox holds for the documents that came out wrong, for the failure message. */
  submissions: Record<string, unknown[]>;
}

class ModeRun {
  readonly env: E2E;
  private members: ChildProcess[] = [];
  private file = '';
  readonly produced = new Map<string, number>();
  readonly firstResultAt = new Map<string, number>();
  private producing = false;
  private producer: Promise<void> = Promise.resolve();
  private watcher: NodeJS.Timeout | undefined;

  constructor(
    readonly delivery: Delivery,
    brokers: string[],
  ) {
    this.env = new E2E(4, { brokers, replicationFactor: 3 });
  }

  async start(): Promise<void> {
    await this.env.start({ processing: { distribution: 'uniform', minMs: 300, maxMs: 1200 } });
    this.file = await this.env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    // Just created, the output topics may not be known to every node yet: subscribing fails until they are.
    for (let tries = 1; ; tries++) {
      try {
        await this.env.collect();
        break;
      } catch (err) {
        if (tries >= 20) throw err;
        await sleep(500);
      }
    }
    for (let i = 0; i < 2; i++) {
      this.members.push(
        this.env.spawnConnector({ connector: { delivery: this.delivery, transactionLingerMs: 20 } }),
      );
    }
    const admin = this.env.kafka.admin();
    await admin.connect();
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const g = await admin.describeGroup(`${this.env.id}-group`);
        if (g.state === 'Stable' && g.members === 2) break;
        if (Date.now() > deadline)
          throw new Error(`${this.delivery}: the group did not settle with 2 members: ${g.state}`);
        await sleep(200);
      }
    } finally {
      await admin.disconnect();
    }
    this.watcher = setInterval(() => this.noteResults(), 100);
  }

  private noteResults(): void {
    const now = Date.now();
    for (const o of this.env.on('quality')) {
      const id = o.headers.event_id!;
      if (!this.firstResultAt.has(id)) this.firstResultAt.set(id, now);
    }
  }

  startProducing(): void {
    this.producing = true;
    this.producer = (async () => {
      for (let i = 0; this.producing; i++) {
        const id = `evt-cluster-${i}`;
        const at = Date.now();
        this.produced.set(id, at);
        // The test's own producer is not under test: a send refused by the node just killed is sent again.
        for (let tries = 1; ; tries++) {
          try {
            await this.env.produce(
              [arrival(id, this.file, { pipeline_configuration: 'QUALITY_ONLY' })],
              () => id,
            );
            break;
          } catch (err) {
            if (tries >= 60) throw err;
            await sleep(500);
          }
        }
        await sleep(Math.max(0, at + PRODUCE_EVERY_MS - Date.now()));
      }
    })();
  }

  async stopProducing(): Promise<void> {
    this.producing = false;
    await this.producer;
  }

  /** Waits until every document has a result (or `deadline` passes), then what happened. */
  async outcome(deadline: number): Promise<Outcome> {
    await waitFor(
      `${this.delivery}: every result`,
      () => [...this.produced.keys()].every((id) => this.firstResultAt.has(id)),
      Math.max(1000, deadline - Date.now()),
    ).catch(() => undefined);
    const dlq = this.env.on('dlq').length;
    const { records: kafkajsRecords, keys } = await committedRecords(this.env, this.env.topics.quality);
    const records = await javaCommittedRecords(this.env, this.env.topics.quality);
    const res = await fetch(`${this.env.sandbox.baseUrl}/_sandbox/submissions`);
    const items = (
      (await res.json()) as { items: Array<SandboxSubmission & { query_id: string; sha256: string | null }> }
    ).items;
    const analysed = new Map<string, number>();
    for (const s of items) if (s.sha256) analysed.set(s.query_id, (analysed.get(s.query_id) ?? 0) + 1);
    const inputs = await javaCommittedRecords(this.env, this.env.topics.arrived, 'key');
    const wrong = new Set([
      ...[...this.produced.keys()].filter((id) => !this.firstResultAt.has(id)),
      ...[...analysed].filter(([, n]) => n > 1).map(([id]) => id),
      ...[...records].filter(([, n]) => n > 1).map(([id]) => id),
      ...[...kafkajsRecords].filter(([, n]) => n > 1).map(([id]) => id),
    ]);
    const submissions: Record<string, unknown[]> = {};
    for (const id of wrong) submissions[id] = items.filter((s) => s.query_id === id);
    return {
      produced: this.produced,
      firstResultAt: new Map(this.firstResultAt),
      records,
      keys,
      dlq,
      kafkajsRecords,
      exitCodes: this.members.map((m) => m.exitCode),
      analysed,
      created: this.env.sandbox.stats().submissionsByQueryId,
      inputs,
      submissions,
    };
  }

  async stop(): Promise<void> {
    clearInterval(this.watcher);
    this.producing = false;
    await this.producer.catch(() => undefined);
    await this.env.stop();
  }
}

/**
 * The result records of `topic` as a new read_committed consumer reads them from the beginning, counted
 * by partition and offset, until it reads a marker written to each partition after them: the
 * collector's group may hand records over again after a node's loss, so its count proves nothing.
 */
async function committedRecords(
  env: E2E,
  topic: string,
): Promise<{ records: Map<string, number>; keys: Map<string, Set<string | null>> }> {
  const kafka = new kafkajs.Kafka({ brokers: env.brokers, logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: uniqueName('cluster-count'), readUncommitted: false });
  const nonce = uniqueName('count');
  const markers = new Set<number>();
  const offsets = new Map<string, Set<string>>();
  const keys = new Map<string, Set<string | null>>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        // The collector's marker header, so that the collector skips these too.
        if (message.headers?.e2e_read_marker?.toString() === nonce) markers.add(partition);
        const id = message.headers?.event_id?.toString();
        if (!id) return;
        offsets.set(id, (offsets.get(id) ?? new Set()).add(`${partition}:${message.offset}`));
        keys.set(id, (keys.get(id) ?? new Set()).add(message.key?.toString() ?? null));
      },
    });
    for (let partition = 0; partition < env.topics.outputPartitions; partition++) {
      await env.producer.send(topic, [
        { key: 'marker', value: null, partition, headers: { e2e_read_marker: nonce } },
      ]);
    }
    await waitFor(
      `${topic} read up to its markers`,
      () => markers.size === env.topics.outputPartitions,
      60_000,
    );
  } finally {
    await consumer.disconnect();
  }
  return { records: new Map([...offsets].map(([id, o]) => [id, o.size])), keys };
}

/**
 * The same count by Kafka's own Java consumer (read_committed, `test/harness/CommittedRecords.java`),
 * so that no record of an aborted transaction that kafkajs's filter let through is counted; by the
 * event_id header (results), or by the key (the input, keyed by event id).
 */
async function javaCommittedRecords(
  env: E2E,
  topic: string,
  by: 'event_id' | 'key' = 'event_id',
): Promise<Map<string, number>> {
  const java = findJava(17);
  if (!java) throw new Error('no Java >= 17 for CommittedRecords.java');
  const libs = cachePaths(defaultCacheDir()).kafkaLibs;
  const { stdout } = await run(
    java.java,
    [
      '-cp',
      path.join(libs, '*'),
      path.resolve('test/harness/CommittedRecords.java'),
      env.brokers.join(','),
      topic,
    ],
    { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
  );
  const records = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const [, , eventId, key] = line.split(' ');
    const id = by === 'key' ? key : eventId;
    if (id && id !== '-') records.set(id, (records.get(id) ?? 0) + 1);
  }
  return records;
}

let cluster: PrivateCluster;
const runs = new Map<Delivery, ModeRun>();
const outcomes = new Map<Delivery, Promise<Outcome>>();
/** Each outage: the node (from 1), when it was killed and when it was healthy again. */
const outages: Array<{ node: number; killedAt: number; backAt: number }> = [];

/** The node (from 1) leading most partitions of the modes' topics, other than `not`. */
async function busiestNode(not: number[]): Promise<number> {
  const kafka = new kafkajs.Kafka({ brokers: cluster.brokers, logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const topics = [...runs.values()].flatMap((r) =>
      Object.values(r.env.topics).filter((t): t is string => typeof t === 'string'),
    );
    const existing = new Set(await admin.listTopics());
    const meta = await admin.fetchTopicMetadata({ topics: topics.filter((t) => existing.has(t)) });
    const led = new Map<number, number>([
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
    for (const t of meta.topics)
      for (const p of t.partitions) led.set(p.leader, (led.get(p.leader) ?? 0) + 1);
    const [node] = [...led].filter(([n]) => !not.includes(n)).sort((a, b) => b[1] - a[1])[0]!;
    return node;
  } finally {
    await admin.disconnect();
  }
}

async function outage(node: number): Promise<void> {
  const killedAt = Date.now();
  await cluster.kill(node);
  await sleep(DOWN_MS);
  await cluster.up();
  outages.push({ node, killedAt, backAt: Date.now() });
  console.log(`kafka-${node} killed, back (healthy) ${((Date.now() - killedAt) / 1000).toFixed(1)} s later`);
}

/** The promise, with its rejection marked handled: a test awaits (and so sees) it later. */
function started<T>(run: Promise<T>): Promise<T> {
  run.catch(() => undefined);
  return run;
}

beforeAll(async () => {
  cluster = await startPrivateCluster();
  for (const delivery of MODES) runs.set(delivery, new ModeRun(delivery, cluster.brokers));
  await Promise.all([...runs.values()].map((r) => r.start()));
  for (const r of runs.values()) r.startProducing();
  await sleep(5_000);
  const first = await busiestNode([]);
  await outage(first);
  await sleep(5_000);
  await outage(await busiestNode([first]));
  // Documents keep arriving a few seconds after the last return too, and until each mode has its
  // MIN_DOCS (a loaded machine slows the test's own producer during the outages), a minute at most.
  const until = Date.now() + 5_000;
  while (
    Date.now() < until ||
    ([...runs.values()].some((r) => r.produced.size < MIN_DOCS) && Date.now() < until + 60_000)
  )
    await sleep(200);
  await Promise.all([...runs.values()].map((r) => r.stopProducing()));
  const deadline = outages.at(-1)!.backAt + WITHIN_MS + 10_000;
  for (const [delivery, run] of runs) outcomes.set(delivery, started(run.outcome(deadline)));
  await Promise.allSettled(outcomes.values());
}, 480_000);

afterAll(async () => {
  try {
    for (const run of runs.values()) await run.stop();
  } finally {
    await cluster?.remove();
  }
}, 180_000);

/** When a document's result was due: a minute after the return of the first outage that ended after it arrived. */
function dueBy(producedAt: number): number {
  const next = outages.find((o) => o.backAt >= producedAt);
  return (next ? next.backAt : producedAt) + WITHIN_MS;
}

describe.each(MODES)('two nodes of a three-node cluster killed in turn (%s)', (delivery) => {
  it('every result within a minute of the return, nothing analysed twice, both members alive', async () => {
    const o = await outcomes.get(delivery)!;
    expect(outages.map((x) => x.node)).toHaveLength(2);
    expect(new Set(outages.map((x) => x.node)).size).toBe(2);
    const ids = [...o.produced.keys()];
    const missing = ids.filter((id) => !o.firstResultAt.has(id));
    const late = ids.filter((id) => (o.firstResultAt.get(id) ?? Infinity) > dueBy(o.produced.get(id)!));
    const twice = [...o.analysed].filter(([, n]) => n > 1).map(([id]) => id);
    const duplicates = [...o.records].filter(([, n]) => n > 1).length;
    const afterReturn = outages.map((x) =>
      Math.max(
        0,
        ...ids
          .filter((id) => o.produced.get(id)! <= x.backAt)
          .map((id) => (o.firstResultAt.get(id) ?? Infinity) - x.backAt),
      ),
    );
    console.log(
      `${delivery}: ${ids.length} documents, ${ids.length - missing.length} results, ${late.length} late, ` +
        `last result ${afterReturn.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(' and ')} after each return ` +
        `(nodes ${outages.map((x) => x.node).join(', ')}), ${twice.length} analysed twice, ` +
        `${Object.values(o.created).filter((n) => n > 1).length} created twice, ${duplicates} with more than one result record, ` +
        `${o.dlq} dead letters, ${[...o.inputs.values()].filter((n) => n > 1).length} sent twice to the input; ` +
        `${[...o.kafkajsRecords.values()].filter((n) => n > 1).length} with more than one as kafkajs reads them; ` +
        `documents that came out wrong (input records, result records, as kafkajs reads them, submissions): ` +
        JSON.stringify(
          Object.entries(o.submissions).map(([id, subs]) => [
            id,
            o.inputs.get(id),
            o.records.get(id),
            o.kafkajsRecords.get(id),
            subs,
          ]),
        ),
    );
    expect(ids.length).toBeGreaterThanOrEqual(MIN_DOCS);
    expect(missing).toEqual([]);
    expect(late).toEqual([]);
    expect(o.exitCodes).toEqual([null, null]);
    expect(o.dlq).toBe(0);
    expect(twice).toEqual([]);
    // Each document's results name one submission (at-least-once may publish one twice).
    for (const id of ids) expect(o.keys.get(id)?.size).toBe(1);
    if (delivery === 'exactly-once') {
      expect([...o.records].filter(([, n]) => n !== 1)).toEqual([]);
    }
  });
});
