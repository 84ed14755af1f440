import {
  awaitableBits,
  type FinishedState,
  type UnfinishedState,
  StateRecordError,
} from './document-state.js';
import { peekFinished, decodeState, encodeState } from './record.js';
import type { DocumentStateV1 } from './record-v1.js';

const SID = '0b6f3c4e-2d1a-4c5b-9e8f-7a6b5c4d3e2f';
const input = { topic: 'documents.arrived', partition: 3, offset: '9007199254740' };

const unfinished: UnfinishedState = {
  v: 2,
  event_id: 'evt-1',
  submission_id: SID,
  status: 'CREATED',
  input,
  awaited: ['fraud', 'quality', 'classification', 'decision'],
  published: ['quality'],
  created_at: 1_700_000_000_123,
  updated_at: 1_700_000_000_456,
  pending: {
    upload_url: 'https://up.example/x?sig=abc',
    characteristics_url: 'https://up.example/c',
    characteristics_pending: true,
  },
};

const finished: FinishedState = {
  v: 2,
  event_id: 'evt-2',
  submission_id: SID,
  status: 'DONE',
  input,
  awaited: ['fraud', 'quality', 'classification'],
  published: ['fraud', 'quality', 'classification'],
  finished_at: 1_700_000_100_000,
};

/** A v1 record as docstream 0.1 wrote it, with everything v2 must leave behind. */
function v1(status: DocumentStateV1['status'], extra: Partial<DocumentStateV1> = {}): Buffer {
  const state: DocumentStateV1 = {
    v: 1,
    event_id: 'evt-old',
    submission_id: SID,
    status,
    topic: 'in',
    input: {
      key: 'a2V5',
      value: Buffer.from('{"submission_characteristics":{"name":"Ada"}}').toString('base64'),
    },
    partition: 1,
    offset: '42',
    query_id: 'q',
    pipeline: 'FRAUD_ONLY',
    enable_decision: true,
    attributes: { tenant: 't' },
    traceparent: null,
    awaited: ['fraud', 'decision'],
    published: ['fraud'],
    created_at: 1000,
    updated_at: 2000,
    pending: {
      blob: { url: 'file:///x' },
      upload_url: 'https://up.example/v1',
      characteristics_url: 'https://up.example/v1c',
      characteristics: { name: 'Ada', birth_date: '1815-12-10' },
    },
    ...extra,
  };
  return Buffer.from(JSON.stringify(state));
}

describe('state record v2', () => {
  it('round-trips an unfinished document, pending upload and error included', () => {
    const withError: UnfinishedState = {
      ...unfinished,
      error: { stage: 'upload', code: 'http_503', message: 'é' },
    };
    expect(decodeState('evt-1', encodeState(withError), 'unused')).toEqual(withError);
    expect(decodeState('evt-1', encodeState(unfinished), 'unused')).toEqual(unfinished);
  });

  it('round-trips fields longer than the first buffer of the writer (it grows), multi-byte text included', () => {
    const long: UnfinishedState = {
      ...unfinished,
      pending: {
        upload_url: `https://up.example/${'a'.repeat(700)}`,
        characteristics_url: `https://up.example/${'€'.repeat(300)}`,
        characteristics_pending: true,
      },
      error: { stage: 'upload', code: 'http_503', message: 'ü'.repeat(2000) },
    };
    const bytes = encodeState(long);
    expect(bytes.length).toBeGreaterThan(4000 + 900 + 700);
    expect(decodeState('evt-1', bytes, 'unused')).toEqual(long);
  });

  it('keeps no upload URL once the upload is done', () => {
    const uploaded: UnfinishedState = { ...unfinished, status: 'UPLOADED', pending: undefined };
    const bytes = encodeState(uploaded);
    expect(bytes.toString('latin1')).not.toContain('up.example');
    const back = decodeState('evt-1', bytes, 'unused');
    expect(back).toEqual({ ...uploaded, pending: undefined });
    expect('pending' in back).toBe(false);
  });

  it('encodes a finished document in a few dozen bytes', () => {
    const bytes = encodeState(finished);
    expect(bytes.length).toBe(1 + 1 + 1 + 17 + 2 + input.topic.length + 4 + 8 + 8);
    expect(decodeState('evt-2', bytes, 'unused')).toEqual(finished);
  });

  it("round-trips the blob's fingerprint, finished (with or without a replay generation) or not", () => {
    const blob = 0xdeadbeef;
    for (const state of [
      { ...finished, blob },
      { ...finished, blob, generation: 3 },
      { ...unfinished, blob },
    ]) {
      expect(decodeState('evt-2', encodeState(state), 'unused')).toEqual({
        ...state,
        ...('finished_at' in state ? { generation: state.generation ?? 0 } : {}),
        event_id: 'evt-2',
      });
    }
    const peeked = [{ ...finished, blob }, { ...finished, blob, generation: 3 }, finished].map((state) => {
      const peek = peekFinished(encodeState(state))!;
      return [peek.generation, peek.blob];
    });
    expect(peeked).toEqual([
      [0, blob],
      [3, blob],
      [finished.generation ?? 0, 0],
    ]);
  });

  it('keeps a submission id that is not a UUID as text', () => {
    for (const id of ['SUB-0001', SID.toUpperCase(), 'ü'.repeat(3)]) {
      const state = { ...finished, submission_id: id };
      expect(decodeState('evt-2', encodeState(state), 'unused').submission_id).toBe(id);
    }
  });

  it('rejects damaged records with a typed error', () => {
    const good = encodeState(unfinished);
    expect(() => decodeState('e', good.subarray(0, good.length - 3), 't')).toThrow(StateRecordError);
    expect(() => decodeState('e', Buffer.concat([good, Buffer.of(0)]), 't')).toThrow(/trailing/);
    expect(() => decodeState('e', Buffer.of(9, 0), 't')).toThrow(/unknown state record format 9/);
    expect(() => decodeState('e', Buffer.of(2, 7, 0), 't')).toThrow(/status/);
    expect(() => decodeState('e', Buffer.alloc(0), 't')).toThrow(/empty/);
    expect(() => decodeState('e', Buffer.from('{"v":1}'), 't')).toThrow(/lacks required/);
    expect(() => decodeState('e', Buffer.from('{oops'), 't')).toThrow(/not JSON/);
  });
});

