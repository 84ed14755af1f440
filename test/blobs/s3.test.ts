/**
 * s3:// blobs against the stack's S3-compatible store (moto server on localhost:9002 unless
 * DOCSTREAM_BLOBS_S3_ENDPOINT points elsewhere): signed GETs over docstream's own pooled client.
 * moto checks no signature, so a loopback front of it checks each one as S3 does (an independent
 * SigV4 computation) where a test is about signatures or counts requests.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { BlobError, createBlobSource, type BlobPolicy, type BlobSource } from '../../src/blobs/index.js';
import { CountingBlobServer, s3ErrorXml } from '../../src/blobs/test-helpers.js';
import { S3_ENDPOINT as endpoint, ScratchBucket } from '../harness/s3-store.js';

const store = new ScratchBucket('docstream-blobs-it');
const bucket = store.name;
const content = randomBytes(300 * 1024);
const sha = createHash('sha256').update(content).digest('hex');
const keys = ['docs/sample.pdf', 'docs/with space %.pdf'];

const basePolicy: BlobPolicy = {
  fileRoots: [],
  httpHosts: [],
  allowPrivateNetworks: false,
  s3Buckets: [bucket],
  s3Endpoint: endpoint,
  s3Region: 'us-east-1',
  s3ForcePathStyle: true,
  verifySha256: true,
  maxBytes: 1024 * 1024,
};

let source: BlobSource;

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function blobError(promise: Promise<unknown>): Promise<BlobError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof BlobError) return error;
    throw error;
  }
  throw new Error('expected a BlobError');
}

beforeAll(async () => {
  await store.create();
  for (const key of keys) await store.put(key, content, 'application/pdf');
  source = createBlobSource(basePolicy);
});

afterAll(async () => {
  source?.close();
  await store.remove();
});

describe('s3:// blobs against the local S3 store', () => {
  it('reads an object back, with size and type from its answer, on every open', async () => {
    const blob = await source.resolve({ url: `s3://${bucket}/${keys[0]}` });
    expect(blob.size).toBe(content.length);
    expect(blob.contentType).toBe('application/pdf');
    expect((await readAll(await blob.open())).equals(content)).toBe(true);
    expect((await readAll(await blob.open())).equals(content)).toBe(true);
    await blob.cleanup();
  });

  it('takes the key literally, spaces and percent signs included', async () => {
    const blob = await source.resolve({ url: `s3://${bucket}/${keys[1]}` });
    expect((await readAll(await blob.open())).equals(content)).toBe(true);
    await blob.cleanup();
  });

  it('verifies sha256 before handing the bytes out', async () => {
    const blob = await source.resolve({ url: `s3://${bucket}/${keys[0]}`, sha256: sha });
    expect(blob.sha256).toBe(sha);
    expect((await readAll(await blob.open())).equals(content)).toBe(true);
    await blob.cleanup();
    const error = await blobError(
      source.resolve({ url: `s3://${bucket}/${keys[0]}`, sha256: '0'.repeat(64) }),
    );
    expect([error.code, error.retriable]).toEqual(['sha256_mismatch', false]);
  });

  it('reports a missing key or bucket as not found', async () => {
    const missingKey = await blobError(source.resolve({ url: `s3://${bucket}/docs/nope.pdf` }));
    expect([missingKey.code, missingKey.retriable]).toEqual(['blob_not_found', false]);
    const withAbsent = createBlobSource({ ...basePolicy, s3Buckets: [bucket, `${bucket}-absent`] });
    try {
      const missingBucket = await blobError(withAbsent.resolve({ url: `s3://${bucket}-absent/k.pdf` }));
      expect(missingBucket.code).toBe('blob_not_found');
    } finally {
      withAbsent.close();
    }
  });

  it('refuses buckets that are not listed', async () => {
    const other = createBlobSource({ ...basePolicy, s3Buckets: ['some-other-bucket'] });
    try {
      const error = await blobError(other.resolve({ url: `s3://${bucket}/${keys[0]}` }));
      expect(error.code).toBe('blob_not_allowed');
    } finally {
      other.close();
    }
  });

  it('hands out the object that was checked, even when it is replaced afterwards', async () => {
    const key = 'docs/replaced.pdf';
    await store.put(key, content);
    const blob = await source.resolve({ url: `s3://${bucket}/${key}` });
    await store.put(key, randomBytes(content.length));
    expect((await readAll(await blob.open())).equals(content)).toBe(true);
    await blob.cleanup();
  });

  it('fetches each object once (one GET, no HEAD, validly signed) over kept-alive connections, at most connectionsPerHost', async () => {
    // A loopback keep-alive front of the store counts what the source costs it, and lets through
    // only requests signed with the secret of the default credential chain (here the environment).
    const front = await new CountingBlobServer(new URL(endpoint)).start();
    front.secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
    const proxied = createBlobSource(
      { ...basePolicy, s3Endpoint: front.origin, inMemoryBytes: 100 * 1024 },
      { connectionsPerHost: 3 },
    );
    try {
      for (let round = 0; round < 4; round++) {
        const blobs = await Promise.all(
          Array.from({ length: 10 }, () =>
            proxied.resolve({ url: `s3://${bucket}/${keys[0]}`, sha256: sha }),
          ),
        );
        for (const blob of blobs) {
          // Opened twice, as a retried upload would: read from the kept copy both times.
          expect((await readAll(await blob.open())).equals(content)).toBe(true);
          expect((await readAll(await blob.open())).equals(content)).toBe(true);
          await blob.cleanup();
        }
      }
      expect([front.gets, front.requests]).toEqual([40, 40]);
      expect(front.connections).toBeGreaterThan(0);
      expect(front.connections).toBeLessThanOrEqual(3);
    } finally {
      proxied.close();
      await front.stop();
    }
  });

  it('refuses a request signed with the wrong secret as the current code did: blob_unreadable, not retried', async () => {
    const front = await new CountingBlobServer(new URL(endpoint)).start();
    front.secretAccessKey = `${process.env.AWS_SECRET_ACCESS_KEY}-rotated`;
    const wrong = createBlobSource({ ...basePolicy, s3Endpoint: front.origin });
    try {
      const error = await blobError(wrong.resolve({ url: `s3://${bucket}/${keys[0]}` }));
      expect([error.code, error.retriable, error.message]).toEqual([
        'blob_unreadable',
        false,
        `s3://${bucket}/${keys[0]} is not readable with these credentials (SignatureDoesNotMatch)`,
      ]);
      expect(front.gets).toBe(1);
    } finally {
      wrong.close();
      await front.stop();
    }
  });

  it('tries a GET answered 503 SlowDown again (as the SDK did), and takes lasting 503s as transient failure', async () => {
    const front = await new CountingBlobServer(new URL(endpoint)).start();
    const path = `/${bucket}/${keys[0]}`;
    const busy = createBlobSource({ ...basePolicy, s3Endpoint: front.origin });
    try {
      front.reply(path, 503, s3ErrorXml('SlowDown'), {}, 1);
      const blob = await busy.resolve({ url: `s3://${bucket}/${keys[0]}`, sha256: sha });
      expect((await readAll(await blob.open())).equals(content)).toBe(true);
      await blob.cleanup();
      expect(front.gets).toBe(2);
      front.reply(path, 503, s3ErrorXml('SlowDown'));
      const error = await blobError(busy.resolve({ url: `s3://${bucket}/${keys[0]}`, sha256: sha }));
      expect([error.code, error.retriable, error.message]).toEqual([
        'blob_unreadable',
        true,
        `s3://${bucket}/${keys[0]} could not be read (SlowDown, HTTP 503)`,
      ]);
      expect(front.gets).toBe(2 + 3);
    } finally {
      busy.close();
      await front.stop();
    }
  });

  it('refuses objects larger than maxBytes', async () => {
    const small = createBlobSource({ ...basePolicy, maxBytes: content.length - 1 });
    try {
      expect((await blobError(small.resolve({ url: `s3://${bucket}/${keys[0]}` }))).code).toBe(
        'blob_too_large',
      );
    } finally {
      small.close();
    }
  });
});
