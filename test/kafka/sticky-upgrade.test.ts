/**
 * A rolling upgrade on the real broker: a group of an older docstream (kafkajs' round-robin only, as
 * plain kafkajs consumers are) is joined by a member with the sticky assignor. The broker must accept
 * it (both list RoundRobinAssigner) and run round-robin while the older member is there; once it is
 * gone the group runs docstream-sticky, and a further member takes only its share.
 */
import kafkajs from 'kafkajs';
import type { GroupJoin, KafkaConsumer } from '../../src/kafka/consumer.js';
import { STICKY_PROTOCOL } from '../../src/kafka/sticky-assignor.js';
import { kafkaClient, uniqueName, waitFor } from './helpers.js';

const { Kafka, logLevel } = kafkajs;
const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');

describe('sticky assignor during a rolling upgrade', () => {
  const raw = new Kafka({ clientId: 'sticky-upgrade', brokers: BROKERS, logLevel: logLevel.NOTHING });
  const admin = raw.admin();
  const client = kafkaClient();
  const topic = uniqueName('sticky-upgrade');
  const groupId = uniqueName('sticky-upgrade-group');
  const started: KafkaConsumer[] = [];

  beforeAll(async () => {
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }], waitForLeaders: true });
  });
  afterAll(async () => {
    for (const c of started) await c.disconnect().catch(() => undefined);
    await admin.disconnect();
  });

  const protocol = async () => (await admin.describeGroups([groupId])).groups[0]!;

  async function member(): Promise<{ consumer: KafkaConsumer; joins: GroupJoin[] }> {
    const consumer = client.consumer({ groupId, sessionTimeoutMs: 10_000, heartbeatIntervalMs: 500 });
    started.push(consumer);
    const joins: GroupJoin[] = [];
    consumer.onGroupJoin((j) => joins.push(j));
    await consumer.connect();
    await consumer.subscribe([topic]);
    await consumer.run(async () => undefined);
    return { consumer, joins };
  }

  it('joins a round-robin group, then switches it to sticky once the older member left', async () => {
    const older = raw.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 500 });
    let olderJoined = false;
    older.on(older.events.GROUP_JOIN, () => (olderJoined = true));
    await older.connect();
    await older.subscribe({ topic });
    await older.run({ eachBatch: async () => undefined });
    await waitFor('the older member in the group', () => olderJoined, 30_000);

    const a = await member();
    await waitFor(
      'the new member assigned',
      () => (a.consumer.currentAssignment()[topic]?.length ?? 0) > 0,
      60_000,
    );
    let group = await protocol();
    expect(group.protocol).toBe('RoundRobinAssigner');
    expect(group.members).toHaveLength(2);

    await older.disconnect();
    await waitFor(
      'the new member holding every partition',
      () => a.consumer.currentAssignment()[topic]?.length === 6,
      60_000,
    );
    group = await protocol();
    expect(group.protocol).toBe(STICKY_PROTOCOL);

    // One more member: it takes 3, and a keeps the other 3 of its 6.
    const before = a.consumer.currentAssignment()[topic]!;
    const b = await member();
    await waitFor(
      'two members with 3 each',
      () =>
        b.consumer.currentAssignment()[topic]?.length === 3 &&
        a.consumer.currentAssignment()[topic]?.length === 3,
      60_000,
    );
    expect(before).toEqual(expect.arrayContaining(a.consumer.currentAssignment()[topic]!));
    const gained = a.joins.at(-1)!.added[topic] ?? [];
    expect(gained).toEqual([]);
    expect((await protocol()).protocol).toBe(STICKY_PROTOCOL);
  });
});
