/**
 * Producing and consuming through the Kafka module against the real Kafka 4.1 broker:
 * idempotent sends, explicit commits, partial batches, pause/resume and group membership events.
 */
import { jest } from '@jest/globals';
import type {
  GroupJoin,
  IncomingMessage,
  KafkaAdmin,
  KafkaConsumer,
  KafkaProducer,
} from '../../src/kafka/index.js';
import { kafkaClient, uniqueName, waitFor } from './helpers.js';

// The integration project's testTimeout is not applied per project by jest; set it here.
jest.setTimeout(60_000);

const client = kafkaClient();
let admin: KafkaAdmin;
let producer: KafkaProducer;
const created: string[] = [];
const running: KafkaConsumer[] = [];

beforeAll(async () => {
  admin = client.admin();
  producer = client.producer();
  await Promise.all([admin.connect(), producer.connect()]);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((consumer) => consumer.disconnect()));
});

afterAll(async () => {
  await admin?.deleteTopics(created);
  await Promise.all([producer?.disconnect(), admin?.disconnect()]);
});

async function newTopic(numPartitions: number): Promise<string> {
  const topic = uniqueName('consume');
  created.push(topic);
  await admin.ensureTopics([{ topic, numPartitions }]);
  return topic;
}

function newConsumer(groupId = uniqueName('group')): KafkaConsumer {
  const consumer = client.consumer({
    groupId,
    maxWaitTimeMs: 200,
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 500,
  });
  running.push(consumer);
  return consumer;
}

const values = (messages: IncomingMessage[]) => messages.map((message) => message.value?.toString());

describe('producer', () => {
  it('keeps every message of concurrent idempotent sends, without loss or duplicates', async () => {
    const topic = await newTopic(1);
    const sends = Array.from({ length: 20 }, (_, index) =>
      producer.send(topic, [{ key: 'same', value: String(index), headers: { event_id: `e${index}` } }]),
    );
    const records = (await Promise.all(sends)).flat();
    expect(records).toHaveLength(20);
    expect(new Set(records.map((record) => record.baseOffset)).size).toBe(20);
    expect((await admin.topicOffsets(topic))[0]).toEqual({ partition: 0, low: '0', high: '20' });
  });

  it('sends to several topics and to explicit partitions in one batch', async () => {
    const [a, b] = [await newTopic(3), await newTopic(1)];
    const records = await producer.sendBatch([
      { topic: a, messages: [{ key: 'k', value: 'x', partition: 2 }] },
      { topic: b, messages: [{ key: null, value: 'y' }] },
    ]);
    expect(
      records
        .map(({ topic, partition }) => ({ topic, partition }))
        .sort((x, y) => x.topic.localeCompare(y.topic)),
    ).toEqual(
      [
        { topic: a, partition: 2 },
        { topic: b, partition: 0 },
      ].sort((x, y) => x.topic.localeCompare(y.topic)),
    );
  });
});

