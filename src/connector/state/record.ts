/**
 * The state record, version 2: the value of the compacted state topic (key = event_id, partition =
 * the input partition). It keeps only what finishing, deduplicating and replaying a document need:
 * no copy of the input event (a resumed document re-reads its input record by topic, partition and
 * offset), never the characteristics (they come from that input record too), and the pre-signed
 * upload URL only while the upload is pending. A finished document keeps even less.
 *
 * Binary, because the state topic is restored record by record on every assignment: a finished
 * record is 59 bytes (17-character input topic) against ~1 KB for v1's JSON. Layout (big-endian):
 *   u8 format (2) · u8 status · u8 awaited bits | published bits << 4 · id submission_id ·
 *   str input topic · u32 input partition · u64 input offset ·
 *   finished: f64 finished_at · [u16 emitted generation, when not 0]
 *   unfinished: f64 created_at · f64 updated_at · u8 flags · [str upload_url] · [str characteristics_url] ·
 *               [str stage · str code · str message]
 * where `id` is u8 0 + 16 bytes for a lower-case UUID, else u8 1 + str; `str` is u16 length + UTF-8.
 *
 * Version 1 (JSON, written by docstream up to 0.1) starts with `{` and is still read: it is turned
 * into version 2 at once, so its input bytes and characteristics never stay in memory.
 */

/** Results a document can wait for; the order fixes the bits of the record. */
export const AWAITABLE = ['fraud', 'quality', 'classification', 'decision'] as const;
export type Awaitable = (typeof AWAITABLE)[number];

export interface InputPointer {
  topic: string;
  partition: number;
  /** The input record's offset (decimal string, as Kafka gives it). */
  offset: string;
}

interface StateCommon {
  v: 2;
  event_id: string;
  submission_id: string;
  input: InputPointer;
  awaited: Awaitable[];
  published: Awaitable[];
}

export interface UnfinishedState extends StateCommon {
  status: 'CREATED' | 'UPLOADED';
  created_at: number;
  updated_at: number;
  /** Present only while the file (or the characteristics) is still to be uploaded. */
  pending?: PendingUpload | undefined;
  error?: { stage: string; code: string; message: string } | undefined;
}

export interface PendingUpload {
  /** Pre-signed URL of the file upload; null once the file is uploaded. */
  upload_url: string | null;
  /** Where the characteristics go; they themselves are read again from the input record. */
  characteristics_url: string | null;
  characteristics_pending: boolean;
}

export interface FinishedState extends StateCommon {
  status: 'DONE' | 'FAILED';
  finished_at: number;
  /**
   * The replay generation whose re-emission this document last made (0: none, only its first
   * emission). A redelivered input re-emits only for a newer replay marker (`ReplayMarker`).
   */
  generation?: number | undefined;
}

export type DocumentStateV2 = UnfinishedState | FinishedState;

export function isFinished(state: DocumentStateV2): state is FinishedState {
  return state.status === 'DONE' || state.status === 'FAILED';
}

/** A state record that cannot be read. The state reader skips it and says so, without its contents. */
export class StateRecordError extends Error {
  override name = 'StateRecordError';
}

const FORMAT_V2 = 2;
const STATUSES = ['CREATED', 'UPLOADED', 'DONE', 'FAILED'] as const;
const FLAG_UPLOAD_URL = 1;
const FLAG_CHARACTERISTICS_URL = 2;
const FLAG_CHARACTERISTICS_PENDING = 4;
const FLAG_ERROR = 8;
const FLAG_PENDING = 16;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function awaitableBits(list: readonly Awaitable[]): number {
  let bits = 0;
  for (const kind of list) bits |= 1 << AWAITABLE.indexOf(kind);
  return bits;
}

export function awaitableList(bits: number): Awaitable[] {
  return AWAITABLE.filter((_, i) => (bits & (1 << i)) !== 0);
}

/** 16 bytes for a lower-case UUID (the API's ids), else null. */
export function uuidBytes(id: string): Buffer | null {
  return UUID.test(id) ? Buffer.from(id.replaceAll('-', ''), 'hex') : null;
}

