/**
 * Test helpers of blob access (left out of dist): a policy, reading a stream whole, the BlobError of
 * a promise, and a loopback blob server that counts GETs and accepted connections (tests and
 * `npm run bench -- --mode blobs` use it to show that each blob is fetched once over kept-alive
 * connections).
 */
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

/** Serves blobs on 127.0.0.1, counting GET requests and accepted connections. */
export class CountingBlobServer {
  gets = 0;
  connections = 0;
  private readonly server: http.Server;
  private readonly blobs = new Map<string, { bytes: Buffer; chunked: boolean }>();
  origin = '';

  requests = 0;

  /**
   * `upstream`: an HTTP server (the stack's S3 store) that requests for paths not `put` here are
   * forwarded to, so the client's cost is counted in front of it. Its answers go back without
   * `Connection: close` (the stack's store closes every connection; the client should not have to).
   */
  constructor(private readonly upstream?: URL) {
    this.server = http.createServer((req, res) => {
      this.requests++;
      if (req.method === 'GET') this.gets++;
      const blob = this.blobs.get((req.url ?? '/').split('?')[0] ?? '/');
      if (!blob && this.upstream) {
        this.forward(this.upstream, req, res);
        return;
      }
      if (!blob) {
        res.writeHead(404).end();
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
    this.blobs.set(path, { bytes, chunked });
    return `${this.origin}${path}`;
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
