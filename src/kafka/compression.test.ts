/**
 * The snappy, LZ4 and zstd codecs: they decode what other clients write (bytes made by Kafka's Java
 * client 4.1.1 and by the lz4 command), round-trip any bytes, refuse corrupt or oversized input with
 * a non-retriable KafkaError, and once installed let kafkajs decode record batches compressed with
 * each (its own record-batch encoder and decoder, as a fetch uses them); every KafkaClient installs them.
 */
import kafkajs from 'kafkajs';
import fc from 'fast-check';
import {
  CODECS,
  installCompressionCodecs,
  isXerialFramed,
  kafkajsCompression,
  lz4Compress,
  lz4Decompress,
  snappyCompress,
  snappyDecompress,
  zstdCompress,
  zstdDecompress,
} from './compression.js';
import { KafkaClient } from './client.js';
import { KafkaError } from './errors.js';
import { kafkajsInternal } from './kafkajs-internals.js';

const { CompressionTypes } = kafkajs;

/** What every fixture below holds, decompressed. */
const TEXT = Buffer.from(
  'docstream: a compressed arrival event, a compressed arrival event, a compressed arrival event.',
);

/**
 * Made by kafka-clients 4.1.1 (`Compression.<type>().build().wrapForOutput(out, MAGIC_VALUE_V2)`, then
 * TEXT written and the stream closed): the compressed records of a Java producer's batch.
 */
const FROM_JAVA = {
  // snappy-java 1.1.10.7's SnappyOutputStream: xerial's framing around one raw snappy chunk.
  snappy: 'glNOQVBQWQAAAAABAAAAAQAAAC5emGRvY3N0cmVhbTogYSBjb21wcmVzc2VkIGFycml2YWwgZXZlbnQsINYcAAAu',
  // KafkaLZ4BlockOutputStream: independent 64 KiB blocks, no checksums.
  lz4: 'BCJNGGBAgjEAAAD/F2RvY3N0cmVhbTogYSBjb21wcmVzc2VkIGFycml2YWwgZXZlbnQsHAAgUHZlbnQuAAAAAA==',
  // zstd-jni 1.5.6-10's ZstdOutputStream.
  zstd: 'KLUv/QBYfAEAdAJkb2NzdHJlYW06IGEgY29tcHJlc3NlZCBhcnJpdmFsIGV2ZW50LC4BAOaf8wkBAAA=',
};

/** `lz4 -c --content-size` (lz4 1.9.4): a frame with its content size and a content checksum. */
const FROM_LZ4_CLI =
  'BCJNGGxAXgAAAAAAAAC1MQAAAP8XZG9jc3RyZWFtOiBhIGNvbXByZXNzZWQgYXJyaXZhbCBldmVudCwcACBQdmVudC4AAAAAg+BmAQ==';

const b64 = (s: string): Buffer => Buffer.from(s, 'base64');

/** Bytes that compress (a repeated phrase with a counter) of about `size` bytes. */
function compressible(size: number): Buffer {
  const parts: string[] = [];
  for (let i = 0, n = 0; n < size; i++) {
    const part = `{"event_id":"evt-${i % 97}","blob":{"url":"s3://bucket/doc-${i}.pdf"}}`;
    parts.push(part);
    n += part.length;
  }
  return Buffer.from(parts.join('')).subarray(0, size);
}

