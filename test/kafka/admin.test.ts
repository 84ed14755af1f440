/**
 * Topic administration, group offsets and replay's offset plan (operator/replay-plan.ts) against the
 * real Kafka 4.1 broker, through kafkajs 2.2.4.
 */
import { jest } from '@jest/globals';
import { KafkaError } from '../../src/kafka/index.js';
import { planOffsetReset, resetOffsets } from '../../src/operator/replay-plan.js';
import { collectingConsumer, adminAndProducer, kafkaClient, uniqueName, waitFor } from './helpers.js';

// The integration project's testTimeout is not applied per project by jest; set it here.
jest.setTimeout(60_000);

const client = kafkaClient();
const { admin, producer, created } = adminAndProducer(client);

function topicName(prefix: string): string {
  const topic = uniqueName(prefix);
  created.push(topic);
  return topic;
}

describe('ensureTopics', () => {
  it('creates a compacted state topic once and reports it as existing afterwards', async () => {
    const state = topicName('state');
    const spec = { topic: state, numPartitions: 3, configs: { 'cleanup.policy': 'compact' } };
    expect(await admin.ensureTopics([spec])).toEqual({ created: [state], existing: [], mismatches: [] });
    expect(await admin.ensureTopics([spec])).toEqual({ created: [], existing: [state], mismatches: [] });
    const description = await admin.describeTopic(state, ['cleanup.policy']);
    expect(description.configs).toEqual({ 'cleanup.policy': 'compact' });
    expect(description.partitions.map((entry) => entry.partition)).toEqual([0, 1, 2]);
    expect(await admin.partitionCount(state)).toBe(3);
  });

  it('reports, without changing, an existing topic that differs from the spec', async () => {
    const topic = topicName('input');
    await admin.ensureTopics([{ topic, numPartitions: 2 }]);
    const result = await admin.ensureTopics([
      { topic, numPartitions: 4, configs: { 'cleanup.policy': 'compact' } },
    ]);
    expect(result.mismatches).toEqual([
      { topic, problem: 'has 2 partitions, expected 4' },
      { topic, problem: 'cleanup.policy is delete, expected compact' },
    ]);
    expect(await admin.partitionCount(topic)).toBe(2);
  });

  it('fails clearly for a topic that does not exist', async () => {
    await expect(admin.describeTopic(uniqueName('missing'))).rejects.toBeInstanceOf(KafkaError);
  });
});

describe('offset resets for replay', () => {
  const hour = 3_600_000;

  /** Two partitions with three records each, stamped 3 h, 2 h and 1 h ago; a group that read them all. */
  async function consumedTopic(): Promise<{ topic: string; groupId: string; times: number[] }> {
    const topic = topicName('replay');
    await admin.ensureTopics([{ topic, numPartitions: 2 }]);
    const now = Date.now();
    const times = [now - 3 * hour, now - 2 * hour, now - hour];
    await producer.send(
      topic,
      [0, 1].flatMap((partition) =>
        times.map((time, index) => ({
          key: `k${index}`,
          value: `p${partition}-${index}`,
          partition,
          timestamp: String(time),
        })),
      ),
    );
    const { consumer, messages } = await collectingConsumer(client, [topic]);
    await waitFor('six records', () => messages.length === 6);
    await consumer.commitOffsets([
      { topic, partition: 0, offset: '3', metadata: 'docstream:unfinished' },
      { topic, partition: 1, offset: '3' },
    ]);
    await consumer.disconnect();
    return { topic, groupId: consumer.groupId, times };
  }

  it('reads the metadata committed beside each offset', async () => {
    const { topic, groupId } = await consumedTopic();
    expect(Object.fromEntries(await admin.groupCommits(groupId, topic))).toEqual({
      0: { offset: '3', metadata: 'docstream:unfinished' },
      1: { offset: '3', metadata: null },
    });
  });

  it('plans a reset to a timestamp in a dry run, changes nothing, then applies it', async () => {
    const { topic, groupId, times } = await consumedTopic();
    const target = { kind: 'timestamp' as const, timestamp: times[1]! - 1000 };

    const plan = await resetOffsets(admin, groupId, topic, target, { dryRun: true });
    expect(plan).toEqual({
      groupId,
      topic,
      target,
      applied: false,
      partitions: [
        { partition: 0, current: '3', target: '1', low: '0', high: '3' },
        { partition: 1, current: '3', target: '1', low: '0', high: '3' },
      ],
    });
    expect(Object.fromEntries(await admin.groupOffsets(groupId, topic))).toEqual({ 0: '3', 1: '3' });

    const applied = await resetOffsets(admin, groupId, topic, target);
    expect(applied.applied).toBe(true);
    expect(Object.fromEntries(await admin.groupOffsets(groupId, topic))).toEqual({ 0: '1', 1: '1' });
  });

  it('a timestamp after the last record moves to the end', async () => {
    const { topic, groupId } = await consumedTopic();
    const plan = await planOffsetReset(admin, groupId, topic, {
      kind: 'timestamp',
      timestamp: Date.now() + hour,
    });
    expect(plan.partitions.map((entry) => entry.target)).toEqual(['3', '3']);
  });

  it('resets to earliest, to latest and to explicit offsets', async () => {
    const { topic, groupId } = await consumedTopic();
    await resetOffsets(admin, groupId, topic, { kind: 'earliest' });
    expect(Object.fromEntries(await admin.groupOffsets(groupId, topic))).toEqual({ 0: '0', 1: '0' });
    await resetOffsets(admin, groupId, topic, { kind: 'latest' });
    expect(Object.fromEntries(await admin.groupOffsets(groupId, topic))).toEqual({ 0: '3', 1: '3' });
    const plan = await resetOffsets(admin, groupId, topic, { kind: 'offsets', offsets: { 1: '2' } });
    expect(plan.partitions).toEqual([{ partition: 1, current: '3', target: '2', low: '0', high: '3' }]);
    expect(Object.fromEntries(await admin.groupOffsets(groupId, topic))).toEqual({ 0: '3', 1: '2' });
  });

  it('refuses explicit offsets outside the partition and an unknown partition', async () => {
    const { topic, groupId } = await consumedTopic();
    await expect(
      planOffsetReset(admin, groupId, topic, { kind: 'offsets', offsets: { 0: '4' } }),
    ).rejects.toThrow(/outside 0\.\.3/);
    await expect(
      planOffsetReset(admin, groupId, topic, { kind: 'offsets', offsets: { 7: '0' } }),
    ).rejects.toThrow(/no partition 7/);
  });

  it('refuses to reset a group that has an active member', async () => {
    const topic = topicName('busy');
    await admin.ensureTopics([{ topic, numPartitions: 1 }]);
    const { consumer } = await collectingConsumer(client, [topic]);
    try {
      await waitFor('the member to join', () => Object.keys(consumer.currentAssignment()).length > 0);
      await expect(resetOffsets(admin, consumer.groupId, topic, { kind: 'earliest' })).rejects.toThrow(
        /stop its consumers/,
      );
    } finally {
      await consumer.disconnect();
    }
  });
});
