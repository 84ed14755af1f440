/**
 * The partition-local changelog reader and the single-record reader against the real broker: only
 * owned partitions are read, `assign` resolves once restored, revoke drops, reassign restores again,
 * tailing continues after restore (or stops there with `tail: false`); and one record is fetched back by (partition, offset).
 */
import { jest } from '@jest/globals';
import type { KafkaAdmin } from '../../src/kafka/admin.js';
import { ChangelogReader, type ChangelogRecord } from '../../src/kafka/changelog.js';
import { RecordReader } from '../../src/kafka/record-reader.js';
import { silentLogger } from '../../src/observability/logger.js';
import { adminAndProducer, kafkaClient, uniqueName, waitFor } from './helpers.js';

jest.setTimeout(90_000);

const client = kafkaClient();
const { admin, producer, created } = adminAndProducer(client);

async function newTopic(numPartitions: number, configs: Record<string, string> = {}): Promise<string> {
  const topic = uniqueName('changelog');
  created.push(topic);
  await admin.ensureTopics([{ topic, numPartitions, configs }]);
  return topic;
}

/** `perPartition` records per partition: key `k<p>-<i>`, value `v<p>-<i>`, the last key of each deleted. */
async function fill(topic: string, partitions: number, perPartition: number): Promise<void> {
  const messages = [];
  for (let p = 0; p < partitions; p++) {
    for (let i = 0; i < perPartition; i++)
      messages.push({ key: `k${p}-${i}`, value: `v${p}-${i}`, partition: p });
    messages.push({ key: `k${p}-${perPartition - 1}`, value: null, partition: p });
  }
  await producer.send(topic, messages);
}

class RecordingSink {
  readonly records: ChangelogRecord[] = [];
  readonly dropped: number[] = [];
  apply(record: ChangelogRecord): void {
    this.records.push(record);
  }
  drop(partition: number): void {
    this.dropped.push(partition);
    const kept = this.records.filter((r) => r.partition !== partition);
    this.records.splice(0, this.records.length, ...kept);
  }
  of(partition: number): ChangelogRecord[] {
    return this.records.filter((r) => r.partition === partition);
  }
  /** The key of the last record seen of `partition`. */
  lastKey(partition: number): string | undefined {
    return this.of(partition).at(-1)?.key.toString();
  }
}