/** Bytes that do not compress (a fixed-seed linear congruential sequence). */
function incompressible(size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = 12345;
  for (let i = 0; i < size; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function expectCorrupt(run: () => unknown, codec: string): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(KafkaError);
  expect((thrown as KafkaError).retriable).toBe(false);
  expect((thrown as KafkaError).message).toContain(`${codec}-compressed record batch cannot be decoded`);
}

describe('a KafkaClient', () => {
  it('installs the codecs into kafkajs when it is made', () => {
    const { CompressionCodecs } = kafkajs;
    // kafkajs's own table, before any client: no snappy.
    expect(() => CompressionCodecs[CompressionTypes.Snappy]()).toThrow('Snappy compression not implemented');
    new KafkaClient({ brokers: ['localhost:9'] });
    expect(CompressionCodecs[CompressionTypes.Snappy]()).toBe(CODECS.snappy);
    expect(CompressionCodecs[CompressionTypes.LZ4]()).toBe(CODECS.lz4);
    expect(CompressionCodecs[CompressionTypes.ZSTD]()).toBe(CODECS.zstd);
  });
});

describe('snappy', () => {
  it("decodes the Java client's xerial-framed bytes", () => {
    const framed = b64(FROM_JAVA.snappy);
    expect(isXerialFramed(framed)).toBe(true);
    expect(snappyDecompress(framed)).toEqual(TEXT);
  });

  it('decodes raw snappy (the chunk inside that frame, as librdkafka and franz-go send it)', () => {
    const framed = b64(FROM_JAVA.snappy);
    const length = framed.readUInt32BE(16);
    const raw = framed.subarray(20, 20 + length);
    expect(isXerialFramed(raw)).toBe(false);
    expect(snappyDecompress(raw)).toEqual(TEXT);
  });

  it('concatenates the chunks of a xerial frame', () => {
    const framed = b64(FROM_JAVA.snappy);
    const chunk = framed.subarray(16);
    const twice = Buffer.concat([framed.subarray(0, 16), chunk, chunk]);
    expect(snappyDecompress(twice)).toEqual(Buffer.concat([TEXT, TEXT]));
  });

  it('round-trips empty, small, large and incompressible bytes', () => {
    for (const input of [Buffer.alloc(0), TEXT, compressible(300_000), incompressible(70_000)]) {
      const compressed = snappyCompress(input);
      expect(Buffer.isBuffer(compressed)).toBe(true);
      expect(snappyDecompress(compressed)).toEqual(input);
    }
    expect(snappyCompress(compressible(300_000)).length).toBeLessThan(100_000);
  });

  it('refuses truncated frames, bad bytes and output over the limit', () => {
    const framed = b64(FROM_JAVA.snappy);
    expectCorrupt(() => snappyDecompress(framed.subarray(0, framed.length - 3)), 'snappy');
    expectCorrupt(() => snappyDecompress(framed.subarray(0, 18)), 'snappy');
    expectCorrupt(() => snappyDecompress(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff])), 'snappy');
    expectCorrupt(() => snappyDecompress(framed, TEXT.length - 1), 'snappy');
    expect(snappyDecompress(framed, TEXT.length)).toEqual(TEXT);
  });
});

describe('lz4', () => {
  it("decodes the Java client's frame and the lz4 command's (content size and checksum)", () => {
    expect(lz4Decompress(b64(FROM_JAVA.lz4))).toEqual(TEXT);
    expect(lz4Decompress(b64(FROM_LZ4_CLI))).toEqual(TEXT);
  });

  it("writes the frame header the Java client writes (Kafka's reader checks its descriptor)", () => {
    expect(lz4Compress(TEXT).subarray(0, 7)).toEqual(b64(FROM_JAVA.lz4).subarray(0, 7));
  });

  it('round-trips empty, small, multi-block and incompressible bytes', () => {
    for (const input of [Buffer.alloc(0), TEXT, compressible(300_000), incompressible(70_000)]) {
      expect(lz4Decompress(lz4Compress(input))).toEqual(input);
    }
    expect(lz4Compress(compressible(300_000)).length).toBeLessThan(100_000);
    // Incompressible blocks are stored as they are: the frame is the input plus its framing.
    expect(lz4Compress(incompressible(70_000)).length).toBe(70_000 + 7 + 2 * 4 + 4);
  });

  it('compresses each 64 KiB block on its own (a block decodes without the ones before it)', () => {
    const input = compressible(150_000);
    const frame = lz4Compress(input);
    // Skip the header and the first block; the second block then stands alone in a frame.
    const first = frame.readUInt32LE(7) & 0x7fffffff;
    const secondAt = 7 + 4 + first;
    const second = frame.readUInt32LE(secondAt) & 0x7fffffff;
    const alone = Buffer.concat([
      frame.subarray(0, 7),
      frame.subarray(secondAt, secondAt + 4 + second),
      Buffer.alloc(4),
    ]);
    expect(lz4Decompress(alone)).toEqual(input.subarray(65_536, 131_072));
  });

  it('refuses bytes that are not a frame and a declared size over the limit', () => {
    expectCorrupt(() => lz4Decompress(Buffer.from('not an lz4 frame')), 'lz4');
    expectCorrupt(() => lz4Decompress(b64(FROM_LZ4_CLI), TEXT.length - 1), 'lz4');
  });
});

