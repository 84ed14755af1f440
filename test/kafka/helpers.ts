/** Shared set-up for the Kafka and registry integration tests: the running local stack. */
import {
  KafkaClient,
  type IncomingMessage,
  type KafkaAdmin,
  type KafkaConsumer,
  type KafkaProducer,
} from '../../src/kafka/index.js';
import { DEFAULT_REGISTRY_URL } from '../../src/serde/registry.js';
import { uniqueName } from '../harness/topics.js';

const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
export const REGISTRY_URL = process.env.DOCSTREAM_REGISTRY_URL ?? DEFAULT_REGISTRY_URL;

export { uniqueName };

export function kafkaClient(): KafkaClient {
  return new KafkaClient({ brokers: BROKERS, clientId: 'docstream-test' });
}

/**
 * An admin and a producer of `client` for a test file, connected before its tests and disconnected
 * after them; the topics pushed to `created` are deleted then.
 */
export function adminAndProducer(client: KafkaClient): {
  admin: KafkaAdmin;
  producer: KafkaProducer;
  created: string[];
} {
  const admin = client.admin();
  const producer = client.producer();
  const created: string[] = [];
  beforeAll(async () => {
    await Promise.all([admin.connect(), producer.connect()]);
  });
  afterAll(async () => {
    await admin.deleteTopics(created);
    await Promise.all([producer.disconnect(), admin.disconnect()]);
  });
  return { admin, producer, created };
}

/** Polls `condition` every 100 ms until it holds or `timeoutMs` passes (then fails with `what`). */
export async function waitFor(what: string, condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts a consumer that records every message it gets, resolving each batch. */
export async function collectingConsumer(
  client: KafkaClient,
  topics: string[],
): Promise<{ consumer: KafkaConsumer; messages: IncomingMessage[] }> {
  const consumer = client.consumer({ groupId: uniqueName('test-group'), maxWaitTimeMs: 200 });
  const messages: IncomingMessage[] = [];
  await consumer.connect();
  await consumer.subscribe(topics, { fromBeginning: true });
  await consumer.run(async (batch) => {
    messages.push(...batch.messages);
  });
  return { consumer, messages };
}

/** Direct calls to the registry's ccompat API, to set up situations the wrapper must cope with. */
export async function registryCall(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${REGISTRY_URL}${path}`, {
    method,
    headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : null };
}