describe('ChangelogReader', () => {
  it('restores only the assigned partitions, drops on revoke, restores again on reassign and tails', async () => {
    const topic = await newTopic(4, { 'cleanup.policy': 'compact' });
    await fill(topic, 4, 50);
    const sink = new RecordingSink();
    const reader = new ChangelogReader(client, admin, topic, sink, silentLogger);
    await reader.start();
    try {
      await reader.assign([1, 3]);
      // Resolved means restored: everything written before the call is there, tombstone last.
      expect(reader.caughtUp([1, 3])).toBe(true);
      expect(reader.caughtUp([0])).toBe(false);
      expect(new Set(sink.records.map((r) => r.partition))).toEqual(new Set([1, 3]));
      for (const p of [1, 3]) {
        const got = sink.of(p);
        expect(got).toHaveLength(51);
        expect(got.map((r) => r.offset)).toEqual([...Array(51).keys()]);
        expect(got[0]!.key.toString()).toBe(`k${p}-0`);
        expect(got[50]!.value).toBeNull();
      }

      // Tailing: a new record of an owned partition arrives; one of a not-owned partition does not.
      await producer.send(topic, [
        { key: 'late-1', value: 'x', partition: 1 },
        { key: 'late-0', value: 'y', partition: 0 },
      ]);
      await waitFor('tailed record', () => sink.of(1).length === 52);
      expect(sink.of(1)[51]!.key.toString()).toBe('late-1');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sink.of(0)).toHaveLength(0);

      reader.revoke([1]);
      expect(sink.dropped).toEqual([1]);
      expect(reader.ownedPartitions()).toEqual([3]);
      await producer.send(topic, [{ key: 'after-revoke', value: 'z', partition: 1 }]);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sink.of(1)).toHaveLength(0);

      await reader.assign([0, 1]);
      expect(sink.lastKey(0)).toBe('late-0');
      expect(sink.of(0)).toHaveLength(52);
      const again = sink.of(1);
      expect(again).toHaveLength(53);
      expect(again.map((r) => r.offset)).toEqual([...Array(53).keys()]);
      expect(again.at(-1)!.key.toString()).toBe('after-revoke');
      // Partition 3 was not restored a second time.
      expect(sink.of(3)).toHaveLength(51);
      expect(reader.ownedPartitions()).toEqual([0, 1, 3]);
    } finally {
      await reader.stop();
    }
  });

  it('with tail: false, restores to the end offset of the assign and reads nothing after it', async () => {
    const topic = await newTopic(2, { 'cleanup.policy': 'compact' });
    await fill(topic, 1, 20);
    const sink = new RecordingSink();
    const reader = new ChangelogReader(client, admin, topic, sink, silentLogger, { tail: false });
    await reader.start();
    try {
      await reader.assign([0, 1]);
      expect(reader.caughtUp([0, 1])).toBe(true);
      expect(sink.of(0)).toHaveLength(21);
      expect(sink.of(1)).toHaveLength(0);
      await producer.send(topic, [
        { key: 'late-0', value: 'x', partition: 0 },
        { key: 'late-1', value: 'y', partition: 1 },
      ]);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(sink.records.map((r) => r.key.toString())).not.toContain('late-0');
      expect(sink.records.map((r) => r.key.toString())).not.toContain('late-1');
      // Still owned: a revoke drops it, and a new assign restores it again with the late records.
      expect(reader.ownedPartitions()).toEqual([0, 1]);
      reader.revoke([0]);
      expect(sink.dropped).toEqual([0]);
      await reader.assign([0]);
      expect(sink.lastKey(0)).toBe('late-0');
      expect(sink.of(0)).toHaveLength(22);
    } finally {
      await reader.stop();
    }
  });

  it('resolves at once for an empty partition', async () => {
    const topic = await newTopic(2);
    const sink = new RecordingSink();
    const reader = new ChangelogReader(client, admin, topic, sink, silentLogger);
    await reader.start();
    try {
      await reader.assign([0, 1]);
      expect(reader.caughtUp([0, 1])).toBe(true);
      await producer.send(topic, [{ key: 'first', value: 'v', partition: 0 }]);
      await waitFor('first record', () => sink.records.length === 1);
    } finally {
      await reader.stop();
    }
  });

  it('honours a revoke that comes while the end offsets are read: the partition is neither restored nor kept', async () => {
    const topic = await newTopic(2, { 'cleanup.policy': 'compact' });
    await fill(topic, 2, 20);
    const sink = new RecordingSink();
    // The restore is held at its first step, the reading of the topic's offsets.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slowAdmin = {
      topicOffsets: async (t: string) => {
        await held;
        return admin.topicOffsets(t);
      },
    } as unknown as KafkaAdmin;
    const reader = new ChangelogReader(client, slowAdmin, topic, sink, silentLogger);
    await reader.start();
    try {
      const assigning = reader.assign([0]);
      assigning.catch(() => undefined);
      expect(reader.caughtUp([0])).toBe(false);
      reader.revoke([0]);
      release();
      await expect(assigning).rejects.toThrow(/partition 0 was revoked while restoring/);
      expect(reader.owns(0)).toBe(false);
      expect(reader.ownedPartitions()).toEqual([]);
      // Nothing of it is read afterwards either: the partition was never opened.
      await producer.send(topic, [{ key: 'late', value: 'x', partition: 0 }]);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(sink.of(0)).toEqual([]);

      // Assigned again: restored from its first record, the late one included.
      await reader.assign([0]);
      expect(reader.caughtUp([0])).toBe(true);
      expect(sink.of(0)).toHaveLength(22);
    } finally {
      release();
      await reader.stop();
    }
  });

  it('rejects an assignment of a partition the topic lacks', async () => {
    const topic = await newTopic(1);
    const reader = new ChangelogReader(client, admin, topic, new RecordingSink(), silentLogger);
    await reader.start();
    try {
      await expect(reader.assign([5])).rejects.toThrow(/has no partition 5/);
    } finally {
      await reader.stop();
    }
  });
});

describe('RecordReader', () => {
  it('reads one record by partition and offset, several at once, and null outside the log', async () => {
    const topic = await newTopic(3);
    await fill(topic, 3, 40);
    const reader = new RecordReader(client, admin, topic, silentLogger);
    await reader.start();
    try {
      const one = await reader.read(2, 17);
      expect(one?.key?.toString()).toBe('k2-17');
      expect(one?.value?.toString()).toBe('v2-17');
      expect(one?.partition).toBe(2);

      const many = await reader.readMany([
        { partition: 0, offset: 39 },
        { partition: 1, offset: 3 },
        { partition: 0, offset: 2 },
        { partition: 1, offset: '40' },
        { partition: 2, offset: 99 },
        { partition: 7, offset: 0 },
      ]);
      expect(many.map((m) => m?.value?.toString() ?? null)).toEqual([
        'v0-39',
        'v1-3',
        'v0-2',
        null,
        null,
        null,
      ]);
      // Offset 40 is the tombstone: a record with no value, not a missing record.
      expect(many[3]?.key?.toString()).toBe('k1-39');

      // Reading backwards after a forward read seeks back.
      expect((await reader.read(2, 1))?.value?.toString()).toBe('v2-1');
      await expect(reader.read(0, -1)).rejects.toThrow(/bad offset/);
    } finally {
      await reader.stop();
    }
  });
});