describe('consumer', () => {
  it('commits only what it is told to, and a restarted member resumes from that offset', async () => {
    const topic = await newTopic(1);
    await producer.send(
      topic,
      ['a', 'b', 'c', 'd'].map((value) => ({ key: null, value })),
    );
    const groupId = uniqueName('group');

    const first = newConsumer(groupId);
    const seen: IncomingMessage[] = [];
    await first.connect();
    await first.subscribe([topic], { fromBeginning: true });
    await first.run(async (batch) => {
      seen.push(...batch.messages);
    });
    await waitFor('four records', () => seen.length === 4);
    expect(values(seen)).toEqual(['a', 'b', 'c', 'd']);
    expect(seen[0]?.offset).toBe('0');
    // Only "a" and "b" are done: the next offset to read is 2.
    await first.commitOffsets([{ topic, partition: 0, offset: '2' }]);
    await first.disconnect();
    running.splice(running.indexOf(first), 1);
    expect(Object.fromEntries(await admin.groupOffsets(groupId, topic))).toEqual({ 0: '2' });

    const second = newConsumer(groupId);
    const again: IncomingMessage[] = [];
    await second.connect();
    await second.subscribe([topic], { fromBeginning: true });
    await second.run(async (batch) => {
      again.push(...batch.messages);
    });
    await waitFor('the uncommitted records', () => again.length === 2);
    expect(values(again)).toEqual(['c', 'd']);
  });

  it('takes part of a batch without auto-resolve: the rest is fetched again', async () => {
    const topic = await newTopic(1);
    await producer.send(
      topic,
      ['a', 'b', 'c', 'd', 'e'].map((value) => ({ key: null, value })),
    );
    const consumer = newConsumer();
    const batches: string[][] = [];
    await consumer.connect();
    await consumer.subscribe([topic], { fromBeginning: true });
    await consumer.run(
      async (batch, control) => {
        batches.push(values(batch.messages) as string[]);
        // Take two records per batch only, as a full connector would.
        const taken = batch.messages.slice(0, 2);
        const last = taken[taken.length - 1];
        if (last) control.resolveOffset(last.offset);
      },
      { autoResolve: false },
    );
    await waitFor('the last record to be handed over', () => batches.some((batch) => batch[0] === 'e'));
    expect(batches.map((batch) => batch[0])).toEqual(['a', 'c', 'e']);
    expect(batches[0]).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('pauses and resumes one partition while the others keep flowing', async () => {
    const topic = await newTopic(2);
    const consumer = newConsumer();
    const seen: IncomingMessage[] = [];
    await consumer.connect();
    await consumer.subscribe([topic], { fromBeginning: true });
    await consumer.run(async (batch) => {
      seen.push(...batch.messages);
    });
    await waitFor('the assignment', () => (consumer.currentAssignment()[topic]?.length ?? 0) === 2);
    consumer.pause(topic, [0]);
    expect(consumer.paused()).toEqual({ [topic]: [0] });
    await producer.send(topic, [
      { key: null, value: 'p0', partition: 0 },
      { key: null, value: 'p1', partition: 1 },
    ]);
    await waitFor('the record of the running partition', () => seen.length === 1);
    expect(values(seen)).toEqual(['p1']);
    // Give a paused partition a few fetch cycles to (wrongly) deliver before resuming it.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(values(seen)).toEqual(['p1']);
    consumer.resume(topic, [0]);
    await waitFor('the record of the resumed partition', () => seen.length === 2);
    expect(values(seen)).toEqual(['p1', 'p0']);
    expect(consumer.paused()).toEqual({});
  });

  it('reports joins with the partitions gained and lost when a second member arrives and leaves', async () => {
    const topic = await newTopic(2);
    const groupId = uniqueName('group');
    const first = newConsumer(groupId);
    const joins: GroupJoin[] = [];
    let rebalances = 0;
    first.onGroupJoin((join) => joins.push(join));
    first.onRebalancing(() => {
      rebalances += 1;
    });
    await first.connect();
    await first.subscribe([topic]);
    await first.run(async () => {});
    await waitFor('the first join', () => joins.length === 1);
    expect(joins[0]).toMatchObject({
      assignment: { [topic]: [0, 1] },
      added: { [topic]: [0, 1] },
      removed: {},
    });

    const second = newConsumer(groupId);
    await second.connect();
    await second.subscribe([topic]);
    await second.run(async () => {});
    // The join that shares the partitions with the second member. kafkajs can also rejoin on its own
    // (stale metadata for a topic just created, on a busy broker): such a join keeps both partitions
    // and comes without the rebalancing notice, which only a fetch answered "rebalance in progress"
    // gives.
    const sharing = (j: GroupJoin) => (j.assignment[topic]?.length ?? 0) === 1;
    await waitFor('the join that shares the partitions', () => joins.some(sharing));
    const at = joins.findIndex(sharing);
    if (at === 1) expect(rebalances).toBeGreaterThanOrEqual(1);
    expect(joins.slice(1, at).every((j) => (j.assignment[topic]?.length ?? 0) === 2)).toBe(true);
    const kept = joins[at]!.assignment[topic]!;
    expect(joins[at]!.removed).toEqual({ [topic]: [0, 1].filter((partition) => !kept.includes(partition)) });
    expect(joins[at]!.added).toEqual({});

    await second.disconnect();
    running.splice(running.indexOf(second), 1);
    await waitFor('the join after the second member left', () =>
      joins.slice(at + 1).some((j) => (j.assignment[topic]?.length ?? 0) === 2),
    );
    const after = joins.slice(at + 1).find((j) => (j.assignment[topic]?.length ?? 0) === 2)!;
    expect(after).toMatchObject({ assignment: { [topic]: [0, 1] }, removed: {} });
  });
});
