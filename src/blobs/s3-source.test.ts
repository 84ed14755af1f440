import type { S3Client } from '@aws-sdk/client-s3';
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
