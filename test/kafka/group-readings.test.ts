/**
 * The lag timer's reading of a group (`KafkaAdmin.groupReading`) against the real broker: what it
 * answers is what the public admin calls answer, it costs two requests once the coordinator and the
 * metadata are known (kafkajs's own request events, by API name), and it still answers after the
 * admin reconnects (the cluster's brokers and metadata gone) at a constant cost.
 */
import { jest } from '@jest/globals';
import { adminAndProducer, kafkaClient, uniqueName } from './helpers.js';

jest.setTimeout(60_000);

const client = kafkaClient();
const { admin, producer, created } = adminAndProducer(client);

/** A topic of three partitions holding 5, 3 and 0 records, and a group that committed 2 and 3 of them. */
async function committedGroup(): Promise<{ topic: string; groupId: string }> {
  const topic = uniqueName('readings');
  created.push(topic);
  const groupId = uniqueName('readings-group');
  await admin.ensureTopics([{ topic, numPartitions: 3 }]);
  await producer.send(topic, [
    ...Array.from({ length: 5 }, (_, i) => ({ key: `a${i}`, value: 'x', partition: 0 })),
    ...Array.from({ length: 3 }, (_, i) => ({ key: `b${i}`, value: 'x', partition: 1 })),
  ]);
  await admin.commitGroupOffsets(
    groupId,
    topic,
    new Map([
      [0, '2'],
      [1, '3'],
    ]),
  );
  return { topic, groupId };
}

/** The requests `admin` sends while `during` runs, counted by API name. */
async function requestsDuring(during: () => Promise<void>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const stop = admin.onRequest((apiName) => (counts[apiName] = (counts[apiName] ?? 0) + 1));
  try {
    await during();
  } finally {
    stop();
  }
  return counts;
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

describe('a group reading', () => {
  it('answers what the public admin calls answer, in two requests a reading once warm', async () => {
    const { topic, groupId } = await committedGroup();
    const expected = {
      ends: await admin.topicOffsets(topic),
      committed: await admin.groupCommits(groupId, topic),
    };
    expect(expected.ends.map((end) => end.high)).toEqual(['5', '3', '0']);
    expect([...expected.committed].map(([p, c]) => [p, c.offset])).toEqual([
      [0, '2'],
      [1, '3'],
      [2, null],
    ]);
    expect(await admin.groupReading(groupId, topic)).toEqual(expected);

    const readings = 20;
    const counts = await requestsDuring(async () => {
      for (let i = 0; i < readings; i++) expect(await admin.groupReading(groupId, topic)).toEqual(expected);
    });
    expect(counts).toEqual({ ListOffsets: readings, OffsetFetch: readings });
  });

  it('sees new records and new commits at the next reading', async () => {
    const { topic, groupId } = await committedGroup();
    await admin.groupReading(groupId, topic);
    await producer.send(topic, [{ key: 'c0', value: 'x', partition: 2 }]);
    await admin.commitGroupOffsets(
      groupId,
      topic,
      new Map([
        [0, '5'],
        [2, '1'],
      ]),
    );
    const reading = await admin.groupReading(groupId, topic);
    expect(reading.ends.map((end) => end.high)).toEqual(['5', '3', '1']);
    expect([...reading.committed].map(([p, c]) => [p, c.offset])).toEqual([
      [0, '5'],
      [1, '3'],
      [2, '1'],
    ]);
  });

  it('answers after the admin reconnects, for a constant number of requests more', async () => {
    const { topic, groupId } = await committedGroup();
    const expected = await admin.groupReading(groupId, topic);
    await admin.disconnect();
    await admin.connect();
    const readings = 10;
    const counts = await requestsDuring(async () => {
      for (let i = 0; i < readings; i++) expect(await admin.groupReading(groupId, topic)).toEqual(expected);
    });
    expect(counts.ListOffsets).toBe(readings);
    expect(counts.OffsetFetch).toBe(readings);
    // Finding the brokers again: metadata, and each new connection's version handshake.
    expect(total(counts) - 2 * readings).toBeLessThanOrEqual(4);
  });
});
