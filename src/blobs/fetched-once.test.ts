/**
 * Each http(s) blob is fetched once, over kept-alive pooled connections, and its upload (a retried
 * one included) is served from what was fetched: a real loopback blob server counts GETs and
 * accepted connections, a real upload endpoint answers 503 once.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DocumentAnalysisClient } from '../client/client.js';
import { apiPort } from '../connector/document/api-port.js';
import { createBlobSource, type BlobSource } from './index.js';
import { SPOOL_PREFIX } from './spool.js';
import { CountingBlobServer, policy, readAll } from './test-helpers.js';

const small = randomBytes(20 * 1024);
const large = randomBytes(300 * 1024);
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let server: CountingBlobServer;
let source: BlobSource;
const urls: Record<string, string> = {};

/** Files in this process's spool directories (other processes' are not readable as ours). */
function spooled(): string[] {
  const files: string[] = [];
  for (const d of fs.readdirSync(os.tmpdir())) {
    if (!d.startsWith(SPOOL_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), d);
    try {
      for (const f of fs.readdirSync(dir)) {
        const file = path.join(dir, f);
        if (fs.readFileSync(file).equals(large)) files.push(file);
      }
    } catch {
      // Another process's directory.
    }
  }
  return files;
}

beforeAll(async () => {
  server = await new CountingBlobServer().start();
  urls.small = server.put('/small.pdf', small);
  urls.smallChunked = server.put('/small-chunked.pdf', small, true);
  urls.large = server.put('/large.pdf', large);
  urls.largeChunked = server.put('/large-chunked.pdf', large, true);
  // 64 KiB in memory: `large` is spooled, `small` is kept in memory.
  source = createBlobSource(
    policy({ httpHosts: [server.host], allowPrivateNetworks: true, inMemoryBytes: 64 * 1024 }),
    { connectionsPerHost: 4 },
  );
});

afterAll(async () => {
  source.close();
  await server.stop();
});

describe('http(s) blobs fetched once', () => {
  it.each([
    ['small, with Content-Length', 'small', small, true],
    ['small, chunked', 'smallChunked', small, true],
    ['large (spooled), with Content-Length', 'large', large, false],
    ['large (spooled), chunked', 'largeChunked', large, false],
  ])('%s: one GET, every open() reads what was fetched', async (_name, key, bytes, inMemory) => {
    for (const withSha of [false, true]) {
      const gets = server.gets;
      const blob = await source.resolve({
        url: urls[key] as string,
        ...(withSha ? { sha256: sha(bytes) } : {}),
      });
      expect(blob.size).toBe(bytes.length);
      // Spooling hashes as it writes; a blob in memory is hashed only to be verified.
      expect(blob.sha256).toBe(withSha || !inMemory ? sha(bytes) : undefined);
      expect(blob.bytes !== undefined).toBe(inMemory);
      expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
      expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
      expect(server.gets - gets).toBe(1);
      await blob.cleanup();
    }
    expect(spooled()).toEqual([]);
  });

  it('reuses its connections: 200 blobs, 25 at a time, over at most connectionsPerHost (4) connections', async () => {
    const connections = server.connections;
    const gets = server.gets;
    for (let round = 0; round < 8; round++) {
      const blobs = await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          source.resolve({ url: i % 5 === 0 ? urls.large! : urls.small! }),
        ),
      );
      await Promise.all(blobs.map((b) => b.cleanup()));
    }
    expect(server.gets - gets).toBe(200);
    expect(server.connections - connections).toBeLessThanOrEqual(4);
    expect(spooled()).toEqual([]);
  });

  it('a retried upload (503 once) sends the fetched bytes again without a second GET', async () => {
    const puts: { path: string; body: Buffer }[] = [];
    const failed = new Set<string>();
    const uploads = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const p = req.url ?? '/';
        puts.push({ path: p, body: Buffer.concat(chunks) });
        if (!failed.has(p)) {
          failed.add(p);
          res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"busy"}');
          return;
        }
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => uploads.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(uploads.address() as AddressInfo).port}`;
    const client = new DocumentAnalysisClient({
      baseUrl: base,
      clientId: 'c',
      clientSecret: 's',
      retry: { minDelayMs: 10, maxDelayMs: 20, maxTotalMs: 5000 },
      timeoutMs: 5000,
    });
    const port = apiPort(client, { withMetadata: false });
    try {
      for (const [key, bytes] of [
        ['small', small],
        ['largeChunked', large],
      ] as const) {
        const gets = server.gets;
        const blob = await source.resolve({ url: urls[key]! });
        await port.upload(`${base}/upload/${key}`, blob, `sub-${key}`);
        await blob.cleanup();
        expect(server.gets - gets).toBe(1);
        const sent = puts.filter((p) => p.path === `/upload/${key}`);
        expect(sent.length).toBe(2);
        for (const p of sent) expect(p.body.equals(bytes)).toBe(true);
      }
    } finally {
      uploads.closeAllConnections();
      await new Promise<void>((resolve) => uploads.close(() => resolve()));
    }
    expect(spooled()).toEqual([]);
  });
});