export function uuidString(bytes: Uint8Array, at = 0): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset + at, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

class Writer {
  private readonly parts: Buffer[] = [];
  u8(n: number): this {
    this.parts.push(Buffer.of(n));
    return this;
  }
  u16(n: number): this {
    const b = Buffer.allocUnsafe(2);
    b.writeUInt16BE(n);
    this.parts.push(b);
    return this;
  }
  u32(n: number): this {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(n);
    this.parts.push(b);
    return this;
  }
  u64(decimal: string): this {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64BE(BigInt(decimal));
    this.parts.push(b);
    return this;
  }
  f64(n: number): this {
    const b = Buffer.allocUnsafe(8);
    b.writeDoubleBE(n);
    this.parts.push(b);
    return this;
  }
  str(s: string): this {
    const bytes = Buffer.from(s, 'utf8');
    if (bytes.length > 0xffff)
      throw new StateRecordError(`a state field is ${bytes.length} bytes (max 65535)`);
    const len = Buffer.allocUnsafe(2);
    len.writeUInt16BE(bytes.length);
    this.parts.push(len, bytes);
    return this;
  }
  id(s: string): this {
    const uuid = uuidBytes(s);
    return uuid ? this.u8(0).push(uuid) : this.u8(1).str(s);
  }
  private push(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  private need(n: number): number {
    if (this.at + n > this.b.length) throw new StateRecordError('state record is truncated');
    const at = this.at;
    this.at += n;
    return at;
  }
  u8(): number {
    return this.b.readUInt8(this.need(1));
  }
  u16(): number {
    return this.b.readUInt16BE(this.need(2));
  }
  u32(): number {
    return this.b.readUInt32BE(this.need(4));
  }
  get rest(): number {
    return this.b.length - this.at;
  }
  u64(): string {
    return this.b.readBigUInt64BE(this.need(8)).toString();
  }
  f64(): number {
    return this.b.readDoubleBE(this.need(8));
  }
  str(): string {
    const len = this.b.readUInt16BE(this.need(2));
    return this.b.toString('utf8', this.need(len), this.at);
  }
  id(): string {
    const kind = this.u8();
    if (kind === 0) return uuidString(this.b, this.need(16));
    if (kind === 1) return this.str();
    throw new StateRecordError(`unknown id encoding ${kind}`);
  }
  end(): void {
    if (this.at !== this.b.length) throw new StateRecordError('state record has trailing bytes');
  }
}

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
    return state.generation ? w.u16(state.generation).done() : w.done();
  }
  const { pending, error } = state;
  const flags =
    (pending ? FLAG_PENDING : 0) |
    (pending?.upload_url ? FLAG_UPLOAD_URL : 0) |
    (pending?.characteristics_url ? FLAG_CHARACTERISTICS_URL : 0) |
    (pending?.characteristics_pending ? FLAG_CHARACTERISTICS_PENDING : 0) |
    (error ? FLAG_ERROR : 0);
  w.f64(state.created_at).f64(state.updated_at).u8(flags);
  if (pending?.upload_url) w.str(pending.upload_url);
  if (pending?.characteristics_url) w.str(pending.characteristics_url);
  if (error) w.str(error.stage).str(error.code).str(error.message);
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
  r.end();
  return state;
}

/**
 * Version 1 as docstream 0.1 wrote it (copied from `connector/types.ts` DocumentState so this module
 * keeps reading it whatever happens to that type). Only the fields v2 keeps are typed strictly.
 */
export interface DocumentStateV1 {
  v: 1;
  event_id: string;
  submission_id: string;
  status: 'CREATED' | 'UPLOADED' | 'DONE' | 'FAILED';
  topic?: string;
  input?: { key: string | null; value: string | null };
  partition: number;
  offset: string;
  query_id: string | null;
  pipeline: string;
  enable_decision: boolean;
  attributes: Record<string, string>;
  traceparent: string | null;
  awaited: Awaitable[];
  published: Awaitable[];
  created_at: number;
  updated_at: number;
  error?: { stage: string; code: string; message: string };
  pending?: {
    blob: unknown;
    upload_url: string;
    characteristics_url: string | null;
    characteristics: unknown;
  };
}

