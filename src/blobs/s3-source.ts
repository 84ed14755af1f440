/**
 * `s3://bucket/key` blobs: one SigV4-signed GET per blob (aws4) over the pooled keep-alive client of
 * remote blobs (`pool.ts`, at most `connectionsPerHost` connections), its size checked from the
 * answer's headers before the body is read, its bytes kept until the upload is done (`kept.ts`), so a
 * retried upload sends the object that was checked and never fetches it again.
 *
 * The AWS SDK's S3Client is kept for what it resolves once: the endpoint of each bucket (its own
 * rules: endpoint override, path or virtual-hosted style, partitions, FIPS and dual-stack settings)
 * and the default credential chain with its caching and refresh. Its send() is not used per blob:
 * its middleware stack costs more CPU per GetObject than the rest of a blob (docs/performance.md). What
 * its retry did is kept: a GET that fails as transient failure (5xx, throttling, a reset) is tried again, at most
 * the SDK's 3 attempts with its back-off base, within `blobs.transferTimeoutMs`. Buckets whose
 * endpoint wants another signature than SigV4 (S3 Express directory buckets) still go through
 * send().
 */
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getEndpointFromInstructions } from '@smithy/core/endpoints';
import { extendedEncodeURIComponent } from '@smithy/core/protocols';
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_RETRY_DELAY_BASE,
  MAXIMUM_RETRY_DELAY,
  isThrottlingError,
  isTransientError,
} from '@smithy/core/retry';
import aws4 from 'aws4';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import type { Agent, Dispatcher } from 'undici';
import type { Logger } from '../observability/logger.js';
import { retry } from '../util/retry.js';
import { optimisationOn } from '../util/optimisations.js';
import { BlobError } from './errors.js';
import type { Keeper } from './kept.js';
import { expectedSha256 } from './meter.js';
import { transferLimits, transferTimeout, type TransferLimits } from './pace.js';
import type { BlobPolicy } from './policy.js';
import { DEFAULT_CONNECTIONS_PER_HOST, header, parseLength, pooledAgent, RequestDeadline } from './pool.js';
import type { BlobRef, OpenedBlob } from './types.js';

const NOT_FOUND_NAMES = new Set(['NoSuchKey', 'NotFound', 'NoSuchBucket']);
/** S3's answers to a request signed with a clock too far off: the next one is signed on S3's time. */
const CLOCK_SKEW_NAMES = new Set(['RequestTimeTooSkewed', 'RequestExpired', 'RequestInTheFuture']);
/** The SDK's own bound before it corrects its clock from an answer's Date header. */
const CLOCK_SKEW_MS = 5 * 60_000;
/** Of an error answer, only this much is read for its `<Code>`. */
const ERROR_BODY_BYTES = 16 * 1024;
/** Bound on the wait for an answer's headers, and between two reads of its body (as the SDK had). */
const REQUEST_TIMEOUT_MS = 60_000;
/** GET has no payload; S3 is told not to expect its hash. */
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

interface SdkErrorShape {
  name?: string;
  code?: unknown;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

type Classified = Parameters<typeof isTransientError>[0];

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
  const transient =
    CLOCK_SKEW_NAMES.has(name) ||
    isThrottlingError(e as Classified) ||
    (status !== 403 && isTransientError(e as Classified));
  if (!transient && (status === 403 || name === 'AccessDenied')) {
    return new BlobError(
      'blob_unreadable',
      `${display} is not readable with these credentials (${name === 'Error' ? 'AccessDenied' : name})`,
    );
  }
  if (
    !transient &&
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

/** What a GET answered with, whichever way it was sent. */
interface Answer {
  body: Readable;
  length: number | undefined;
  contentType: string | undefined;
}

/** Where a bucket's objects are fetched from: signed here, or (another signature) by the SDK. */
type Route = SignedRoute | { kind: 'sdk' };

interface SignedRoute {
  kind: 'signed';
  origin: string;
  /** The endpoint's host (with its port, when not the default): the signed Host header. */
  host: string;
  basePath: string;
  region: string;
  service: string;
  /** The SDK's credential chain (cached, refreshed), asked once per request as its signer did. */
  credentials: S3Client['config']['credentials'];
}

/** The signature's time format of SigV4 (X-Amz-Date): 20261127T023000Z. */
function amzDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[:-]|\.\d{3}/g, '');
}

