import { PartitionState } from './partition-state.js';
import type { FinishedState, UnfinishedState } from './document-state.js';
import { decodeState, encodeState, peekFinished } from './record.js';
import { REPLAY_KEY, encodeReplayMarker } from './replay-marker.js';

const DAY = 24 * 3600 * 1000;
const NOW = 1_800_000_000_000;
const SID = '0b6f3c4e-2d1a-4c5b-9e8f-7a6b5c4d3e2f';

const open = (eventId: string): UnfinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: SID,
  status: 'UPLOADED',
  input: { topic: 'in', partition: 0, offset: '5' },
  awaited: ['quality'],
  published: [],
  created_at: NOW - 1000,
  updated_at: NOW - 500,
});

const done = (eventId: string, finishedAt: number): FinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: SID,
  status: 'DONE',
  input: { topic: 'in', partition: 0, offset: '5' },
  awaited: ['quality'],
  published: ['quality'],
  finished_at: finishedAt,
});

function record(partition: number, eventId: string, value: Buffer | null, offset = 0) {
  return { key: Buffer.from(eventId), value, partition, offset, timestamp: NOW };
}

describe('PartitionState', () => {
  function make() {
    const expired: string[] = [];
    const bad: number[] = [];
    const state = new PartitionState({
      inputTopic: 'in',
      retentionMs: 7 * DAY,
      now: () => NOW,
      onExpired: (p, id) => expired.push(`${p}/${id}`),
      onBadRecord: (_p, offset) => bad.push(offset),
    });
    return { state, expired, bad };
  }

  it('follows a document from unfinished to finished to tombstone', () => {
    const { state } = make();
    state.apply(record(1, 'a', encodeState(open('a'))));
    expect(state.get(1, 'a')).toEqual({ unfinished: open('a') });
    expect(state.unfinishedOf(1).map((s) => s.event_id)).toEqual(['a']);
    state.apply(record(1, 'a', encodeState(done('a', NOW - DAY))));
    expect(state.get(1, 'a')).toEqual({
      finished: {
        event_id: 'a',
        submission_id: SID,
        status: 'DONE',
        awaited: ['quality'],
        published: ['quality'],
        finished_at: NOW - DAY,
        generation: 0,
        blob: 0,
      },
    });
    expect(state.unfinishedOf(1)).toEqual([]);
    state.apply(record(1, 'a', null));
    expect(state.get(1, 'a')).toBeUndefined();
  });

  it('leaves out and reports finished documents past the window, on restore and on expire', () => {
    const { state, expired } = make();
    state.apply(record(0, 'old', encodeState(done('old', NOW - 8 * DAY))));
    state.apply(record(0, 'young', encodeState(done('young', NOW - 6.5 * DAY))));
    state.apply(record(0, 'open-old', encodeState({ ...open('open-old'), created_at: NOW - 30 * DAY })));
    expect(state.get(0, 'old')).toBeUndefined();
    expect(expired).toEqual(['0/old']);
    expect(state.expire()).toBe(0);
    const later = new PartitionState({
      inputTopic: 'in',
      retentionMs: 6 * DAY,
      now: () => NOW,
      onExpired: (p, id) => expired.push(`${p}/${id}`),
    });
    later.put(0, done('young', NOW - 6.5 * DAY));
    expect(expired).toEqual(['0/old', '0/young']);
    // An unfinished document never expires, however old.
    expect(state.get(0, 'open-old')).toBeDefined();
  });

  it('restores finished records through the in-place path to the same entries as put', () => {
    const { state } = make();
    const other = new PartitionState({ inputTopic: 'in', now: () => NOW });
    const ids = ['0b6f3c4e-2d1a-4c5b-9e8f-7a6b5c4d3e20', 'plain-id', '0B6F3C4E-2D1A-4C5B-9E8F-7A6B5C4D3E20'];
    for (const id of ids) {
      const doc = { ...done(id, NOW - 1000), submission_id: id === 'plain-id' ? 'SUB-9' : SID };
      state.apply(record(0, id, encodeState(doc)));
      other.put(0, doc);
    }
    state.apply(record(0, 'o', encodeState(open('o'))));
    state.apply(record(0, 'o', encodeState(done('o', NOW))));
    expect(state.unfinishedOf(0)).toEqual([]);
    for (const id of [...ids, 'o']) {
      if (id !== 'o') expect(state.get(0, id)).toEqual(other.get(0, id));
      expect(state.get(0, id)).toHaveProperty('finished.event_id', id);
    }
  });

  it('skips a damaged record and says where, and drops a revoked partition', () => {
    const { state, bad } = make();
    state.apply(record(2, 'x', Buffer.from('{broken'), 41));
    expect(bad).toEqual([41]);
    state.apply(record(2, 'y', encodeState(open('y'))));
    state.apply(record(2, 'z', encodeState(done('z', NOW))));
    state.apply(record(3, 'z', encodeState(done('z', NOW))));
    state.drop(2);
    expect(state.get(2, 'y')).toBeUndefined();
    expect(state.get(2, 'z')).toBeUndefined();
    expect(state.get(3, 'z')).toBeDefined();
  });

  it('keeps the replay generation of a finished document, in the record and in the index', () => {
    const { state } = make();
    const value = encodeState({ ...done('g', NOW - DAY), generation: 300 });
    expect(decodeState('g', value, 'in')).toMatchObject({ generation: 300 });
    expect(peekFinished(value)?.generation).toBe(300);
    // Without a generation the finished record stays as short as before.
    expect(encodeState(done('g', NOW - DAY)).length).toBe(value.length - 2);
    expect(peekFinished(encodeState(done('g', NOW - DAY)))?.generation).toBe(0);
    state.apply(record(0, 'g', value));
    expect(state.get(0, 'g')).toMatchObject({ finished: { generation: 300 } });
  });

  it('reads the replay marker of a partition under its reserved key, not as a document', () => {
    const { state, bad } = make();
    const marker = { generation: 2, until_offset: '41', at: NOW };
    state.apply(record(3, REPLAY_KEY, encodeReplayMarker(marker)));
    expect(state.marker(3)).toEqual(marker);
    expect(state.get(3, REPLAY_KEY)).toBeUndefined();
    expect(state.marker(2)).toBeUndefined();
    state.apply(record(3, REPLAY_KEY, Buffer.from('garbage'), 9));
    expect(bad).toEqual([9]);
    expect(state.marker(3)).toEqual(marker);
    state.drop(3);
    expect(state.marker(3)).toBeUndefined();
    expect(() => encodeReplayMarker({ ...marker, generation: 0 })).toThrow('out of range');
  });
});