describe('reading v1 records', () => {
  it('turns an unfinished v1 record into v2 without input bytes or characteristics', () => {
    const state = decodeState('evt-old', v1('CREATED'), 'fallback');
    expect(state).toEqual({
      v: 2,
      event_id: 'evt-old',
      submission_id: SID,
      status: 'CREATED',
      input: { topic: 'in', partition: 1, offset: '42' },
      awaited: ['fraud', 'decision'],
      published: ['fraud'],
      created_at: 1000,
      updated_at: 2000,
      pending: {
        upload_url: 'https://up.example/v1',
        characteristics_url: 'https://up.example/v1c',
        characteristics_pending: true,
      },
    });
    const again = encodeState(state).toString('latin1');
    expect(again).not.toContain('Ada');
    expect(again).not.toContain('1815');
  });

  it('turns a finished v1 record into a finished v2 one, naming the input topic when v1 did not', () => {
    const { topic: _topic, ...noTopic } = JSON.parse(
      v1('DONE', { pending: undefined }).toString(),
    ) as DocumentStateV1;
    const state = decodeState('evt-old', Buffer.from(JSON.stringify(noTopic)), 'documents.arrived');
    expect(state).toEqual({
      v: 2,
      event_id: 'evt-old',
      submission_id: SID,
      status: 'DONE',
      input: { topic: 'documents.arrived', partition: 1, offset: '42' },
      awaited: ['fraud', 'decision'],
      published: ['fraud'],
      finished_at: 2000,
    });
    const failed = decodeState(
      'evt-old',
      v1('FAILED', { error: { stage: 's', code: 'c', message: 'm' } }),
      't',
    );
    expect(failed.status).toBe('FAILED');
    expect('error' in failed).toBe(false);
  });
});

describe('peekFinished', () => {
  it('reads a finished v2 record in place as decodeState would', () => {
    for (const state of [finished, { ...finished, submission_id: 'SUB-1', status: 'FAILED' as const }]) {
      const peek = peekFinished(encodeState(state));
      expect(peek).not.toBeNull();
      expect(peek!.failed).toBe(state.status === 'FAILED');
      expect(peek!.results).toBe(awaitableBits(state.awaited) | (awaitableBits(state.published) << 4));
      expect(peek!.finishedMs).toBe(state.finished_at);
      const sid = peek!.sidIsUuid
        ? Buffer.from(peek!.sid).toString('hex')
        : Buffer.from(peek!.sid).toString('utf8');
      expect(sid).toBe(peek!.sidIsUuid ? state.submission_id.replaceAll('-', '') : state.submission_id);
    }
  });

  it('leaves everything else to decodeState', () => {
    const good = encodeState(finished);
    expect(peekFinished(encodeState(unfinished))).toBeNull();
    expect(peekFinished(v1('DONE'))).toBeNull();
    expect(peekFinished(good.subarray(0, good.length - 1))).toBeNull();
    expect(peekFinished(Buffer.concat([good, Buffer.of(1)]))).toBeNull();
    expect(peekFinished(Buffer.of(2, 2, 0, 9))).toBeNull();
  });
});
