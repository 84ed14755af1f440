import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { createBlobSource, type BlobSource } from './index.js';
import type { ResolvedAddress } from './http-source.js';
import { SPOOL_PREFIX } from './spool.js';
import { blobError, policy, readAll } from './test-helpers.js';

const content = Buffer.from('%PDF-1.7\n'.repeat(100));
const sha = createHash('sha256').update(content).digest('hex');

let server: http.Server;
let port: number;
let host: string;
const hits = new Map<string, number>();

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
  switch (url.pathname) {
    case '/doc.pdf':
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': content.length });
      res.end(content);
      return;
    case '/chunked':
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(content.subarray(0, 100));
      res.end(content.subarray(100));
      return;
    case '/big':
      res.writeHead(200, { 'content-length': 10_000_000 });
      res.end();
      return;
    case '/big-chunked': {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 1);
      let sent = 0;
      const pump = (): void => {
        while (sent < 100 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => (sent = 100));
      pump();
      return;
    }
    case '/trickle': {
      // Chunked, one byte every 20 ms: never idle long enough for the socket timeout.
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(timer));
      return;
    }
    case '/silent':
      // Never answers; the connection stays open.
      return;
    case '/missing':
      res.writeHead(404).end();
      return;
    case '/forbidden':
      res.writeHead(403).end();
      return;
    case '/boom':
      res.writeHead(503).end();
      return;
    case '/redirect-same':
      res.writeHead(302, { location: '/doc.pdf' }).end();
      return;
    case '/redirect-other':
      res.writeHead(302, { location: `http://127.0.0.2:${port}/doc.pdf` }).end();
      return;
    case '/redirect-loop':
      res.writeHead(302, { location: '/redirect-loop' }).end();
      return;
    case '/gzip': {
      const body = gzipSync(content);
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': body.length }).end(body);
      return;
    }
    case '/short':
      res.writeHead(200, { 'content-length': content.length });
      res.write(content.subarray(0, 10), () => res.destroy());
      return;
    default:
      res.writeHead(500).end();
  }
}

let source: BlobSource;
/** Spool directories of other processes, present before this file started: never looked at. */
const foreign = new Set<string>();
let ownSpool: string | null = null;

beforeAll(async () => {
  for (const d of fs.readdirSync(os.tmpdir())) if (d.startsWith(SPOOL_PREFIX)) foreign.add(d);
  server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  host = `127.0.0.1:${port}`;
  source = createBlobSource(policy({ httpHosts: [host], allowPrivateNetworks: true, maxBytes: 1024 * 1024 }));
});

