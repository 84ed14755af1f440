import type { Readable } from 'node:stream';
import { BlobError } from './errors.js';
import type { BlobPolicy } from './policy.js';

export function policy(overrides: Partial<BlobPolicy> = {}): BlobPolicy {
  return {
    fileRoots: [],
    httpHosts: [],
    allowPrivateNetworks: false,
    s3Buckets: [],
    s3Endpoint: '',
    s3Region: 'us-east-1',
    s3ForcePathStyle: true,
    verifySha256: true,
    maxBytes: 1024 * 1024,
    ...overrides,
  };
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The BlobError a promise rejects with; fails the test when it resolves or rejects otherwise. */
export async function blobError(promise: Promise<unknown>): Promise<BlobError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof BlobError) return error;
    throw error;
  }
  throw new Error('expected a BlobError, but the promise resolved');
}
