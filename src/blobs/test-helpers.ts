/**
 * Test helpers of blob access (left out of dist): a policy, reading a stream whole, the BlobError of
 * a promise, and a loopback blob server that counts GETs and accepted connections (tests and
 * `npm run bench -- --mode blobs` use it to show that each blob is fetched once over kept-alive
 * connections), and that can check each request's SigV4 signature as S3 would.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** Credentials of the S3 clients of unit tests, checked by `CountingBlobServer.secretAccessKey`. */
export const TEST_S3_CREDENTIALS = {
  accessKeyId: 'AKUNIT',
  secretAccessKey: 'unit-secret-key',
  sessionToken: 'unit-session-token',
};

/** An S3Client for `endpoint` (path style), whose configuration an s3 source signs with. */
export function s3TestClient(
  endpoint: string,
  secretAccessKey = TEST_S3_CREDENTIALS.secretAccessKey,
): S3Client {
  return new S3Client({
    region: 'eu-west-1',
    endpoint,
    forcePathStyle: true,
    credentials: { ...TEST_S3_CREDENTIALS, secretAccessKey },
  });
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

/**
 * Whether `headers` carry a valid AWS SigV4 signature of a request with no query, made with
 * `secretAccessKey`: computed here with node:crypto alone, independently of the signer under test.
 */
export function sigV4Valid(
  method: string,
  path: string,
  headers: http.IncomingHttpHeaders,
  secretAccessKey: string,
): boolean {
  const auth =
    /^AWS4-HMAC-SHA256 Credential=[^/]+\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
      String(headers.authorization ?? ''),
    );
  const amzDate = headers['x-amz-date'];
  const payload = headers['x-amz-content-sha256'];
  if (!auth || typeof amzDate !== 'string' || typeof payload !== 'string') return false;
  const [, day, region, service, signedHeaders, signature] = auth as unknown as string[];
  const names = (signedHeaders as string).split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return false;
  const canonicalHeaders = names.map((n) => `${n}:${String(headers[n] ?? '').trim()}\n`).join('');
  const canonical = [method, path, '', canonicalHeaders, signedHeaders, payload].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')];
  let key: Buffer = Buffer.from(`AWS4${secretAccessKey}`);
  for (const part of [day, region, service, 'aws4_request']) {
    key = createHmac('sha256', key)
      .update(part as string)
      .digest();
  }
  const expected = createHmac('sha256', key).update(toSign.join('\n')).digest();
  return timingSafeEqual(expected, Buffer.from(signature as string, 'hex'));
}

/** What a path of the server answers: a blob, or a body that never ends. */
type Served = { kind: 'blob'; bytes: Buffer; chunked: boolean } | { kind: 'trickle' };

/** A fixed answer served before what the path holds, a number of times. */
interface Reply {
  status: number;
  body: string;
  headers: http.OutgoingHttpHeaders;
  times: number;
}

/** Serves blobs on 127.0.0.1, counting GET requests and accepted connections. */
export class CountingBlobServer {
  gets = 0;
  connections = 0;
  private readonly server: http.Server;
  private readonly blobs = new Map<string, Served>();
  private readonly replies = new Map<string, Reply>();
  origin = '';

  requests = 0;
  /** The path and headers of the last request. */
  last: { path: string; headers: http.IncomingHttpHeaders } | undefined;
  /**
   * When set, a request without a valid SigV4 signature made with this secret is answered as S3
   * answers one (403, `SignatureDoesNotMatch`): the stack's S3 store checks no signature.
   */
  secretAccessKey: string | undefined;

  /**
   * `upstream`: an HTTP server (the stack's S3 store) that requests for paths not `put` here are
   * forwarded to, so the client's cost is counted in front of it. Its answers go back without
   * `Connection: close` (the stack's store closes every connection; the client should not have to).
   */
  constructor(private readonly upstream?: URL) {
    this.server = http.createServer((req, res) => {
      this.requests++;
      if (req.method === 'GET') this.gets++;
      this.last = { path: req.url ?? '/', headers: req.headers };
      if (
        this.secretAccessKey !== undefined &&
        !sigV4Valid(req.method ?? '', req.url ?? '/', req.headers, this.secretAccessKey)
      ) {
        res.writeHead(403, { 'content-type': 'application/xml' });
        res.end(s3ErrorXml('SignatureDoesNotMatch'));
        return;
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const reply = this.replies.get(path);
      if (reply) {
        if (--reply.times <= 0) this.replies.delete(path);
        res.writeHead(reply.status, { 'content-type': 'application/xml', ...reply.headers });
        res.end(reply.body);
        return;
      }
      const blob = this.blobs.get(path);
      if (!blob && this.upstream) {
        this.forward(this.upstream, req, res);
        return;
      }
      if (!blob) {
        res.writeHead(404).end();
        return;
      }
      if (blob.kind === 'trickle') {
        res.writeHead(200, { 'content-type': 'application/pdf' });
        const timer = setInterval(() => res.write('%'), 20);
        res.on('close', () => clearInterval(timer));
        return;
      }
      // Chunked when asked: an answer without Content-Length, whose size the client learns at its end.
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/pdf' };
      if (!blob.chunked) headers['content-length'] = blob.bytes.length;
      res.writeHead(200, headers);
      res.end(blob.bytes);
    });
    this.server.on('connection', () => this.connections++);
  }

  private forward(upstream: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        const headers = { ...answer.headers };
        delete headers.connection;
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  }

  /** Serves `bytes` at `path` (with Content-Length unless `chunked`); returns its URL. */
  put(path: string, bytes: Buffer, chunked = false): string {
    this.blobs.set(path, { kind: 'blob', bytes, chunked });
    return `${this.origin}${path}`;
  }

  /**
   * Answers `status` with `body` at `path` (an S3 error document, say), the next `times` requests;
   * then what the path holds (or the upstream) answers again.
   */
  reply(
    path: string,
    status: number,
    body: string,
    headers: http.OutgoingHttpHeaders = {},
    times = Number.POSITIVE_INFINITY,
  ): void {
    this.replies.set(path, { status, body, headers, times });
  }

  /** Serves a body at `path` that sends a byte every 20 ms and never ends. */
  trickle(path: string): void {
    this.blobs.set(path, { kind: 'trickle' });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  get host(): string {
    return new URL(this.origin).host;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** An S3 error document with `code`, as S3 answers a failed request. */
export function s3ErrorXml(code: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code}</Message><RequestId>r</RequestId></Error>`;
}
