/**
 * `s3://bucket/key` blobs through the AWS SDK (credentials from its default chain): one GetObject
 * per blob, its size checked from the answer's headers before the body is read, its bytes kept until
 * the upload is done (`kept.ts`), so a retried upload sends the object that was checked and never
 * fetches it again. Connections are pooled and kept alive, at most `connectionsPerHost` of them.
 */
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import type { Logger } from '../observability/logger.js';
import { BlobError } from './errors.js';
import { DEFAULT_CONNECTIONS_PER_HOST } from './http-source.js';
import type { Keeper } from './kept.js';
import { expectedSha256 } from './meter.js';
import { Pace, transferLimits, transferTimeout, type TransferLimits } from './pace.js';
import type { BlobPolicy } from './policy.js';
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
    private readonly keeper: Keeper,
    private readonly logger: Logger,
    client?: S3Client,
    private readonly connectionsPerHost = DEFAULT_CONNECTIONS_PER_HOST,
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
    if (this.client) return this.client;
    // Idle connections are kept up to the pool size (Node's default agent keeps 256 and closes
    // the rest after a burst) and closed after 4 s, below the 5 s idle timeout of common servers.
    const pool = {
      keepAlive: true,
      maxSockets: this.connectionsPerHost,
      maxFreeSockets: this.connectionsPerHost,
      scheduling: 'lifo' as const,
      timeout: 4_000,
    };
    this.client = new S3Client({
      region: this.policy.s3Region,
      endpoint: this.policy.s3Endpoint === '' ? undefined : this.policy.s3Endpoint,
      forcePathStyle: this.policy.s3ForcePathStyle,
      requestHandler: {
        connectionTimeout: 10_000,
        requestTimeout: 60_000,
        httpAgent: new http.Agent(pool),
        httpsAgent: new https.Agent(pool),
      },
    });
    return this.client;
  }

  /** Fetches the object once, checks its size, and keeps its bytes for the upload (`kept.ts`). */
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
    const expected = this.policy.verifySha256 && ref.sha256 ? expectedSha256(ref.sha256) : undefined;
    const startedAt = Date.now();
    const out = await this.send(display, startedAt, (abortSignal) =>
      this.s3().send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }),
    );
    const body = out.Body;
    if (!(body instanceof Readable)) {
      throw new BlobError('blob_unreadable', `${display} returned no readable body`, { retriable: true });
    }
    const size = out.ContentLength;
    if (size !== undefined && size > maxBytes) {
      body.destroy();
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
    return this.keeper.keep(body, {
      display,
      length: size,
      contentType: ref.content_type ?? out.ContentType ?? undefined,
      expected,
      pace: new Pace(this.limits, display, startedAt),
      mapError: (error) => s3Error(error, display),
    });
  }

  close(): void {
    if (this.ownsClient) this.client?.destroy();
    this.client = undefined;
  }
}