/**
 * The key as the SDK puts it in a path (each segment encoded, `/` kept). A key that cannot be
 * encoded (a lone surrogate) is the event's fault.
 */
function encodeKey(key: string, display: string): string {
  try {
    return key.split('/').map(extendedEncodeURIComponent).join('/');
  } catch {
    throw new BlobError('blob_invalid_url', `${display}: the key is not valid Unicode`);
  }
}

/** The `<Code>` of an S3 error document (a word: nothing else of the answer reaches a message). */
async function errorCode(body: Dispatcher.ResponseData['body']): Promise<string | undefined> {
  let text = '';
  try {
    for await (const chunk of body) {
      text += (chunk as Buffer).toString('utf8');
      if (text.length >= ERROR_BODY_BYTES) break;
    }
  } catch {
    return undefined;
  }
  return /<Code>([\w.-]{1,64})<\/Code>/.exec(text)?.[1];
}

export class S3BlobReader {
  private client: S3Client | undefined;
  private readonly ownsClient: boolean;
  private readonly limits: TransferLimits;
  private readonly agent: Agent;
  private readonly routes = new Map<string, Promise<Route>>();
  /** S3's clock minus ours, once an answer showed them more than CLOCK_SKEW_MS apart. */
  private clockOffsetMs = 0;

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
    this.agent = pooledAgent(connectionsPerHost);
  }

  /**
   * Sends one request, aborted when the transfer's total bound (from `startedAt`) runs out before
   * its answer's headers; from the first byte on, Pace bounds the transfer (time the reader holds
   * the body back is not the source's). An abort by that bound is `blob_timeout`, anything else
   * `s3Error`.
   */
  private async send<T>(
    display: string,
    startedAt: number,
    request: (deadline: RequestDeadline) => Promise<T>,
  ): Promise<T> {
    const total = this.limits.transferTimeoutMs;
    const deadline = new RequestDeadline(total > 0 ? total - (Date.now() - startedAt) : Infinity);
    try {
      return await request(deadline);
    } catch (error) {
      if (total > 0 && Date.now() - startedAt >= total) throw transferTimeout(display, this.limits);
      throw s3Error(error, display);
    } finally {
      deadline.clear();
    }
  }

  private s3(): S3Client {
    if (this.client) return this.client;
    // Only buckets that need the SDK's own signing send through it; its pool is sized as ours.
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
      // Its send() (S3 Express buckets only) is tried again by resolve(), not inside as well.
      maxAttempts: 1,
      requestHandler: {
        connectionTimeout: 10_000,
        requestTimeout: REQUEST_TIMEOUT_MS,
        httpAgent: new http.Agent(pool),
        httpsAgent: new https.Agent(pool),
      },
    });
    return this.client;
  }

  /** The bucket's route, resolved by the SDK's endpoint rules once (buckets are a short allowlist). */
  private route(bucket: string): Promise<Route> {
    let route = this.routes.get(bucket);
    if (route === undefined) {
      route = this.findRoute(bucket);
      this.routes.set(bucket, route);
      route.catch(() => this.routes.delete(bucket));
    }
    return route;
  }

  private async findRoute(bucket: string): Promise<Route> {
    const client = this.s3();
    const endpoint = await getEndpointFromInstructions({ Bucket: bucket }, GetObjectCommand, client.config);
    const schemes = endpoint.properties?.authSchemes as
      { name?: string; signingName?: string; signingRegion?: string }[] | undefined;
    const scheme = schemes?.[0];
    if (scheme !== undefined && scheme.name !== 'sigv4') return { kind: 'sdk' };
    if (!optimisationOn('s3-signed-get')) return { kind: 'sdk' };
    const url = new URL(endpoint.url.href);
    return {
      kind: 'signed',
      origin: url.origin,
      host: url.host,
      basePath: url.pathname.replace(/\/$/, ''),
      region: scheme?.signingRegion ?? this.policy.s3Region,
      service: scheme?.signingName ?? 's3',
      credentials: client.config.credentials,
    };
  }

  /** One signed GET; resolves once a 200's headers arrived, else rejects as the SDK's error would. */
  private async signedGet(
    route: SignedRoute,
    /** Encoded (`encodeKey`). */
    key: string,
    deadline: RequestDeadline,
  ): Promise<Answer> {
    const credentials = await route.credentials();
    // aws4, not @smithy/signature-v4: the cheaper of the two per signature (docs/performance.md).
    // S3 takes the path as sent: the key is encoded once, as the SDK encodes it, and aws4 signs
    // an s3 path segment by segment in that same encoding.
    const signed = aws4.sign(
      {
        host: route.host,
        path: `${route.basePath}/${key}`,
        method: 'GET',
        service: route.service,
        region: route.region,
        headers: {
          'X-Amz-Content-Sha256': UNSIGNED_PAYLOAD,
          'X-Amz-Date': amzDate(Date.now() + this.clockOffsetMs),
        },
      },
      credentials,
    );
    const path = signed.path as string;
    const response = await this.agent.request({
      origin: route.origin,
      path,
      method: 'GET',
      headers: signed.headers as Record<string, string>,
      signal: deadline,
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    const { statusCode: status, headers, body } = response;
    if (status === 200) {
      return {
        body: body as Readable,
        length: parseLength(headers['content-length']),
        contentType: header(headers, 'content-type'),
      };
    }
    const serverTime = Date.parse(header(headers, 'date') ?? '');
    if (Number.isFinite(serverTime) && Math.abs(serverTime - Date.now()) > CLOCK_SKEW_MS) {
      this.clockOffsetMs = serverTime - Date.now();
    }
    const name = (await errorCode(body)) ?? 'UnknownError';
    throw Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
  }

  private async sdkGet(
    bucket: string,
    key: string,
    display: string,
    abortSignal: AbortSignal | undefined,
  ): Promise<Answer> {
    const out = await this.s3().send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal });
    if (!(out.Body instanceof Readable)) {
      throw new BlobError('blob_unreadable', `${display} returned no readable body`, { retriable: true });
    }
    return { body: out.Body, length: out.ContentLength, contentType: out.ContentType };
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
    const encoded = encodeKey(key, display);
    const total = this.limits.transferTimeoutMs;
    const answer = await retry(
      () =>
        this.send(display, startedAt, async (deadline) => {
          const route = await this.route(bucket);
          return route.kind === 'signed'
            ? this.signedGet(route, encoded, deadline)
            : this.sdkGet(bucket, key, display, deadline.link(new AbortController()));
        }),
      {
        attempts: DEFAULT_MAX_ATTEMPTS,
        backoff: { initialMs: DEFAULT_RETRY_DELAY_BASE, maxMs: MAXIMUM_RETRY_DELAY },
        ...(total > 0 ? { budgetMs: total } : {}),
        classify: (error) =>
          error instanceof BlobError && error.retriable ? { retry: true } : { retry: false },
        onRetry: (error, tries, delayMs) =>
          this.logger.debug(
            { blob: display, tries, delayMs, err: (error as Error).message },
            's3 GET retried',
          ),
      },
    );
    const { body, length: size, contentType } = answer;
    if (size !== undefined && size > maxBytes) {
      // Not worth reading to keep its connection: the connection goes.
      body.on('error', () => undefined).destroy();
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
      contentType: ref.content_type ?? contentType,
      expected,
      limits: this.limits,
      startedAt,
      mapError: (error) => s3Error(error, display),
    });
  }

  close(): void {
    void this.agent.destroy().catch(() => undefined);
    if (this.ownsClient) this.client?.destroy();
    this.client = undefined;
    this.routes.clear();
  }
}
