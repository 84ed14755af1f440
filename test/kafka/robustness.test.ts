/**
 * Issue 12 at the Kafka and registry layers, against the real broker and Apicurio: instances that
 * start together on new topics, messages too large for their topic, unknown schema ids.
 */
import { jest } from '@jest/globals';
import avro from 'avsc';
import {
  CoalescingSender,
  MessageTooLargeError,
  type KafkaAdmin,
  type KafkaProducer,
} from '../../src/kafka/index.js';
import { decodeDocumentArrived } from '../../src/serde/input.js';
import { Registry } from '../../src/serde/registry.js';
import { collectingConsumer, kafkaClient, REGISTRY_URL, uniqueName, waitFor } from './helpers.js';

jest.setTimeout(90_000);

const client = kafkaClient();
let admin: KafkaAdmin;
const created: string[] = [];

beforeAll(async () => {
  admin = client.admin();
  await admin.connect();
});

afterAll(async () => {
  await admin?.deleteTopics(created);
  await admin?.disconnect();
});

function topicName(prefix: string): string {
  const topic = uniqueName(prefix);
  created.push(topic);
  return topic;
}

describe('instances starting together', () => {
  it('three admin clients creating the same new topics at once all succeed, each topic created once', async () => {
    const topics = [topicName('race-a'), topicName('race-b'), topicName('race-state')];
    const specs = [
      { topic: topics[0]!, numPartitions: 3 },
      { topic: topics[1]!, numPartitions: 1 },
      { topic: topics[2]!, numPartitions: 3, configs: { 'cleanup.policy': 'compact' } },
    ];
    const admins = [kafkaClient(), kafkaClient(), kafkaClient()].map((c) => c.admin());
    await Promise.all(admins.map((a) => a.connect()));
    try {
      // Each instance uses the topics right away, as the connector does at start-up.
      const results = await Promise.all(
        admins.map(async (a) => {
          const result = await a.ensureTopics(specs);
          for (const topic of topics) await a.describeTopic(topic, ['cleanup.policy']);
          return result;
        }),
      );
      for (const result of results) {
        expect([...result.created, ...result.existing].sort()).toEqual([...topics].sort());
        expect(result.mismatches).toEqual([]);
      }
      // Every topic was created by exactly one of them.
      const creations = results.flatMap((result) => result.created).sort();
      expect(creations).toEqual([...topics].sort());
      // And every instance can use them at once: metadata shows every partition with a leader.
      for (const a of admins) {
        expect(await a.partitionCount(topics[0]!)).toBe(3);
        const state = await a.describeTopic(topics[2]!, ['cleanup.policy']);
        expect(state.partitions.every((p) => p.leader >= 0)).toBe(true);
      }
    } finally {
      await Promise.all(admins.map((a) => a.disconnect()));
    }
  });

  it('names the topic and the broker answer when creation cannot succeed', async () => {
    const topic = topicName('bad-config');
    await expect(
      admin.ensureTopics([{ topic, numPartitions: 1, configs: { 'cleanup.policy': 'sideways' } }]),
    ).rejects.toThrow(new RegExp(`creating topic ${topic}: .*INVALID_CONFIG`));
  });

  it('three registries registering the same schema on a new subject at once get one id', async () => {
    const topic = uniqueName('race-subject');
    const registries = [0, 1, 2].map(() => new Registry({ url: REGISTRY_URL }));
    const ids = await Promise.all(registries.map((r) => r.registerValueSchema(topic, 'DeadLetter')));
    expect(new Set(ids).size).toBe(1);
  });
});