function parseV1(value: Buffer): DocumentStateV1 {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    throw new StateRecordError('v1 state record is not JSON');
  }
  const s = parsed as Partial<DocumentStateV1> | null;
  if (
    s === null ||
    typeof s !== 'object' ||
    s.v !== 1 ||
    typeof s.submission_id !== 'string' ||
    !STATUSES.includes(s.status as (typeof STATUSES)[number]) ||
    typeof s.partition !== 'number' ||
    typeof s.offset !== 'string' ||
    !Array.isArray(s.awaited) ||
    !Array.isArray(s.published)
  ) {
    throw new StateRecordError('v1 state record lacks required fields');
  }
  return s as DocumentStateV1;
}

const known = (list: unknown[]): Awaitable[] =>
  list.filter((k): k is Awaitable => AWAITABLE.includes(k as Awaitable));

/** The v2 view of a v1 record: input bytes and characteristics are left behind here. */
export function fromV1(old: DocumentStateV1, inputTopic: string): DocumentStateV2 {
  const common = {
    v: 2 as const,
    event_id: old.event_id,
    submission_id: old.submission_id,
    input: { topic: old.topic ?? inputTopic, partition: old.partition, offset: old.offset },
    awaited: known(old.awaited),
    published: known(old.published),
  };
  if (old.status === 'DONE' || old.status === 'FAILED') {
    return { ...common, status: old.status, finished_at: old.updated_at };
  }
  const state: UnfinishedState = {
    ...common,
    status: old.status,
    created_at: old.created_at,
    updated_at: old.updated_at,
  };
  if (old.pending) {
    state.pending = {
      // v1 dropped `pending` once the file was uploaded, so in v1 the URL is pending iff CREATED.
      upload_url: old.status === 'CREATED' ? old.pending.upload_url : null,
      characteristics_url: old.pending.characteristics_url,
      characteristics_pending:
        old.pending.characteristics !== null && old.pending.characteristics !== undefined,
    };
  }
  if (old.error) state.error = old.error;
  return state;
}

/** The fields of a finished v2 record, read in place (views into the value, no strings made). */
export interface FinishedPeek {
  /** 16 bytes when `sidIsUuid`, else the id's UTF-8 text. */
  sid: Uint8Array;
  sidIsUuid: boolean;
  failed: boolean;
  /** awaited bits | published bits << 4. */
  results: number;
  finishedMs: number;
  generation: number;
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
  if (at + 8 !== value.length && at + 10 !== value.length) return null;
  return {
    sid,
    sidIsUuid,
    failed: value[1] === 3,
    results: value[2]!,
    finishedMs: value.readDoubleBE(at),
    generation: at + 10 === value.length ? value.readUInt16BE(at + 8) : 0,
  };
}

/**
 * The reserved key of a partition's replay marker (an event id never starts with a control
 * character: such ids are dead-lettered as invalid).
 */
export const REPLAY_KEY = '\u0000replay';

/**
 * Written by `docstream replay` into each state partition when it moves the group back: input records
 * below `until_offset` (the group's committed offset before the reset) are a replay, and a finished
 * document re-emits its results once per generation. Any other redelivery of a finished document's
 * input (a crash before the commit) publishes nothing again.
 */
export interface ReplayMarker {
  generation: number;
  until_offset: string;
  at: number;
}

const MAX_GENERATION = 0xffff;

export function encodeReplayMarker(marker: ReplayMarker): Buffer {
  if (!Number.isInteger(marker.generation) || marker.generation < 1 || marker.generation > MAX_GENERATION)
    throw new StateRecordError(`replay generation ${marker.generation} is out of range 1-${MAX_GENERATION}`);
  return new Writer().u8(0x52).u16(marker.generation).u64(marker.until_offset).f64(marker.at).done();
}

export function decodeReplayMarker(value: Buffer): ReplayMarker {
  const r = new Reader(value);
  if (r.u8() !== 0x52) throw new StateRecordError('not a replay marker');
  const marker = { generation: r.u16(), until_offset: r.u64(), at: r.f64() };
  r.end();
  return marker;
}

export { MAX_GENERATION };
