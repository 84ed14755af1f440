/**
 * The naive baseline the benchmark compares docstream with: a plain consumer that takes one record at
 * a time and does every step in sequence - create, upload, poll each result at a fixed interval until
 * it is final, publish it - before it reads the next record. It uses the same Kafka wrappers and the
 * same API client (so the same limiter), only without any concurrency.
 */
import { DocumentAnalysisClient } from '../src/client/client.js';
import { NotFoundError } from '../src/client/errors.js';
import type { Config } from '../src/config/index.js';
import type { KafkaClient } from '../src/kafka/index.js';
import { RESULT_KINDS, sleep, uniqueName, type ResultKind } from './lib/harness.js';

export interface BaselineOptions {
  kafka: KafkaClient;
  topics: Config['topics'];
  apiBaseUrl: string;
  ratePerSecond: number;
  pollIntervalMs: number;
  /** Stop after this many documents... */
  maxDocs: number;
  /** ...or at this time (epoch ms), whichever comes first. */
  deadline: number;
  /** Called with the count after each document (progress display). */
  onProcessed?: (processed: number) => void;
}

export interface BaselineResult {
  processed: number;
  /** When the first record was taken and the last document finished (epoch ms). */
  startedAt: number;
  endedAt: number;
}

export async function runBaseline(o: BaselineOptions): Promise<BaselineResult> {
  const client = new DocumentAnalysisClient({
    baseUrl: o.apiBaseUrl,
    clientId: 'sandbox-client',
    clientSecret: 'sandbox-secret',
    rateLimit: { ratePerSecond: o.ratePerSecond },
  });
  const getters: Record<ResultKind, (id: string) => Promise<unknown>> = {
    fraud: (id) => client.getFraud(id),
    quality: (id) => client.getQuality(id),
    classification: (id) => client.getClassification(id),
  };
  const admin = o.kafka.admin();
  await admin.connect();
  // The dead-letter topic too, only so that the benchmark's collector can follow the same topics.
  await admin.ensureTopics(
    [...RESULT_KINDS.map((k) => o.topics[k]), o.topics.dlq].map((topic) => ({
      topic,
      numPartitions: o.topics.outputPartitions,
    })),
  );
  await admin.disconnect();

  const producer = o.kafka.producer();
  await producer.connect();
  const consumer = o.kafka.consumer({ groupId: uniqueName('baseline'), maxWaitTimeMs: 100 });
  await consumer.connect();
  await consumer.subscribe([o.topics.arrived], { fromBeginning: true });

  let processed = 0;
  let startedAt = 0;
  let endedAt = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const done = () => processed >= o.maxDocs || Date.now() > o.deadline;

  await consumer.run(async (batch, control) => {
    for (const m of batch.messages) {
      if (done() || !control.isRunning()) {
        finish();
        return;
      }
      startedAt ||= Date.now();
      const event = JSON.parse(m.value!.toString('utf8')) as {
        event_id: string;
        query_id: string;
        blob: { url: string };
      };
      const created = await client.createSubmission({ query_id: event.query_id });
      await client.upload(created.upload_url, new URL(event.blob.url).pathname);
      for (const kind of RESULT_KINDS) {
        let body: unknown;
        for (;;) {
          try {
            body = await getters[kind](created.submission_id);
            break;
          } catch (err) {
            if (!(err instanceof NotFoundError)) throw err;
            await sleep(o.pollIntervalMs);
          }
        }
        await producer.send(o.topics[kind], [
          { key: created.submission_id, value: JSON.stringify(body), headers: { event_id: event.event_id } },
        ]);
      }
      processed += 1;
      endedAt = Date.now();
      o.onProcessed?.(processed);
      control.resolveOffset(m.offset);
      await control.heartbeat();
    }
    if (done()) finish();
  });

  const poll = setInterval(() => {
    if (done()) finish();
  }, 200);
  await finished;
  clearInterval(poll);
  await consumer.disconnect().catch(() => undefined);
  await producer.disconnect().catch(() => undefined);
  return { processed, startedAt, endedAt };
}
