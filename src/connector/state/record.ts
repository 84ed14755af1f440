/**
 * The state record, version 2: the value of the compacted state topic (key = event_id, partition =
 * the input partition). It keeps only what finishing, deduplicating and replaying a document need:
 * no copy of the input event (a resumed document re-reads its input record by topic, partition and
 * offset), never the characteristics (they come from that input record too), and the pre-signed
 * upload URL only while the upload is pending. A finished document keeps even less.
 *
 * Binary, because the state topic is restored record by record on every assignment: a finished
 * record is a few tens of bytes against about a kilobyte for v1's JSON (layout at `encodeState`).
 *
 * Version 1 (JSON, written by docstream up to 0.1) starts with `{` and is still read: it is turned
 * into version 2 at once, so its input bytes and characteristics never stay in memory.
 */
import { Reader, Writer } from './binary.js';
import {
  STATUSES,
  awaitableBits,
  awaitableList,
  isFinished,
  type DocumentStateV2,
  type FinishedState,
  type UnfinishedState,
  StateRecordError,
} from './document-state.js';
import { fromV1, parseV1 } from './record-v1.js';

const FORMAT_V2 = 2;
const FLAG_UPLOAD_URL = 1;
const FLAG_CHARACTERISTICS_URL = 2;
const FLAG_CHARACTERISTICS_PENDING = 4;
const FLAG_ERROR = 8;
const FLAG_PENDING = 16;
const FLAG_BLOB = 32;
const FLAG_TENANT = 64;

/**
 * The record's bytes. Layout (big-endian):
 *   u8 format (2) · u8 status · u8 awaited bits | published bits << 4 · id submission_id ·
 *   str input topic · u32 input partition · u64 input offset ·
 *   finished: f64 finished_at · [u16 emitted generation, when not 0 or a blob follows] · [u32 blob]
 *   unfinished: f64 created_at · f64 updated_at · u8 flags · [str upload_url] · [str characteristics_url] ·
 *               [str stage · str code · str message] · [u32 blob] · [str tenant]
 * where `blob` is the fingerprint of the event's blob (`blob-fingerprint.ts`; absent in records written
 * before it, which read as unknown);
 * `id` is u8 0 + 16 bytes for a lower-case UUID, else u8 1 + str; `str` is u16 length + UTF-8.
 */
export function encodeState(state: DocumentStateV2): Buffer {
  const w = new Writer()
    .u8(FORMAT_V2)
    .u8(STATUSES.indexOf(state.status))
    .u8(awaitableBits(state.awaited) | (awaitableBits(state.published) << 4))
    .id(state.submission_id)
    .str(state.input.topic)
    .u32(state.input.partition)
    .u64(state.input.offset);
  if (isFinished(state)) {
    w.f64(state.finished_at);
    if (state.blob)
      return w
        .u16(state.generation ?? 0)
        .u32(state.blob)
        .done();
    return state.generation ? w.u16(state.generation).done() : w.done();
  }
  const { pending, error } = state;
  const flags =
    (pending ? FLAG_PENDING : 0) |
    (pending?.upload_url ? FLAG_UPLOAD_URL : 0) |
    (pending?.characteristics_url ? FLAG_CHARACTERISTICS_URL : 0) |
    (pending?.characteristics_pending ? FLAG_CHARACTERISTICS_PENDING : 0) |
    (error ? FLAG_ERROR : 0) |
    (state.blob ? FLAG_BLOB : 0) |
    (state.tenant ? FLAG_TENANT : 0);
  w.f64(state.created_at).f64(state.updated_at).u8(flags);
  if (pending?.upload_url) w.str(pending.upload_url);
  if (pending?.characteristics_url) w.str(pending.characteristics_url);
  if (error) w.str(error.stage).str(error.code).str(error.message);
  if (state.blob) w.u32(state.blob);
  if (state.tenant) w.str(state.tenant);
  return w.done();
}

/**
 * Reads a state record of either version. `inputTopic` stands in for the input topic of v1 records
 * written before they named it.
 */
export function decodeState(eventId: string, value: Buffer, inputTopic: string): DocumentStateV2 {
  if (value.length === 0) throw new StateRecordError('state record is empty');
  if (value[0] === 0x7b) return fromV1({ ...parseV1(value), event_id: eventId }, inputTopic);
  if (value[0] !== FORMAT_V2) throw new StateRecordError(`unknown state record format ${value[0]}`);
  const r = new Reader(value);
  r.u8();
  const status = STATUSES[r.u8()];
  if (status === undefined) throw new StateRecordError('unknown document status');
  const bits = r.u8();
  const common = {
    v: 2 as const,
    event_id: eventId,
    submission_id: r.id(),
    input: { topic: r.str(), partition: r.u32(), offset: r.u64() },
    awaited: awaitableList(bits & 0xf),
    published: awaitableList(bits >> 4),
  };
  if (status === 'DONE' || status === 'FAILED') {
    const finished: FinishedState = { ...common, status, finished_at: r.f64() };
    if (r.rest > 0) finished.generation = r.u16();
    if (r.rest > 0) finished.blob = r.u32();
    r.end();
    return finished;
  }
  const state: UnfinishedState = { ...common, status, created_at: r.f64(), updated_at: r.f64() };
  const flags = r.u8();
  if (flags & FLAG_PENDING) {
    state.pending = {
      upload_url: flags & FLAG_UPLOAD_URL ? r.str() : null,
      characteristics_url: flags & FLAG_CHARACTERISTICS_URL ? r.str() : null,
      characteristics_pending: (flags & FLAG_CHARACTERISTICS_PENDING) !== 0,
    };
  }
  if (flags & FLAG_ERROR) state.error = { stage: r.str(), code: r.str(), message: r.str() };
  if (flags & FLAG_BLOB) state.blob = r.u32();
  if (flags & FLAG_TENANT) state.tenant = r.str();
  r.end();
  return state;
}

/** The fields of a finished v2 record, read in place (views into the value, no strings made). */
interface FinishedPeek {
  /** 16 bytes when `sidIsUuid`, else the id's UTF-8 text. */
  sid: Uint8Array;
  sidIsUuid: boolean;
  failed: boolean;
  /** awaited bits | published bits << 4. */
  results: number;
  finishedMs: number;
  generation: number;
  /** 0: unknown. */
  blob: number;
}

/**
 * The restore path's shortcut: a well-formed finished v2 record read without decoding it into
 * objects; null for anything else (unfinished, v1, damaged), which `decodeState` then handles.
 */
export function peekFinished(value: Buffer): FinishedPeek | null {
  if (value.length < 4 || value[0] !== FORMAT_V2 || (value[1] !== 2 && value[1] !== 3)) return null;
  let at = 4;
  let sid: Uint8Array;
  const sidIsUuid = value[3] === 0;
  if (sidIsUuid) {
    sid = value.subarray(4, 20);
    at = 20;
  } else if (value[3] === 1 && value.length >= 6) {
    const len = value.readUInt16BE(4);
    sid = value.subarray(6, 6 + len);
    at = 6 + len;
  } else return null;
  if (at + 2 > value.length) return null;
  at += 2 + value.readUInt16BE(at) + 4 + 8;
  const tail = value.length - at;
  if (tail !== 8 && tail !== 10 && tail !== 14) return null;
  return {
    sid,
    sidIsUuid,
    failed: value[1] === 3,
    results: value[2]!,
    finishedMs: value.readDoubleBE(at),
    generation: tail >= 10 ? value.readUInt16BE(at + 8) : 0,
    blob: tail === 14 ? value.readUInt32BE(at + 10) : 0,
  };
}
