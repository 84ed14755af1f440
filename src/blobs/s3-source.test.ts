import type { S3Client } from '@aws-sdk/client-s3';
import { PassThrough } from 'node:stream';
import type { BlobPolicy } from './policy.js';
import { createBlobSource } from './index.js';
import { s3Error } from './s3-source.js';
import { blobError, policy } from './test-helpers.js';

function sdkError(name: string, status?: number, extra: object = {}): Error {
  return Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status }, ...extra });
}

describe('s3Error', () => {
  it.each([
    [sdkError('NoSuchKey', 404), 'blob_not_found', false],
    [sdkError('NotFound', 404), 'blob_not_found', false],
    [sdkError('NoSuchBucket', 404), 'blob_not_found', false],
    [sdkError('AccessDenied', 403), 'blob_unreadable', false],
    [sdkError('InvalidRequest', 400), 'blob_unreadable', false],
    [sdkError('SlowDown', 503), 'blob_unreadable', true],
    [sdkError('InternalError', 500), 'blob_unreadable', true],
    [sdkError('PreconditionFailed', 412), 'blob_unreadable', true],
    [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'blob_unreadable', true],
  ])('%s → %s (retriable %s)', (error, code, retriable) => {
    const mapped = s3Error(error, 's3://b/k');
    expect(mapped.code).toBe(code);
    expect(mapped.retriable).toBe(retriable);
    expect(mapped.message).toContain('s3://b/k');
  });
});

describe('s3:// bucket allowlist', () => {
  it('refuses unlisted buckets, and every bucket when the list is empty, before any request', async () => {
    let calls = 0;
    const client = {
      send: async () => {
        calls++;
        throw sdkError('NotFound', 404);
      },
      destroy: () => undefined,
    } as unknown as S3Client;
    const listed = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: client });
    const closed = createBlobSource(policy({ s3Buckets: [] }), { s3Client: client });
    try {
      expect((await blobError(listed.resolve({ url: 's3://other-bucket/k.pdf' }))).code).toBe(
        'blob_not_allowed',
      );
      expect(calls).toBe(0);
      expect((await blobError(listed.resolve({ url: 's3://docs-in/k.pdf' }))).code).toBe('blob_not_found');
      const refused = await blobError(closed.resolve({ url: 's3://any-bucket/k.pdf' }));
      expect(refused.code).toBe('blob_not_allowed');
      expect(refused.message).toMatch(/blobs\.s3Buckets/);
      expect(calls).toBe(1);
    } finally {
      listed.close();
      closed.close();
    }
  });
});

describe('s3:// transfer bounds', () => {
  /** A client whose HEAD answers with no length (so the body is copied) and whose body trickles. */
  function trickling(): { client: S3Client } {
    const client = {
      send: async (command: { constructor: { name: string } }) => {
        if (command.constructor.name === 'HeadObjectCommand') return { ETag: '"e"' };
        const body = new PassThrough();
        const timer = setInterval(() => body.write('%'), 20);
        body.once('close', () => clearInterval(timer));
        return { Body: body };
      },
      destroy: () => undefined,
    } as unknown as S3Client;
    return { client };
  }

  it('ends a body that trickles past blobs.transferTimeoutMs in blob_timeout', async () => {
    const { client } = trickling();
    const source = createBlobSource(
      policy({ s3Buckets: ['docs-in'], transferTimeoutMs: 300, minBytesPerSecond: 0 }),
      { s3Client: client },
    );
    try {
      const error = await blobError(source.resolve({ url: 's3://docs-in/slow.pdf' }));
      expect([error.code, error.message]).toEqual([
        'blob_timeout',
        's3://docs-in/slow.pdf was not transferred within 300 ms (blobs.transferTimeoutMs)',
      ]);
    } finally {
      source.close();
    }
  });

  it('ends a body slower than blobs.minBytesPerSecond in blob_too_slow', async () => {
    const { client } = trickling();
    const source = createBlobSource(
      {
        ...policy({ s3Buckets: ['docs-in'], transferTimeoutMs: 0, minBytesPerSecond: 1000 }),
        rateWindowMs: 100,
      } as BlobPolicy,
      { s3Client: client },
    );
    try {
      expect((await blobError(source.resolve({ url: 's3://docs-in/slow.pdf' }))).code).toBe('blob_too_slow');
    } finally {
      source.close();
    }
  });
});
