/**
 * Partition-local state restored from the real broker: a state topic holding v1 records (as
 * docstream 0.1 wrote them), v2 records and tombstones; each owner sees only its partitions, v1 is
 * upgraded on read without input bytes or characteristics, and finished documents past the window
 * are left out and reported for tombstones.
 */
import { jest } from '@jest/globals';
import { PartitionState } from '../../src/connector/state/partition-state.js';
import type { FinishedState, UnfinishedState } from '../../src/connector/state/document-state.js';
import { encodeState } from '../../src/connector/state/record.js';
import { ChangelogReader } from '../../src/kafka/changelog.js';
import type { KafkaAdmin, KafkaProducer, OutgoingMessage } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { kafkaClient, uniqueName } from '../kafka/helpers.js';

jest.setTimeout(90_000);

const client = kafkaClient();
let admin: KafkaAdmin;
let producer: KafkaProducer;
let topic: string;
const NOW = Date.now();
const DAY = 86_400_000;
const SID = '0b6f3c4e-2d1a-4c5b-9e8f-7a6b5c4d3e2f';

beforeAll(async () => {
  admin = client.admin();
  producer = client.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  topic = uniqueName('state-restore');
  await admin.ensureTopics([{ topic, numPartitions: 2, configs: { 'cleanup.policy': 'compact' } }]);
  await producer.send(topic, records());
});

afterAll(async () => {
  await admin?.deleteTopics([topic]);
  await Promise.all([producer?.disconnect(), admin?.disconnect()]);
});

function v1(eventId: string, partition: number, status: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      v: 1,
      event_id: eventId,
      submission_id: SID,
      status,
      input: {
        key: null,
        value: Buffer.from('{"submission_characteristics":{"name":"Ada"}}').toString('base64'),
      },
      partition,
      offset: '7',
      query_id: 'q',
      pipeline: 'QUALITY_ONLY',
      enable_decision: false,
      attributes: {},
      traceparent: null,
      awaited: ['quality'],
      published: [],
      created_at: NOW - 1000,
      updated_at: NOW - 500,
      pending:
        status === 'CREATED'
          ? {
              blob: { url: 'file:///x' },
              upload_url: 'https://up/x',
              characteristics_url: null,
              characteristics: { name: 'Ada' },
            }
          : undefined,
    }),
  );
}

const finished = (eventId: string, partition: number, finishedAt: number): FinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: SID,
  status: 'DONE',
  input: { topic: 'in', partition, offset: '1' },
  awaited: ['quality'],
  published: ['quality'],
  finished_at: finishedAt,
});

const uploaded = (eventId: string, partition: number): UnfinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: SID,
  status: 'UPLOADED',
  input: { topic: 'in', partition, offset: '2' },
  awaited: ['quality'],
  published: [],
  created_at: NOW,
  updated_at: NOW,
});

function records(): OutgoingMessage[] {
  const out: OutgoingMessage[] = [];
  for (const p of [0, 1]) {
    out.push({ key: `old-open-${p}`, value: v1(`old-open-${p}`, p, 'CREATED'), partition: p });
    out.push({ key: `old-done-${p}`, value: v1(`old-done-${p}`, p, 'DONE'), partition: p });
    out.push({ key: `new-open-${p}`, value: encodeState(uploaded(`new-open-${p}`, p)), partition: p });
    out.push({ key: `new-open-${p}`, value: encodeState(finished(`new-open-${p}`, p, NOW)), partition: p });
    out.push({
      key: `expired-${p}`,
      value: encodeState(finished(`expired-${p}`, p, NOW - 9 * DAY)),
      partition: p,
    });
    out.push({ key: `deleted-${p}`, value: encodeState(finished(`deleted-${p}`, p, NOW)), partition: p });
    out.push({ key: `deleted-${p}`, value: null, partition: p });
    out.push({ key: Buffer.from(`junk-${p}`), value: Buffer.from('not a state'), partition: p });
  }
  return out;
}

it('restores only owned partitions, upgrading v1, applying tombstones and the window', async () => {
  const expired: string[] = [];
  const bad: number[] = [];
  const state = new PartitionState({
    inputTopic: 'in',
    onExpired: (p, id) => expired.push(`${p}/${id}`),
    onBadRecord: (_p, offset) => bad.push(offset),
  });
  const reader = new ChangelogReader(client, admin, topic, state, silentLogger);
  await reader.start();
  try {
    await reader.assign([1]);
    expect(state.get(0, 'old-done-0')).toBeUndefined();

    const open = state.unfinishedOf(1);
    expect(open).toHaveLength(1);
    expect(open[0]).toEqual({
      v: 2,
      event_id: 'old-open-1',
      submission_id: SID,
      status: 'CREATED',
      input: { topic: 'in', partition: 1, offset: '7' },
      awaited: ['quality'],
      published: [],
      created_at: NOW - 1000,
      updated_at: NOW - 500,
      pending: { upload_url: 'https://up/x', characteristics_url: null, characteristics_pending: true },
    });
    expect(JSON.stringify(open)).not.toContain('Ada');

    expect(state.get(1, 'old-done-1')).toHaveProperty('finished.status', 'DONE');
    expect(state.get(1, 'new-open-1')).toHaveProperty('finished.published', ['quality']);
    expect(state.get(1, 'deleted-1')).toBeUndefined();
    expect(state.get(1, 'expired-1')).toBeUndefined();
    expect(expired).toEqual(['1/expired-1']);
    expect(bad).toEqual([7]);
    expect(state.finished.size()).toBe(2);

    reader.revoke([1]);
    expect(state.finished.size()).toBe(0);
    expect(state.unfinishedOf(1)).toEqual([]);
  } finally {
    await reader.stop();
  }
});
