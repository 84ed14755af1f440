/**
 * Record-batch compression codecs that kafkajs 2.2.4 lacks: snappy, LZ4 and zstd (it brings only
 * gzip). Without a codec, a batch compressed that way fails the fetch that brings it; the consumer
 * restarts, fetches the same batch again and never gets past it, so one compressing producer stalls
 * its partition. `installCompressionCodecs` puts the three into kafkajs's codec table (shared by
 * every client of the process); `KafkaClient` calls it before it makes its kafkajs client.
 *
 * Each codec reads what the usual producers write: snappy raw (librdkafka, franz-go, kafkajs) or
 * in xerial's framing (the Java client); LZ4 frames (the format Kafka uses since magic 1, written
 * by every client); zstd frames, single or streamed. The libraries are plain JavaScript (snappyjs,
 * lz4js) and Node's own zlib, so nothing is built at install. They are loaded on the first batch
 * that needs them: lz4js allocates its working buffers when it loads.
 */
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import kafkajs from 'kafkajs';
import type { CompressionTypes as KafkajsCompressionType } from 'kafkajs';
import { KafkaError } from './errors.js';

const { CompressionCodecs, CompressionTypes } = kafkajs;
const require = createRequire(import.meta.url);

/** The compressions a producer of this module can use. */
export type CompressionName = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

/** kafkajs's compression type for a name (producer and transactional sends). */
export function kafkajsCompression(name: CompressionName | undefined): KafkajsCompressionType {
  switch (name) {
    case 'gzip':
      return CompressionTypes.GZIP;
    case 'snappy':
      return CompressionTypes.Snappy;
    case 'lz4':
      return CompressionTypes.LZ4;
    case 'zstd':
      return CompressionTypes.ZSTD;
    default:
      return CompressionTypes.None;
  }
}

/**
 * Largest decompressed batch a codec produces. A batch whose header claims more is refused as
 * corrupt instead of being allocated: a few corrupt or hostile bytes must not take the process's
 * memory. Far above any real batch (the broker's default limit is about 1 MB compressed).
 */
export const MAX_DECOMPRESSED_BATCH_BYTES = 256 * 1024 * 1024;

/** A codec as kafkajs calls it: `compress` gets the records' encoder, `decompress` their bytes. */
export interface BatchCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

/** What a codec throws on bytes it cannot decode: not retriable, the same bytes fail again. */
function corruptBatch(codec: string, reason: unknown): KafkaError {
  const detail = reason instanceof Error ? reason.message : String(reason);
  return new KafkaError(`${codec}-compressed record batch cannot be decoded: ${detail}`, {
    retriable: false,
    cause: reason,
  });
}

// ---- snappy --------------------------------------------------------------------------------------

interface SnappyJs {
  compress(input: Buffer): Buffer;
  uncompress(input: Buffer, maxLength?: number): Buffer;
}

let snappyJs: SnappyJs | undefined;
const snappyLib = (): SnappyJs => (snappyJs ??= require('snappyjs') as SnappyJs);

/** xerial's snappy-java stream header: "\x82SNAPPY\0", then a version and a compatible version. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;

/** Whether `buffer` is in xerial's framing (the Java client's snappy) rather than raw snappy. */
export function isXerialFramed(buffer: Buffer): boolean {
  return buffer.length >= XERIAL_HEADER_BYTES && buffer.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
}

function snappyUncompress(block: Buffer, maxLength: number): Buffer {
  try {
    return snappyLib().uncompress(block, maxLength);
  } catch (error) {
    throw corruptBatch('snappy', error);
  }
}

/**
 * Raw snappy, or xerial's framing of it: after the 16-byte header, chunks of a big-endian 32-bit
 * length and that many bytes of raw snappy, whose outputs are concatenated.
 */
export function snappyDecompress(buffer: Buffer, maxBytes = MAX_DECOMPRESSED_BATCH_BYTES): Buffer {
  if (!isXerialFramed(buffer)) return snappyUncompress(buffer, maxBytes);
  const chunks: Buffer[] = [];
  let total = 0;
  let offset = XERIAL_HEADER_BYTES;
  while (offset < buffer.length) {
    if (offset + 4 > buffer.length) throw corruptBatch('snappy', 'truncated xerial chunk length');
    const size = buffer.readUInt32BE(offset);
    offset += 4;
    if (offset + size > buffer.length) throw corruptBatch('snappy', 'truncated xerial chunk');
    const chunk = snappyUncompress(buffer.subarray(offset, offset + size), maxBytes - total);
    total += chunk.length;
    chunks.push(chunk);
    offset += size;
  }
  return Buffer.concat(chunks, total);
}

/** Raw snappy, as librdkafka and franz-go write it; every Kafka client and the broker read it. */
export function snappyCompress(input: Buffer): Buffer {
  return snappyLib().compress(input);
}

// ---- LZ4 -----------------------------------------------------------------------------------------

interface Lz4Js {
  compressBound(size: number): number;
  decompressBound(src: Uint8Array): number;
  compressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    sIndex: number,
    sLength: number,
    hashTable: Uint32Array,
  ): number;
  decompress(src: Uint8Array, maxSize: number): Uint8Array;
}

let lz4Js: Lz4Js | undefined;
const lz4Lib = (): Lz4Js => (lz4Js ??= require('lz4js') as Lz4Js);