describe('messages too large for their topic', () => {
  let producer: KafkaProducer;
  let topic: string;

  beforeAll(async () => {
    topic = topicName('small-max');
    await admin.ensureTopics([{ topic, numPartitions: 1, configs: { 'max.message.bytes': '20000' } }]);
    producer = client.producer();
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
  });

  it('reads the topic limit from the broker', async () => {
    expect(await admin.maxMessageBytes([topic])).toEqual({ [topic]: 20000 });
  });

  it('with the topic limit known, refuses only the oversized message before sending', async () => {
    const limited = client.producer();
    await limited.connect();
    try {
      limited.setTopicLimits(await admin.maxMessageBytes([topic]));
      const sender = new CoalescingSender(limited);
      const results = await Promise.allSettled([
        sender.send(topic, { key: 'known-1', value: 'small' }),
        sender.send(topic, { key: 'known-big', value: Buffer.alloc(50_000) }),
        sender.send(topic, { key: 'known-2', value: 'small' }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const error = (results[1] as PromiseRejectedResult).reason as MessageTooLargeError;
      expect(error).toBeInstanceOf(MessageTooLargeError);
      expect(error).toMatchObject({ limit: 20000, fromBroker: false, retriable: false });
    } finally {
      await limited.disconnect();
    }
  });

  it('with the limit unknown, a gathered batch the broker refuses is resent so only the culprit fails', async () => {
    // This producer believes 1,000,000 bytes: the broker is the one that refuses.
    const sender = new CoalescingSender(producer);
    const blocker = sender.send(topic, { key: 'first', value: 'x' });
    const gathered = [
      ...[1, 2, 3].map((i) => sender.send(topic, { key: `part-${i}`, value: Buffer.alloc(8000, i) })),
      sender.send(topic, { key: 'culprit', value: Buffer.alloc(30_000) }),
      sender.send(topic, { key: 'after', value: 'y' }),
    ];
    await blocker;
    const results = await Promise.allSettled(gathered);
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect((results[3] as PromiseRejectedResult).reason).toMatchObject({
      name: 'MessageTooLargeError',
      fromBroker: true,
      retriable: false,
    });
    // The idempotent producer goes on after the refusals.
    await sender.send(topic, { key: 'later', value: 'z' });
    const { consumer, messages } = await collectingConsumer(client, [topic]);
    try {
      await waitFor('the accepted messages', () => messages.some((m) => m.key?.toString() === 'later'));
      const keys = messages.map((m) => m.key?.toString());
      expect(keys).toEqual(expect.arrayContaining(['first', 'part-1', 'part-2', 'part-3', 'after', 'later']));
      expect(keys).not.toContain('culprit');
      expect(keys).not.toContain('known-big');
      expect(new Set(keys).size).toBe(keys.length);
    } finally {
      await consumer.disconnect();
    }
  });
});

describe('schema ids the registry does not have', () => {
  it('50 records with one unknown id make one lookup and all become unknown_schema', async () => {
    const registry = new Registry({ url: REGISTRY_URL });
    const unknownId = 2_000_000_000 + Math.floor(Math.random() * 100_000_000);
    const header = Buffer.alloc(5);
    header.writeUInt32BE(unknownId, 1);
    const record = Buffer.concat([header, avro.Type.forSchema('string').toBuffer('x')]);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => decodeDocumentArrived(record, registry)),
    );
    expect(results.every((r) => !r.ok && r.code === 'unknown_schema')).toBe(true);
    await decodeDocumentArrived(record, registry);
    expect(registry.schemaLookupCount).toBe(1);
  });
});

describe('a consumer that crashes', () => {
  const retriableFalse = (message: string) => Object.assign(new Error(message), { retriable: false });

  it('is restarted after a non-retriable handler error, reports unhealthy meanwhile, and goes on consuming', async () => {
    const topic = topicName('crash-once');
    await admin.ensureTopics([{ topic, numPartitions: 1 }]);
    const producer = client.producer();
    await producer.connect();
    const consumer = client.consumer({
      groupId: uniqueName('crash-group'),
      maxWaitTimeMs: 200,
      restart: { initialDelayMs: 200, maxDelayMs: 1000 },
    });
    const seen: string[] = [];
    const health: boolean[] = [];
    const restarts: number[] = [];
    const crashes: boolean[] = [];
    let thrown = false;
    consumer.onCrash((crash) => {
      crashes.push(crash.restart);
      health.push(consumer.healthy());
    });
    consumer.onRestart((restart) => restarts.push(restart.attempt));
    const joins: Array<{ added: number[]; removed: number[] }> = [];
    consumer.onGroupJoin((join) =>
      joins.push({ added: join.added[topic] ?? [], removed: join.removed[topic] ?? [] }),
    );
    try {
      await producer.send(topic, [
        { key: 'k', value: 'poison-once' },
        { key: 'k', value: 'next' },
      ]);
      await consumer.connect();
      await consumer.subscribe([topic], { fromBeginning: true });
      await consumer.run(async (batch) => {
        if (!thrown) {
          thrown = true;
          throw retriableFalse('a handler bug that kafkajs does not restart after');
        }
        seen.push(...batch.messages.map((m) => String(m.value)));
      });
      await waitFor('both records after the restart', () => seen.includes('next'));
      expect(seen).toEqual(['poison-once', 'next']);
      expect(crashes).toEqual([true]);
      expect(health).toEqual([false]);
      expect(restarts).toEqual([1]);
      expect(consumer.restarts).toBe(1);
      expect(consumer.healthy()).toBe(true);
      // Joined, left the group with the crash, joined again: the partition is revoked and re-added.
      expect(joins).toEqual([
        { added: [0], removed: [] },
        { added: [], removed: [0] },
        { added: [0], removed: [] },
      ]);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
  });

  it('gives up after the bound and tells the fatal listeners, staying unhealthy', async () => {
    const topic = topicName('crash-always');
    await admin.ensureTopics([{ topic, numPartitions: 1 }]);
    const producer = client.producer();
    await producer.connect();
    const consumer = client.consumer({
      groupId: uniqueName('crash-group'),
      maxWaitTimeMs: 200,
      restart: { initialDelayMs: 100, maxDelayMs: 200, maxRestarts: 2 },
    });
    const fatal: Error[] = [];
    consumer.onFatal((error) => fatal.push(error));
    try {
      await producer.send(topic, [{ key: 'k', value: 'poison' }]);
      await consumer.connect();
      await consumer.subscribe([topic], { fromBeginning: true });
      await consumer.run(async () => {
        throw retriableFalse('always fails');
      });
      await waitFor('the fatal callback', () => fatal.length > 0);
      expect(fatal).toHaveLength(1);
      expect(fatal[0]!.message).toMatch(/crashed 3 times in a row; giving up: .*always fails/);
      expect(consumer.restarts).toBe(2);
      expect(consumer.healthy()).toBe(false);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
  });
});
