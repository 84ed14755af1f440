/**
 * Decision latency, measured in one run on the local stack and the sandbox: from the moment the
 * sandbox's verdict is ready to the decision event's timestamp in Kafka, for the same documents sent
 * through three connectors: one that takes decisions from webhooks it receives itself (polling off),
 * one that takes them from webhooks another instance received (a receiver-only `docstream webhooks`
 * records them in the webhook topic, the connector reads them from there; polling off), and one that
 * polls for them.
 * Usage: node dist/bench/decision-latency.js [--docs N] [--rate DOCS_PER_S] [--processing-ms MS]
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, prefixedTopics } from '../config/index.js';
import { Connector } from '../connector/connector.js';
import { OutputReader } from '../connector/outputs/output-reader.js';
import { writeCorpus } from '../demo/corpus.js';
import { KafkaClient } from '../kafka/client.js';
import { silentLogger } from '../observability/logger.js';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { scratchName, sweepRunTopics } from '../stack/scratch-topics.js';

type VariantName = 'webhooks' | 'relayed' | 'polling';

interface Variant {
  name: VariantName;
  sandbox: Sandbox;
  connector: Connector;
  /** The receiver-only instance of the relayed variant. */
  receiver: Connector | null;
  topics: ReturnType<typeof prefixedTopics>;
}

const BROKERS = ['localhost:9092'];

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      docs: { type: 'string', default: '200' },
      'processing-ms': { type: 'string', default: '1000' },
      rate: { type: 'string', default: '20' },
    },
  });
  const docs = Number(values.docs);
  const processingMs = Number(values['processing-ms']);
  if (!Number.isInteger(docs) || docs < 1 || docs > 2000)
    throw new Error('--docs: an integer from 1 to 2000');
  if (!Number.isFinite(processingMs) || processingMs < 10) throw new Error('--processing-ms: at least 10');
  const rate = Number(values.rate);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1000)
    throw new Error('--rate: documents per second, 0..1000');

  // A scratch name: its topics are deleted at the end, whichever way the run ends.
  const run = scratchName('latency');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-latency-'));
  const [sample] = await writeCorpus(dir, ['clean-pdf']);
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: run });
  const producer = kafka.producer();
  await producer.connect();
  const variants: Variant[] = [];

  for (const name of ['webhooks', 'relayed', 'polling'] as const) {
    const sandbox = await startSandbox({
      port: 0,
      processing: {
        distribution: 'uniform',
        meanMs: processingMs,
        minMs: processingMs / 2,
        maxMs: processingMs * 1.5,
      },
    });
    const topics = prefixedTopics(`${run}.${name}`, 1);
    const config = loadConfig({
      env: {},
      files: [],
      overrides: {
        topics,
        kafka: { groupId: `${run}-${name}` },
        api: { baseUrl: sandbox.baseUrl, ratePerSecond: 500 },
        blobs: { fileRoots: [dir] },
        connector: { decisionPolling: name === 'polling', pollInitialMs: 250, pollMaxMs: 4000 },
        webhooks: name === 'webhooks' ? { enabled: true, port: 0, secrets: [secret] } : { enabled: false },
        http: { port: 0 },
      },
    });
    const connector = await Connector.start({ config, logger: silentLogger });
    let receiver: Connector | null = null;
    if (name === 'relayed') {
      const receiving = {
        ...config,
        webhooks: { ...config.webhooks, enabled: true, port: 0, secrets: [secret] },
      };
      receiver = await Connector.start({ config: receiving, logger: silentLogger, consume: false });
    }
    const target = (receiver ?? connector).webhookUrl;
    if (target) sandbox.configure({ webhook: { url: target, secret } });
    variants.push({ name, sandbox, connector, receiver, topics });
  }

  const decisions = new Map<string, Map<string, number>>();
  const readers = variants.map(
    (v) =>
      new OutputReader({
        kafka,
        topics: v.topics,
        groupId: `${run}-reader-${v.name}`,
        kinds: ['decision'],
        maxWaitTimeMs: 50,
      }),
  );
  for (const reader of readers) {
    await reader.start((r) => {
      const seen = decisions.get(r.topic) ?? new Map<string, number>();
      seen.set(r.key!, r.timestamp);
      decisions.set(r.topic, seen);
    });
  }

  // Documents arrive at a steady rate, the same ones to both variants at the same time.
  const started = Date.now();
  const tick = 100;
  const perTick = Math.max(1, Math.round((rate * tick) / 1000));
  for (let sent = 0; sent < docs; sent += perTick) {
    const count = Math.min(perTick, docs - sent);
    await Promise.all(
      variants.map((v) =>
        producer.send(
          v.topics.arrived,
          Array.from({ length: count }, (_, j) => {
            const i = sent + j;
            return {
              key: `doc-${i}`,
              value: JSON.stringify({
                event_id: `${v.name}-${i}`,
                blob: { url: `file://${sample!.file}` },
                query_id: `${v.name}-${i}`,
                enable_decision: true,
              }),
            };
          }),
        ),
      ),
    );
    await new Promise((r) => setTimeout(r, tick));
  }
  const deadline = Date.now() + 10 * 60_000;
  while (
    Date.now() < deadline &&
    variants.some((v) => (decisions.get(v.topics.decision)?.size ?? 0) < docs)
  ) {
    await new Promise((r) => setTimeout(r, 200));
  }

  const rows: string[] = [];
  const report: Record<string, unknown> = { docs, rate, processingMs, measuredAt: new Date().toISOString() };
  for (const v of variants) {
    const listing = (await (await fetch(`${v.sandbox.baseUrl}/_sandbox/submissions`)).json()) as {
      items: Array<{ id: string; decision_ready_at: string | null }>;
    };
    const seen = decisions.get(v.topics.decision) ?? new Map<string, number>();
    const latencies = listing.items
      .filter((s) => s.decision_ready_at && seen.has(s.id))
      .map((s) => seen.get(s.id)! - Date.parse(s.decision_ready_at!))
      .sort((a, b) => a - b);
    const decisionCalls = Object.entries(v.sandbox.stats().requests)
      .filter(([route]) => route.includes('/decision'))
      .reduce((sum, [, n]) => sum + n, 0);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    report[v.name] = { measured: latencies.length, p50Ms: p50, p99Ms: p99, decisionCalls };
    rows.push(
      `${v.name.padEnd(9)} ${String(latencies.length).padStart(5)}  p50 ${String(p50).padStart(6)} ms  p99 ${String(p99).padStart(6)} ms  decision GETs ${decisionCalls}`,
    );
  }
  console.log(
    `decision latency, verdict ready in the sandbox → decision event in Kafka (${docs} documents each, ` +
      `processing ~${processingMs} ms, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  for (const r of rows) console.log(r);
  console.log(JSON.stringify(report));

  for (const reader of readers) await reader.stop();
  await producer.disconnect();
  for (const v of variants) {
    await v.connector.stop();
    await v.receiver?.stop();
    await v.sandbox.close();
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

const sweep = () => sweepRunTopics(BROKERS, (line) => console.error(`decision-latency: ${line}`));
main().then(
  () => sweep().then(() => process.exit(0)),
  (err: unknown) => {
    console.error(`decision-latency: ${err instanceof Error ? err.message : String(err)}`);
    return sweep().then(() => process.exit(1));
  },
);
