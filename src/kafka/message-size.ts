/**
 * How many bytes a message takes in a Kafka record batch (format v2), as an upper bound: the
 * broker checks `max.message.bytes` against the whole batch, so a message is judged alone with the
 * batch header counted. Uncompressed sizes: with compression the real size is smaller, so a
 * message refused here could have fitted once compressed — the safe side to be wrong on.
 */

/** A record as docstream writes it (the producer's and the transactions' input). */
export interface OutgoingMessage {
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers?: Record<string, string | Buffer>;
  /** Explicit partition (e.g. to co-partition the state topic with the input); else by key hash. */
  partition?: number;
  /** Milliseconds since the epoch, as a string like Kafka's own timestamps. */
  timestamp?: string;
}

/** Record batch header (offset, length, epoch, magic, crc, attributes, deltas, ids, count). */
export const RECORD_BATCH_OVERHEAD = 61;
/** A varint is at most 5 bytes for 32-bit values, 10 for the timestamp delta. */
const VARINT = 5;
const RECORD_OVERHEAD =
  VARINT /* length */ + 1 /* attributes */ + 10 /* timestamp delta */ + VARINT; /* offset delta */

/** The producer's default limit: below the broker's default `message.max.bytes` (1,048,588). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;

function length(value: Buffer | string | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'string' ? Buffer.byteLength(value) : value.length;
}

/** Bytes of one record without the batch header. */
function recordSize(message: OutgoingMessage): number {
  let size = RECORD_OVERHEAD + VARINT + length(message.key) + VARINT + length(message.value) + VARINT;
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    size += VARINT + Buffer.byteLength(name) + VARINT + length(value);
  }
  return size;
}

/** Bytes of a batch holding only this message: what the broker compares to its limit. */
export function messageSize(message: OutgoingMessage): number {
  return RECORD_BATCH_OVERHEAD + recordSize(message);
}
