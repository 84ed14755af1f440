/** Ids as the finished index stores them: 16 raw bytes for a lower-case UUID, else UTF-8 text. */
import { uuidBytes } from './binary.js';

/** An id as stored: 16 raw bytes for a lower-case UUID, else its UTF-8 text. */
export interface PackedId {
  uuid: Uint8Array | null;
  bytes: Uint8Array;
}

export function packId(id: string): PackedId {
  const uuid = uuidBytes(id);
  return { uuid, bytes: uuid ?? Buffer.from(id, 'utf8') };
}

const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
}

/**
 * Packs an id given as UTF-8 bytes (a Kafka key) without making a string. A lower-case UUID is
 * decoded into `scratch` (16 bytes, reused by the caller); anything else stays as it is.
 */
export function packIdBytes(utf8: Uint8Array, scratch: Uint8Array): PackedId {
  if (utf8.length !== 36) return { uuid: null, bytes: utf8 };
  let out = 0;
  for (let i = 0; i < 36;) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (utf8[i] !== 0x2d) return { uuid: null, bytes: utf8 };
      i++;
      continue;
    }
    const hi = HEX[utf8[i]!]!;
    const lo = HEX[utf8[i + 1]!]!;
    if (hi < 0 || lo < 0) return { uuid: null, bytes: utf8 };
    scratch[out++] = (hi << 4) | lo;
    i += 2;
  }
  return { uuid: scratch, bytes: scratch };
}