afterAll(async () => {
  source.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const at = (p: string) => `http://${host}${p}`;

/** This source's spool directory: a new one holding a copy of this file's test content. */
function findOwnSpool(): string | null {
  for (const d of fs.readdirSync(os.tmpdir())) {
    if (!d.startsWith(SPOOL_PREFIX) || foreign.has(d)) continue;
    const dir = path.join(os.tmpdir(), d);
    try {
      if (fs.readdirSync(dir).some((f) => fs.readFileSync(path.join(dir, f)).equals(content))) return dir;
    } catch {
      // Another process's directory, removed meanwhile or not readable: not ours.
    }
  }
  return null;
}

/** The files in this source's spool (and nobody else's). */
function spoolFiles(): string[] {
  ownSpool ??= findOwnSpool();
  if (!ownSpool) return [];
  try {
    return fs.readdirSync(ownSpool).map((f) => path.join(ownSpool!, f));
  } catch {
    return [];
  }
}

describe('http(s):// blobs', () => {
  it('fetches from an allowed host once, with size and type from the response', async () => {
    const before = hits.get('/doc.pdf') ?? 0;
    const blob = await source.resolve({ url: at('/doc.pdf') });
    expect(blob.size).toBe(content.length);
    expect(blob.contentType).toBe('application/pdf');
    expect(blob.sha256).toBeUndefined();
    expect(await readAll(await blob.open())).toEqual(content);
    expect(await readAll(await blob.open())).toEqual(content);
    expect(hits.get('/doc.pdf')).toBe(before + 1);
    await blob.cleanup();
  });

  it('refuses the same loopback server when private networks are not allowed, without a request', async () => {
    const strict = createBlobSource(policy({ httpHosts: [host], allowPrivateNetworks: false }));
    const before = hits.get('/doc.pdf') ?? 0;
    try {
      const error = await blobError(strict.resolve({ url: at('/doc.pdf') }));
      expect(error.code).toBe('blob_not_allowed');
      expect(error.message).toContain('loopback');
      expect(hits.get('/doc.pdf') ?? 0).toBe(before);
    } finally {
      strict.close();
    }
  });

  it('refuses hosts that are not listed, including the same host on another port', async () => {
    const other = createBlobSource(policy({ httpHosts: ['127.0.0.1:1'], allowPrivateNetworks: true }));
    try {
      expect((await blobError(other.resolve({ url: at('/doc.pdf') }))).code).toBe('blob_not_allowed');
    } finally {
      other.close();
    }
    expect((await blobError(source.resolve({ url: 'http://example.com/doc.pdf' }))).code).toBe(
      'blob_not_allowed',
    );
  });

  it('maps 404 to not found, 403 to unreadable, 503 to a retriable error', async () => {
    const missing = await blobError(source.resolve({ url: at('/missing') }));
    expect([missing.code, missing.retriable]).toEqual(['blob_not_found', false]);
    const forbidden = await blobError(source.resolve({ url: at('/forbidden') }));
    expect([forbidden.code, forbidden.retriable]).toEqual(['blob_unreadable', false]);
    const boom = await blobError(source.resolve({ url: at('/boom') }));
    expect([boom.code, boom.retriable]).toEqual(['blob_unreadable', true]);
  });

  it('fails a trickling blob below the minimum rate, and a server that never answers, within the total bound', async () => {
    const bounded = createBlobSource(
      policy({ httpHosts: [host], allowPrivateNetworks: true, transferTimeoutMs: 600, minBytesPerSecond: 0 }),
    );
    try {
      const silent = await blobError(bounded.resolve({ url: `http://${host}/silent` }));
      expect([silent.code, silent.message]).toEqual([
        'blob_timeout',
        `http://${host}/silent was not transferred within 600 ms (blobs.transferTimeoutMs)`,
      ]);
      const trickle = await blobError(bounded.resolve({ url: `http://${host}/trickle` }));
      expect(trickle.code).toBe('blob_timeout');
    } finally {
      bounded.close();
    }
  });

  it('treats a refused connection as retriable', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dead = createBlobSource(
      policy({ httpHosts: [`127.0.0.1:${deadPort}`], allowPrivateNetworks: true }),
    );
    try {
      const error = await blobError(dead.resolve({ url: `http://127.0.0.1:${deadPort}/x` }));
      expect([error.code, error.retriable]).toEqual(['blob_unreadable', true]);
    } finally {
      dead.close();
    }
  });

  it('never puts the query string in a message', async () => {
    const error = await blobError(source.resolve({ url: at('/boom?X-Amz-Signature=SECRETSIG') }));
    expect(error.message).toContain('/boom');
    expect(error.message).not.toContain('SECRETSIG');
  });

  it('keeps a blob above blobs.inMemoryBytes in a private 0600 temp copy, verified, which open() then reads', async () => {
    const spooling = createBlobSource(
      policy({ httpHosts: [host], allowPrivateNetworks: true, inMemoryBytes: 100 }),
    );
    try {
      const blob = await spooling.resolve({ url: at('/doc.pdf'), sha256: sha });
      expect(blob.sha256).toBe(sha);
      expect(blob.size).toBe(content.length);
      expect(blob.bytes).toBeUndefined();
      const files = spoolFiles();
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const before = hits.get('/doc.pdf') ?? 0;
      expect(await readAll(await blob.open())).toEqual(content);
      expect(hits.get('/doc.pdf') ?? 0).toBe(before);
      const count = spoolFiles().length;
      await blob.cleanup();
      expect(spoolFiles().length).toBe(count - 1);
      const error = await blobError(spooling.resolve({ url: at('/doc.pdf'), sha256: 'b'.repeat(64) }));
      expect([error.code, error.retriable]).toEqual(['sha256_mismatch', false]);
      expect(spoolFiles().length).toBe(count - 1);
    } finally {
      spooling.close();
    }
  });

  it('verifies sha256 of a small blob in memory, without a temp copy', async () => {
    const blob = await source.resolve({ url: at('/doc.pdf'), sha256: sha });
    expect(blob.sha256).toBe(sha);
    expect(blob.bytes).toEqual(content);
    await blob.cleanup();
    expect(blob.bytes).toBeUndefined();
  });

  it('reports a sha256 mismatch and leaves no temp file behind', async () => {
    const count = spoolFiles().length;
    const error = await blobError(source.resolve({ url: at('/doc.pdf'), sha256: 'b'.repeat(64) }));
    expect([error.code, error.retriable]).toEqual(['sha256_mismatch', false]);
    expect(spoolFiles().length).toBe(count);
  });

  it('copies a body of unknown length so that its size is known', async () => {
    const blob = await source.resolve({ url: at('/chunked') });
    expect(blob.size).toBe(content.length);
    expect(await readAll(await blob.open())).toEqual(content);
    await blob.cleanup();
  });

  it('refuses a Content-Length over maxBytes, and counts bytes when there is none', async () => {
    expect((await blobError(source.resolve({ url: at('/big') }))).code).toBe('blob_too_large');
    const count = spoolFiles().length;
    expect((await blobError(source.resolve({ url: at('/big-chunked') }))).code).toBe('blob_too_large');
    expect(spoolFiles().length).toBe(count);
  });

  it('follows redirects on allowed hosts and refuses those leaving them', async () => {
    const blob = await source.resolve({ url: at('/redirect-same') });
    expect(await readAll(await blob.open())).toEqual(content);
    await blob.cleanup();
    expect((await blobError(source.resolve({ url: at('/redirect-other') }))).code).toBe('blob_not_allowed');
    expect((await blobError(source.resolve({ url: at('/redirect-loop') }))).code).toBe('blob_unreadable');
  });

  it('refuses content-encoded bodies, whose bytes are not the document', async () => {
    expect((await blobError(source.resolve({ url: at('/gzip') }))).code).toBe('blob_unreadable');
  });

  it('fails a body shorter than its Content-Length as retriable', async () => {
    const error = await blobError(source.resolve({ url: at('/short') }));
    expect([error.code, error.retriable]).toEqual(['blob_unreadable', true]);
  });
});

describe('http(s):// address checks with a controlled resolver', () => {
  const withResolver = (
    answer: ResolvedAddress[],
    allowPrivateNetworks: boolean,
    hosts = [`blobs.test:${port}`],
  ) =>
    createBlobSource(policy({ httpHosts: hosts, allowPrivateNetworks }), { resolveHost: async () => answer });

  it('connects to the checked address, not to what the system resolver would say', async () => {
    const pinned = withResolver([{ address: '127.0.0.1', family: 4 }], true);
    try {
      const blob = await pinned.resolve({ url: `http://blobs.test:${port}/doc.pdf` });
      expect(await readAll(await blob.open())).toEqual(content);
      await blob.cleanup();
    } finally {
      pinned.close();
    }
  });

  it('resolves names with the system resolver too (localhost)', async () => {
    const local = createBlobSource(policy({ httpHosts: [`localhost:${port}`], allowPrivateNetworks: true }));
    try {
      const blob = await local.resolve({ url: `http://localhost:${port}/doc.pdf` });
      expect(await readAll(await blob.open())).toEqual(content);
      await blob.cleanup();
    } finally {
      local.close();
    }
  });

  it('refuses names resolving to private addresses unless allowed', async () => {
    const strict = withResolver([{ address: '10.0.0.7', family: 4 }], false);
    try {
      const error = await blobError(strict.resolve({ url: `http://blobs.test:${port}/doc.pdf` }));
      expect(error.code).toBe('blob_not_allowed');
      expect(error.message).toContain('allowPrivateNetworks');
    } finally {
      strict.close();
    }
  });

  it('refuses a name with any metadata address in its answer, even with private networks allowed', async () => {
    const meta = withResolver(
      [
        { address: '8.8.8.8', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ],
      true,
    );
    try {
      const error = await blobError(meta.resolve({ url: `http://blobs.test:${port}/doc.pdf` }));
      expect(error.code).toBe('blob_not_allowed');
      expect(error.message).toContain('metadata');
    } finally {
      meta.close();
    }
  });

  it('checks an IP literal before every request: a refused one stays refused, an allowed one keeps working', async () => {
    const strict = createBlobSource(policy({ httpHosts: [host], allowPrivateNetworks: false }));
    try {
      for (let i = 0; i < 3; i++) {
        expect((await blobError(strict.resolve({ url: at('/doc.pdf') }))).code).toBe('blob_not_allowed');
      }
    } finally {
      strict.close();
    }
    for (let i = 0; i < 3; i++) {
      const blob = await source.resolve({ url: at('/doc.pdf') });
      expect(blob.bytes).toEqual(content);
      await blob.cleanup();
    }
  });

  it('refuses metadata and mapped-loopback literals even when listed', async () => {
    const listed = createBlobSource(
      policy({
        httpHosts: ['169.254.169.254', '[fd00:ec2::254]', '[::ffff:127.0.0.1]'],
        allowPrivateNetworks: true,
      }),
    );
    const strict = createBlobSource(
      policy({ httpHosts: ['[::ffff:127.0.0.1]'], allowPrivateNetworks: false }),
    );
    try {
      for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/']) {
        expect((await blobError(listed.resolve({ url }))).code).toBe('blob_not_allowed');
      }
      expect((await blobError(strict.resolve({ url: 'http://[::ffff:127.0.0.1]/x' }))).code).toBe(
        'blob_not_allowed',
      );
    } finally {
      listed.close();
      strict.close();
    }
  });
});
