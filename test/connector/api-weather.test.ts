/**
 * The API's bad minutes never cost a good document (issue 28), on the real stack: the API answering
 * 503 to everything for a minute, the API down when the connector starts, its token endpoint down for
 * a minute, every connection dropped for a while. In each, only good documents are sent: every one
 * finishes once the API is back, with one submission each, and none is dead-lettered; the input is
 * paused while the API is down. A document whose deadline passes during an outage is the only letter,
 * with reason deadline. The scenarios run side by side (each has its own topics, group and sandbox):
 * they mostly wait.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Connector } from '../../src/connector/connector.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { forward } from '../harness/proxy.js';

const OUTAGE_MS = 60_000;

/** A loopback proxy in front of the sandbox: forwards, answers the token endpoint 503, or is not there. */
class ApiProxy {
  tokenDown = false;
  private server: http.Server | null = null;
  port = 0;

  constructor(private readonly upstream: URL) {}

  /** A port nothing listens on yet (the API "down" until `listen`). */
  async reserve(): Promise<void> {
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    this.port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }

  async listen(): Promise<void> {
    this.server = http.createServer((req, res) => {
      if (this.tokenDown && req.url?.startsWith('/oauth2/token')) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'temporarily_unavailable' }));
        return;
      }
      forward(this.upstream, req, res);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Sends `n` good documents; returns their event ids. */
async function sendGood(e2e: E2E, n: number, tag: string): Promise<string[]> {
  const bytes = await sampleBytes('clean-pdf');
  const ids = Array.from({ length: n }, (_, i) => `${e2e.id}-${tag}${i}`);
  const files = await Promise.all(ids.map((id) => e2e.writeFile(`${id}.pdf`, bytes)));
  await e2e.produce(
    ids.map((id, i) => arrival(id, files[i]!)),
    (i) => ids[i]!,
  );
  return ids;
}

/** Every event has its fraud result, once; nothing went to the dead-letter topic. */
async function expectAllDone(e2e: E2E, ids: string[], timeoutMs: number): Promise<void> {
  const done = () => ids.filter((id) => e2e.forEvent(id).some((o) => o.topic === e2e.topics.fraud));
  await waitFor(`${ids.length} fraud results`, () => done().length === ids.length, timeoutMs);
  expect(e2e.on('dlq')).toEqual([]);
  for (const id of ids) expect(e2e.forEvent(id).filter((o) => o.topic === e2e.topics.fraud)).toHaveLength(1);
  expect(e2e.sandbox.stats().submissionsCreated).toBe(ids.length);
}

/** Waits until the connector's input is paused for an outage. */
async function paused(connector: Connector): Promise<void> {
  await waitFor('the input paused for the API', () => connector.pausedForOutage, 30_000);
}

describe('the API has a bad minute', () => {
  const envs: E2E[] = [];
  const proxies: ApiProxy[] = [];

  afterAll(async () => {
    for (const p of proxies) await p.close();
    for (const e of envs) await e.stop();
  });

  async function env(partitions = 2): Promise<E2E> {
    const e2e = await new E2E(partitions).start();
    envs.push(e2e);
    return e2e;
  }

  test.concurrent(
    '503 to every call for a minute: every document finishes, one submission each',
    async () => {
      const e2e = await env();
      const connector = await e2e.startConnector();
      await e2e.collect();
      const before = await sendGood(e2e, 4, 'before');
      await waitFor('a submission', () => e2e.sandbox.stats().submissionsCreated > 0, 30_000);
      e2e.sandbox.configure({ faults: { errorRate: 1 } });
      await paused(connector);
      // Sent during the outage: they wait in Kafka, the input being paused.
      const during = await sendGood(e2e, 3, 'during');
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
      expect(e2e.on('dlq')).toEqual([]);
      e2e.sandbox.configure({ faults: { errorRate: 0 } });
      await expectAllDone(e2e, [...before, ...during], 90_000);
      expect(connector.pausedForOutage).toBe(false);
    },
    240_000,
  );

  test.concurrent(
    'the API down when the connector starts: documents wait, then finish',
    async () => {
      const e2e = await env();
      const proxy = new ApiProxy(new URL(e2e.sandbox.baseUrl));
      proxies.push(proxy);
      await proxy.reserve();
      const connector = await e2e.startConnector({ api: { baseUrl: proxy.url } });
      await e2e.collect();
      const ids = await sendGood(e2e, 4, 'doc');
      await paused(connector);
      await new Promise((resolve) => setTimeout(resolve, 15_000));
      expect(e2e.on('dlq')).toEqual([]);
      await proxy.listen();
      await expectAllDone(e2e, ids, 90_000);
    },
    240_000,
  );

  test.concurrent(
    'the token endpoint down for a minute: documents wait, then finish',
    async () => {
      const e2e = await env();
      const proxy = new ApiProxy(new URL(e2e.sandbox.baseUrl));
      proxies.push(proxy);
      await proxy.listen();
      proxy.tokenDown = true;
      const connector = await e2e.startConnector({ api: { tokenUrl: `${proxy.url}/oauth2/token` } });
      await e2e.collect();
      const ids = await sendGood(e2e, 4, 'doc');
      await paused(connector);
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
      expect(e2e.on('dlq')).toEqual([]);
      proxy.tokenDown = false;
      await expectAllDone(e2e, ids, 90_000);
    },
    240_000,
  );

  test.concurrent(
    'every connection dropped for a while: documents finish, one submission each',
    async () => {
      const e2e = await env();
      await e2e.startConnector();
      await e2e.collect();
      e2e.sandbox.configure({ faults: { dropRate: 1 } });
      const ids = await sendGood(e2e, 4, 'doc');
      await new Promise((resolve) => setTimeout(resolve, 20_000));
      expect(e2e.on('dlq')).toEqual([]);
      e2e.sandbox.configure({ faults: { dropRate: 0 } });
      await expectAllDone(e2e, ids, 90_000);
    },
    240_000,
  );

  test.concurrent(
    'a document whose deadline passes during the outage is the only letter',
    async () => {
      const e2e = await env();
      e2e.sandbox.configure({ processing: { distribution: 'fixed', meanMs: 4000 } });
      const connector = await e2e.startConnector({ connector: { deadlineMs: 15_000 } });
      await e2e.collect();
      const [late] = await sendGood(e2e, 1, 'late');
      await waitFor('its submission', () => e2e.sandbox.stats().submissionsCreated === 1, 30_000);
      e2e.sandbox.configure({ faults: { errorRate: 1 } });
      await paused(connector);
      const others = await sendGood(e2e, 3, 'after');
      await waitFor('the late document letter', () => e2e.on('dlq').length === 1, 60_000);
      e2e.sandbox.configure({ faults: { errorRate: 0 }, processing: { meanMs: 200 } });
      const letter = e2e.on('dlq')[0]!;
      expect(letter.headers.event_id).toBe(late);
      expect(String(letter.value.error_code)).toMatch(/^deadline/);
      const done = () => others.filter((id) => e2e.forEvent(id).some((o) => o.topic === e2e.topics.fraud));
      await waitFor('the others done', () => done().length === others.length, 60_000);
      expect(e2e.on('dlq')).toHaveLength(1);
      expect(e2e.sandbox.stats().submissionsCreated).toBe(1 + others.length);
    },
    240_000,
  );
});
