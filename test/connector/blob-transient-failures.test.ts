/**
 * A blob server's transient failure is not a document's failure, on the real stack: an http blob answered 503
 * twice, then served, is submitted once and finishes with no dead letter (the record is tried again);
 * one answered 503 for ever ends by the document's deadline as `blob/deadline`, naming the last
 * error and the tries, never the URL's query string.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

/** A blob server on loopback: `/flaky.pdf` answers 503 `failures` times then the file, `/down.pdf` always 503. */
async function blobServer(pdf: Buffer, failures: number) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.push(path);
    const answered = seen.filter((p) => p === path).length;
    if (path === '/flaky.pdf' && answered > failures) {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': pdf.length });
      res.end(pdf);
      return;
    }
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('try later');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Requests by path. */
    count: (path: string) => seen.filter((p) => p === path).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An arrival event for an http blob, with one result awaited. */
const event = (id: string, url: string) =>
  arrival(id, '', { blob: { url }, pipeline_configuration: 'FRAUD_ONLY' });

const blobs = { httpHosts: ['127.0.0.1'], allowPrivateNetworks: true };

/** A test environment and a blob server, started before the tests of a `describe` and stopped after. */
function setUp() {
  const env = new E2E(1);
  const ctx = { env, server: null as unknown as Awaited<ReturnType<typeof blobServer>> };
  beforeAll(async () => {
    await env.start();
    ctx.server = await blobServer(await sampleBytes('clean-pdf'), 2);
  });
  afterAll(async () => {
    await env.stop();
    await ctx.server.close();
  });
  return ctx;
}

describe('a blob server answering 503 twice', () => {
  const ctx = setUp();

  it('is tried again: the document is submitted once and finishes, no dead letter', async () => {
    const { env, server } = ctx;
    await env.collect();
    await env.startConnector({ blobs });
    await env.produce([event('evt-flaky', `${server.base}/flaky.pdf?sig=not-for-logs`)]);
    await waitFor(
      'the fraud result of the document',
      () => env.forEvent('evt-flaky').some((o) => env.kindOf(o) === 'fraud'),
      60_000,
    );
    expect(server.count('/flaky.pdf')).toBe(3);
    expect(await env.submissions('evt-flaky')).toHaveLength(1);
    expect(env.on('dlq')).toEqual([]);
  });
});

describe('a blob server answering 503 until the deadline', () => {
  const ctx = setUp();

  it('ends the document in a blob/deadline dead letter naming the last error and the tries', async () => {
    const { env, server } = ctx;
    await env.collect();
    await env.startConnector({ blobs, connector: { deadlineMs: 4000 } });
    await env.produce([event('evt-down', `${server.base}/down.pdf?sig=not-for-logs`)]);
    await waitFor('a dead letter for the document', () => env.on('dlq').length >= 1, 60_000);
    const deadLetter = env.on('dlq')[0]!.value as Record<string, unknown>;
    expect(deadLetter).toMatchObject({ stage: 'blob', error_code: 'deadline', event_id: 'evt-down' });
    const tries = server.count('/down.pdf');
    expect(tries).toBeGreaterThan(1);
    expect(deadLetter.attempts).toBe(tries);
    expect(deadLetter.message).toContain(`${tries} tries; last: blob_unreadable: `);
    expect(deadLetter.message).toContain(`${server.base}/down.pdf answered HTTP 503`);
    expect(deadLetter.message).not.toContain('not-for-logs');
    expect(await env.submissions('evt-down')).toEqual([]);
    expect(env.on('dlq')).toHaveLength(1);
  });
});