/**
 * The frame header Kafka's Java client writes: magic number, then the descriptor "version 1,
 * independent blocks, no checksums, 64 KiB blocks" and its checksum byte (xxh32 of the two
 * descriptor bytes, second byte). Kafka's reader accepts only independent blocks and checks that
 * byte; lz4js's own frame writer sets neither, hence this writer.
 */
const LZ4_FRAME_HEADER = Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
const LZ4_BLOCK_BYTES = 64 * 1024;
/** The high bit of a block's size: the block is stored uncompressed. */
const LZ4_UNCOMPRESSED_BLOCK = 0x80000000;
const LZ4_HASH_TABLE_SIZE = 1 << 16;

/** An LZ4 frame of `input` in 64 KiB blocks, each compressed on its own. */
export function lz4Compress(input: Buffer): Buffer {
  const lz4 = lz4Lib();
  const parts: Buffer[] = [LZ4_FRAME_HEADER];
  const hashTable = new Uint32Array(LZ4_HASH_TABLE_SIZE);
  const out = new Uint8Array(lz4.compressBound(Math.min(input.length, LZ4_BLOCK_BYTES)));
  for (let start = 0; start < input.length; start += LZ4_BLOCK_BYTES) {
    const block = input.subarray(start, Math.min(start + LZ4_BLOCK_BYTES, input.length));
    // A block starts with an empty table, so no match reaches into an earlier block.
    hashTable.fill(0);
    const size = lz4.compressBlock(block, out, 0, block.length, hashTable);
    const length = Buffer.alloc(4);
    if (size === 0 || size >= block.length) {
      // Nothing gained (or nothing matched): the block goes as it is.
      length.writeUInt32LE((LZ4_UNCOMPRESSED_BLOCK | block.length) >>> 0);
      parts.push(length, block);
    } else {
      length.writeUInt32LE(size);
      parts.push(length, Buffer.from(out.subarray(0, size)));
    }
  }
  // The end mark: a block of size zero.
  parts.push(Buffer.alloc(4));
  return Buffer.concat(parts);
}

/** The bytes of an LZ4 frame (any block size, with or without checksums and content size). */
export function lz4Decompress(buffer: Buffer, maxBytes = MAX_DECOMPRESSED_BATCH_BYTES): Buffer {
  const lz4 = lz4Lib();
  let bound: number;
  let out: Uint8Array;
  try {
    bound = lz4.decompressBound(buffer);
    if (!Number.isSafeInteger(bound) || bound < 0) throw new Error(`impossible decompressed size ${bound}`);
    if (bound > maxBytes) throw new Error(`decompressed size ${bound} over the limit of ${maxBytes} bytes`);
    out = lz4.decompress(buffer, bound);
  } catch (error) {
    throw corruptBatch('lz4', error);
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

// ---- zstd ----------------------------------------------------------------------------------------

type ZlibCall = (input: Buffer, options: zlib.ZstdOptions) => Promise<Buffer>;

/** A zlib call with options as a promise. */
function promised(
  call: (input: Buffer, options: zlib.ZstdOptions, done: (error: Error | null, out: Buffer) => void) => void,
): ZlibCall {
  return (input, options) =>
    new Promise((resolve, reject) =>
      call(input, options, (error, out) => (error ? reject(error) : resolve(out))),
    );
}

/** Node's zstd (22.15 and later; 24 has it): undefined on an older Node 22. */
const zstdCompressCall = 'zstdCompress' in zlib ? promised(zlib.zstdCompress) : undefined;
const zstdDecompressCall = 'zstdDecompress' in zlib ? promised(zlib.zstdDecompress) : undefined;

function zstdUnavailable(): Error {
  return new Error(
    `zstd-compressed record batches need Node 22.15 or later (this is Node ${process.versions.node})`,
  );
}

export async function zstdCompress(input: Buffer): Promise<Buffer> {
  if (!zstdCompressCall) throw zstdUnavailable();
  return zstdCompressCall(input, {});
}

export async function zstdDecompress(
  buffer: Buffer,
  maxBytes = MAX_DECOMPRESSED_BATCH_BYTES,
): Promise<Buffer> {
  if (!zstdDecompressCall) throw zstdUnavailable();
  try {
    return await zstdDecompressCall(buffer, { maxOutputLength: maxBytes });
  } catch (error) {
    throw corruptBatch('zstd', error);
  }
}

// ---- the table ----------------------------------------------------------------------------------

export const CODECS = {
  snappy: {
    compress: async (encoder) => snappyCompress(encoder.buffer),
    decompress: async (buffer) => snappyDecompress(buffer),
  },
  lz4: {
    compress: async (encoder) => lz4Compress(encoder.buffer),
    decompress: async (buffer) => lz4Decompress(buffer),
  },
  zstd: {
    compress: async (encoder) => zstdCompress(encoder.buffer),
    decompress: async (buffer) => zstdDecompress(buffer),
  },
} satisfies Record<'snappy' | 'lz4' | 'zstd', BatchCodec>;

/** Puts the snappy, LZ4 and zstd codecs into kafkajs's table; idempotent. */
export function installCompressionCodecs(): void {
  CompressionCodecs[CompressionTypes.Snappy] = () => CODECS.snappy;
  CompressionCodecs[CompressionTypes.LZ4] = () => CODECS.lz4;
  CompressionCodecs[CompressionTypes.ZSTD] = () => CODECS.zstd;
}