describe('zstd', () => {
  it("decodes the Java client's frame", async () => {
    expect(await zstdDecompress(b64(FROM_JAVA.zstd))).toEqual(TEXT);
  });

  it('round-trips empty, small, large and incompressible bytes', async () => {
    for (const input of [Buffer.alloc(0), TEXT, compressible(300_000), incompressible(70_000)]) {
      expect(await zstdDecompress(await zstdCompress(input))).toEqual(input);
    }
  });

  it('refuses bad bytes and output over the limit', async () => {
    await expect(zstdDecompress(Buffer.from('not a zstd frame'))).rejects.toThrow(
      'zstd-compressed record batch cannot be decoded',
    );
    const error = await zstdDecompress(b64(FROM_JAVA.zstd), TEXT.length - 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaError);
    expect((error as KafkaError).retriable).toBe(false);
  });
});

describe('every codec', () => {
  it('round-trips any bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 5_000 }), async (bytes) => {
        const input = Buffer.from(bytes);
        for (const codec of Object.values(CODECS)) {
          expect(await codec.decompress(await codec.compress({ buffer: input }))).toEqual(input);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('kafkajs with the codecs installed', () => {
  type Encoded = { buffer: Buffer };
  const { RecordBatch } = kafkajsInternal<{
    RecordBatch: (batch: { compression: number; records: unknown[] }) => Promise<Encoded>;
  }>('protocol/recordBatch/v0/index.js');
  const Record = kafkajsInternal<(record: { offsetDelta: number; key: Buffer; value: Buffer }) => unknown>(
    'protocol/recordBatch/record/v0/index.js',
  );
  const decodeBatch = kafkajsInternal<
    (decoder: unknown) => Promise<{ records: Array<{ key: Buffer; value: Buffer; offset: string }> }>
  >('protocol/recordBatch/v0/decoder.js');
  const Decoder = kafkajsInternal<new (buffer: Buffer) => unknown>('protocol/decoder.js');

  beforeAll(() => installCompressionCodecs());

  it.each(['snappy', 'lz4', 'zstd'] as const)(
    'decodes a record batch compressed with %s as kafkajs encodes it',
    async (name) => {
      const records = Array.from({ length: 50 }, (_, i) => ({
        offsetDelta: i,
        key: Buffer.from(`evt-${i}`),
        value: compressible(200 + i),
      }));
      const encoded = await RecordBatch({
        compression: kafkajsCompression(name),
        records: records.map((r) => Record(r)),
      });
      const decoded = await decodeBatch(new Decoder(encoded.buffer));
      expect(decoded.records.map((r) => [r.key.toString(), r.value])).toEqual(
        records.map((r) => [r.key.toString(), r.value]),
      );
    },
  );

  it('names each compression by its kafkajs type', () => {
    const names = ['none', 'gzip', 'snappy', 'lz4', 'zstd', undefined] as const;
    expect(names.map((n) => kafkajsCompression(n))).toEqual([
      CompressionTypes.None,
      CompressionTypes.GZIP,
      CompressionTypes.Snappy,
      CompressionTypes.LZ4,
      CompressionTypes.ZSTD,
      CompressionTypes.None,
    ]);
  });
});
