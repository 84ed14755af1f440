/**
 * A member revoked while it restores a partition it just got, on the real broker: the state store
 * (`OwnedState` over the changelog reader) and the partition's preparation as the consumer loop
 * drives them, the restore held at its first read of the state topic (its offsets). The revoke must
 * hold: the partition's state is neither kept nor read on, and none of its unfinished documents is
 * resumed here (its new owner resumes them); gained again, it is restored and resumed as usual.
 */
import { jest } from '@jest/globals';
import { PartitionPreparation } from '../../src/connector/consumer/partition-preparation.js';
import type { LoopEngine } from '../../src/connector/consumer/loop-interfaces.js';
import type { UnfinishedState } from '../../src/connector/state/document-state.js';
import { encodeState } from '../../src/connector/state/record.js';
import { OwnedState } from '../../src/connector/state/store.js';
import type { KafkaAdmin } from '../../src/kafka/admin.js';
import { ChangelogReader } from '../../src/kafka/changelog.js';
import { silentLogger } from '../../src/observability/logger.js';
import { adminAndProducer, kafkaClient, uniqueName, waitFor } from '../kafka/helpers.js';

jest.setTimeout(90_000);

const client = kafkaClient();
const { admin, producer, created } = adminAndProducer(client);

const unfinished = (eventId: string, partition: number): UnfinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: '0b6f3c4e-2d1a-4c5b-9e8f-7a6b5c4d3e2f',
  status: 'UPLOADED',
  input: { topic: 'in', partition, offset: '2' },
  awaited: ['quality'],
  published: [],
  created_at: Date.now(),
  updated_at: Date.now(),
});

it('a partition revoked while its state is read is neither kept nor resumed, and is restored when gained again', async () => {
  const topic = uniqueName('state-revoked');
  created.push(topic);
  await admin.ensureTopics([{ topic, numPartitions: 2, configs: { 'cleanup.policy': 'compact' } }]);
  await producer.send(
    topic,
    [0, 1].flatMap((p) =>
      ['a', 'b'].map((id) => ({
        key: `${id}-${p}`,
        value: encodeState(unfinished(`${id}-${p}`, p)),
        partition: p,
      })),
    ),
  );

  // The state read held: each restore waits at its reading of the state topic's offsets until let go.
  const reads: Array<() => void> = [];
  const slowAdmin = {
    topicOffsets: async (t: string) => {
      await new Promise<void>((resolve) => reads.push(resolve));
      return admin.topicOffsets(t);
    },
  } as unknown as KafkaAdmin;
  const state = new OwnedState(
    (sink) => new ChangelogReader(client, slowAdmin, topic, sink, silentLogger, { tail: false }),
    {
      inputTopic: 'in',
      retentionMs: 7 * 86_400_000,
      logger: silentLogger,
      tombstone: () => Promise.resolve(),
      collectGarbage: null,
    },
  );
  const resumed: string[] = [];
  const engine: LoopEngine = {
    inFlight: 0,
    unfinishedOn: () => 0,
    resume: async (states) => {
      resumed.push(...states.map((s) => s.event_id));
    },
    revoke: () => 0,
  };
  const preparation = new PartitionPreparation({
    state,
    engine,
    logger: silentLogger,
    startAt: () => undefined,
  });
  await state.start();
  try {
    preparation.gained([0, 1]);
    await waitFor('both restores at their state read', () => reads.length === 2);
    // Partition 0 goes to another member now, as the consumer loop hands a revoke on.
    engine.revoke([0]);
    state.revoke([0]);
    preparation.forget(0);
    for (const release of reads.splice(0)) release();

    await waitFor('partition 1 resumed', () => resumed.filter((id) => id.endsWith('-1')).length === 2);
    await expect(preparation.prepare(1)).resolves.toBeUndefined();
    expect([...resumed].sort()).toEqual(['a-1', 'b-1']);
    expect(state.owned()).toEqual([1]);
    expect(state.unfinished(0)).toEqual([]);
    // Long enough for a restore of partition 0 to have read its two records, had it gone on.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(state.unfinished(0)).toEqual([]);
    expect(resumed.filter((id) => id.endsWith('-0'))).toEqual([]);

    // Gained again: restored and resumed as any partition.
    preparation.gained([0]);
    await waitFor('the new restore at its state read', () => reads.length === 1);
    reads.splice(0)[0]!();
    await preparation.prepare(0);
    expect(state.owned()).toEqual([0, 1]);
    expect(resumed.filter((id) => id.endsWith('-0')).sort()).toEqual(['a-0', 'b-0']);
  } finally {
    preparation.stop();
    for (const release of reads.splice(0)) release();
    await state.stop();
  }
});
