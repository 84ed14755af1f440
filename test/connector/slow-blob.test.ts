/**
 * Slow blobs on the real stack (issue 29): an http blob served chunked at one byte a second and a
 * server that never answers must not stop intake. Their admissions go on in the background until
 * the transfer bounds end them in dead letters (`blob_too_slow`, `blob_timeout`), while the other
 * documents of the same partition and of the others finish meanwhile; and SIGTERM during such an
 * admission stops `docstream run` within `connector.shutdownTimeoutMs`.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, waitFor } from '../harness/e2e.js';

/** A blob server on loopback: `/trickle` (1 byte/s, never ends), `/silent` (never answers), `/ok.pdf`. */
async function blobServer(pdf: Buffer) {
  const open = new Set<string>();
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.push(path);
    if (path === '/ok.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': pdf.length });
      res.end(pdf);
      return;
    }
    open.add(path);
    res.on('close', () => open.delete(path));
    if (path.startsWith('/trickle')) {
      res.writeHead(200, { 'content-type': 'application/pdf' });
      const timer = setInterval(() => res.write('%'), 1000);
      res.on('close', () => clearInterval(timer));
    }
    // Anything else (`/silent...`): no answer at all.
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    /** Paths whose response is still open (a transfer under way). */
    open,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const event = (id: string, url: string) => ({
  event_id: id,
  query_id: id,
  blob: { url },
  pipeline_configuration: 'FRAUD_ONLY',
});

/** A test environment and a blob server, started before the tests of a `describe` and stopped after. */
function setUp(partitions: number) {
  const env = new E2E(partitions);
  const ctx = { env, server: null as unknown as Awaited<ReturnType<typeof blobServer>> };
  beforeAll(async () => {
    await env.start();
    ctx.server = await blobServer(await sampleBytes('clean-pdf'));
  });
  afterAll(async () => {
    await env.stop();
    await ctx.server.close();
  });
  return ctx;
}

describe('a slow blob', () => {
  const ctx = setUp(3);

  it('ends in a dead letter while the documents of its partition and of the others finish', async () => {
    const { env, server } = ctx;
    const blobs = {
      httpHosts: ['127.0.0.1'],
      allowPrivateNetworks: true,
      // A trickle fails its first 10 s rate window; a silent server its total bound.
      transferTimeoutMs: 15_000,
      minBytesPerSecond: 64,
    };
    await env.collect();
    // A batch moves on after 1 s (5 s by default): what this test looks at is the background.
    await env.startConnector({ blobs, connector: { admissionWaitMs: 1000 } });
    const slow = [
      event('evt-trickle', `${server.base}/trickle`),
      event('evt-silent', `${server.base}/silent`),
    ];
    // Behind them on their own partition (same key), and on the others.
    const samePartition = Array.from({ length: 4 }, (_, i) =>
      event(`evt-same-${i}`, `${server.base}/ok.pdf`),
    );
    const others = Array.from({ length: 8 }, (_, i) => event(`evt-other-${i}`, `${server.base}/ok.pdf`));
    await env.produce([...slow, ...samePartition], () => 'slow-key');
    await env.produce(others, (i) => `other-${i}`);
    const normal = [...samePartition, ...others].map((e) => e.event_id);

    await waitFor(
      'a fraud result for every ordinary document',
      () => normal.every((id) => env.forEvent(id).some((o) => env.kindOf(o) === 'fraud')),
      60_000,
    );
    // Finished while both slow transfers were still under way, with no dead letter yet.
    expect([...server.open].sort()).toEqual(['/silent', '/trickle']);
    expect(env.on('dlq')).toEqual([]);

    await waitFor('a dead letter for each slow blob', () => env.on('dlq').length >= 2, 60_000);
    const deadLetters = env
      .on('dlq')
      .map((l) => [l.headers.event_id, l.value.stage, l.value.error_code])
      .sort();
    expect(deadLetters).toEqual([
      ['evt-silent', 'blob', 'blob_timeout'],
      ['evt-trickle', 'blob', 'blob_too_slow'],
    ]);
    expect(server.open.size).toBe(0);
    // No ordinary document was dead-lettered, and each was submitted once.
    const counts = await Promise.all(normal.map(async (id) => (await env.submissions(id)).length));
    expect(counts).toEqual(normal.map(() => 1));
  });
});

describe('SIGTERM while a blob never arrives', () => {
  const ctx = setUp(1);

  it('stops `docstream run` within connector.shutdownTimeoutMs, exit 0', async () => {
    const { env, server } = ctx;
    const shutdownTimeoutMs = 5000;
    const child = env.spawnConnector({
      blobs: { httpHosts: ['127.0.0.1'], allowPrivateNetworks: true, transferTimeoutMs: 120_000 },
      connector: { shutdownTimeoutMs },
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await env.produce([event('evt-stuck', `${server.base}/silent-stop`)]);
    await waitFor('the admission to ask for its blob', () => server.seen.includes('/silent-stop'), 60_000);
    const signalled = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    const took = Date.now() - signalled;
    expect(code).toBe(0);
    // The bound the stop promises (the admission would have held it for two minutes).
    expect(took).toBeLessThan(shutdownTimeoutMs + 1000);
  });
});
