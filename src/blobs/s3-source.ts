/**
 * `s3://bucket/key` blobs through the AWS SDK (credentials from its default chain). Reads are
 * pinned to the ETag seen by HeadObject, so retried uploads send the object that was checked.
 */
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import type { Logger } from '../observability/logger.js';
import { BlobError } from './errors.js';
import { guard } from './guard.js';
import { expectedSha256, Meter } from './meter.js';
import { Pace, transferLimits, transferTimeout, type TransferLimits } from './pace.js';
import type { BlobPolicy } from './policy.js';
import { verifiedSpooledBlob, type Spool } from './spool.js';
import type { BlobRef, OpenedBlob } from './types.js';

const NOT_FOUND_NAMES = new Set(['NoSuchKey', 'NotFound', 'NoSuchBucket']);

interface SdkErrorShape {
  name?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

export function s3Error(error: unknown, display: string): BlobError {
  if (error instanceof BlobError) return error;
  const e = (error ?? {}) as SdkErrorShape;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  if (NOT_FOUND_NAMES.has(name) || status === 404) {
    return new BlobError('blob_not_found', `${display} does not exist (${name})`);
  }
  if (name === 'PreconditionFailed' || status === 412) {
    return new BlobError('blob_unreadable', `${display} changed after it was checked`, { retriable: true });
  }
  if (status === 403 || name === 'AccessDenied') {
    return new BlobError(
      'blob_unreadable',
      `${display} is not readable with these credentials (AccessDenied)`,
    );
  }
  if (
    status !== undefined &&
    status >= 400 &&
    status < 500 &&
    status !== 408 &&
    status !== 429 &&
    !e.$retryable
  ) {
    return new BlobError('blob_unreadable', `${display} could not be read (${name}, HTTP ${status})`);
  }
  // 5xx, throttling, timeouts, resets, and credentials that could not be fetched right now.
  const detail = status === undefined ? name : `${name}, HTTP ${status}`;
  return new BlobError('blob_unreadable', `${display} could not be read (${detail})`, { retriable: true });
}

export class S3BlobReader {
  private client: S3Client | undefined;
  private readonly ownsClient: boolean;
  private readonly limits: TransferLimits;

  constructor(
    private readonly policy: BlobPolicy,
    private readonly spool: Spool,
    private readonly logger: Logger,
    client?: S3Client,
  ) {
    this.client = client;
    this.ownsClient = client === undefined;
    this.limits = transferLimits(policy);
  }

  /**
   * Sends one request, aborted when the transfer's total bound (from `startedAt`) runs out first;
   * an abort by that bound is `blob_timeout`, anything else `s3Error`.
   */
  private async send<T>(
    display: string,
    startedAt: number,
    request: (abortSignal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    const total = this.limits.transferTimeoutMs;
    const left = total - (Date.now() - startedAt);
    try {
      return await request(total > 0 ? AbortSignal.timeout(Math.max(1, left)) : undefined);
    } catch (error) {
      if (total > 0 && Date.now() - startedAt >= total) throw transferTimeout(display, this.limits);
      throw s3Error(error, display);
    }
  }

  private s3(): S3Client {
    this.client ??= new S3Client({
      region: this.policy.s3Region,
      endpoint: this.policy.s3Endpoint === '' ? undefined : this.policy.s3Endpoint,
      forcePathStyle: this.policy.s3ForcePathStyle,
      requestHandler: { connectionTimeout: 10_000, requestTimeout: 60_000 },
    });
    return this.client;
  }

  private async body(
    bucket: string,
    key: string,
    etag: string | undefined,
    display: string,
    startedAt: number,
  ): Promise<Readable> {
    const out = await this.send(display, startedAt, (abortSignal) =>
      this.s3().send(new GetObjectCommand({ Bucket: bucket, Key: key, IfMatch: etag }), { abortSignal }),
    );
    if (!(out.Body instanceof Readable)) {
      throw new BlobError('blob_unreadable', `${display} returned no readable body`, { retriable: true });
    }
    return out.Body;
  }

  async resolve(bucket: string, key: string, display: string, ref: BlobRef): Promise<OpenedBlob> {
    const { s3Buckets, maxBytes } = this.policy;
    if (s3Buckets.length === 0) {
      throw new BlobError(
        'blob_not_allowed',
        `${display}: s3:// blobs are not allowed; list the buckets docstream may read in blobs.s3Buckets`,
      );
    }
    if (!s3Buckets.includes(bucket)) {
      throw new BlobError('blob_not_allowed', `bucket ${bucket} of ${display} is not in blobs.s3Buckets`);
    }
    const startedAt = Date.now();
    const head = await this.send(display, startedAt, (abortSignal) =>
      this.s3().send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }),
    );
    const size = head.ContentLength;
    if (size !== undefined && size > maxBytes) {
      throw new BlobError(
        'blob_too_large',
        `${display} has ${size} bytes, more than blobs.maxBytes (${maxBytes})`,
      );
    }
    if (ref.size_bytes != null && size !== undefined && ref.size_bytes !== size) {
      this.logger.warn(
        { blob: display, sizeHint: ref.size_bytes, size },
        'blob.size_bytes differs from the object size',
      );
    }
    const etag = head.ETag;
    const contentType = ref.content_type ?? head.ContentType ?? undefined;
    const expected = this.policy.verifySha256 && ref.sha256 ? expectedSha256(ref.sha256) : undefined;

    if (expected !== undefined || size === undefined) {
      const source = await this.body(bucket, key, etag, display, startedAt);
      const pace = new Pace(this.limits, display, startedAt);
      const file = await this.spool.write(source, maxBytes, display, pace).catch((error: unknown) => {
        throw s3Error(error, display);
      });
      return verifiedSpooledBlob(file, contentType, expected, display);
    }

    let closed = false;
    return {
      size,
      contentType,
      sha256: undefined,
      open: async () => {
        if (closed) throw new BlobError('blob_unreadable', `${display} was already cleaned up`);
        const openedAt = Date.now();
        const source = await this.body(bucket, key, etag, display, openedAt);
        const changed = () =>
          new BlobError('blob_unreadable', `${display} did not deliver exactly ${size} bytes`, {
            retriable: true,
          });
        const meter = new Meter({ maxBytes, exactBytes: size, tooMany: changed, tooFew: changed });
        const mapError = (error: unknown) => s3Error(error, display);
        return guard(guard(source, new Pace(this.limits, display, openedAt), mapError), meter, mapError);
      },
      cleanup: async () => {
        closed = true;
      },
    };
  }

  close(): void {
    if (this.ownsClient) this.client?.destroy();
    this.client = undefined;
  }
}
