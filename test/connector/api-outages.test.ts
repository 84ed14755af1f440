/**
 * The API's bad minutes never cost a good document, on the real stack: the API answering 503 to
 * everything, the API down when the connector starts, its token endpoint down, every connection
 * dropped for a while. In each, only good documents are sent: every one finishes once the API is back,
 * with one submission each, and none is dead-lettered; the input is paused while the API is down, and
 * the connector keeps its place in the group throughout. A document whose deadline passes during an
 * outage is the only dead letter, with reason deadline. The scenarios run side by side (each has its
 * own topics, group and sandbox): they mostly wait.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Connector } from '../../src/connector/connector.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { forward } from '../harness/proxy.js';

/**
 * How long each outage lasts. Longer than the group's session timeout (10 s in the E2E configuration),
 * so a consumer that stopped heartbeating while paused would lose its membership (checked by member
 * id), and long enough for the API client's probes to back off several times (1, 2, 4, 8 s): past
 * that, a longer outage only repeats the same probe. DOCSTREAM_TEST_OUTAGE_MS sets another length.
 */
const OUTAGE_MS = Number(process.env.DOCSTREAM_TEST_OUTAGE_MS ?? 12_000);

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

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

/** The member ids of this test's consumer group, once it is stable with one member. */
async function groupMember(e2e: E2E): Promise<string> {
  const admin = e2e.kafka.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const group = await admin.describeGroupMembers(`${e2e.id}-group`);
      if (group.state === 'Stable' && group.members.length === 1) return group.members[0]!.memberId;
      if (Date.now() > deadline)
        throw new Error(`the group is ${group.state} with ${group.members.length} member(s)`);
      await sleep(200);
    }
  } finally {
    await admin.disconnect();
  }
}

/**
 * Holds the outage for OUTAGE_MS once the input paused, then checks that nothing was dead-lettered
 * and that the connector is still the group's same member (it kept heartbeating while paused).
 */
async function holdOutage(e2e: E2E, member: string): Promise<void> {
  await sleep(OUTAGE_MS);
  expect(e2e.on('dlq')).toEqual([]);
  expect(await groupMember(e2e)).toBe(member);
}

describe('the API has a bad minute', () => {
  const envs: E2E[] = [];
  const proxies: ApiProxy[] = [];

  // What scenarios that failed left (a passed one stops its own at its end); each scenario has its
  // own connector, sandbox and topics, so they stop side by side.
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(envs.map((e) => e.stop()));
  });

  /** Stops a passed scenario's proxy and environment at once, while the others still run. */
  async function release(e2e: E2E, proxy?: ApiProxy): Promise<void> {
    if (proxy) {
      proxies.splice(proxies.indexOf(proxy), 1);
      await proxy.close();
    }
    envs.splice(envs.indexOf(e2e), 1);
    await e2e.stop();
  }

  async function env(partitions = 2): Promise<E2E> {
    const e2e = await new E2E(partitions).start();
    envs.push(e2e);
    return e2e;
  }

  test.concurrent(
    '503 to every call for a while: every document finishes, one submission each',
    async () => {
      const e2e = await env();
      const connector = await e2e.startConnector();
      await e2e.collect();
      const before = await sendGood(e2e, 4, 'before');
      await waitFor('a submission', () => e2e.sandbox.stats().submissionsCreated > 0, 30_000);
      const member = await groupMember(e2e);
      e2e.sandbox.configure({ faults: { errorRate: 1 } });
      await paused(connector);
      // Sent during the outage: they wait in Kafka, the input being paused.
      const during = await sendGood(e2e, 3, 'during');
      await holdOutage(e2e, member);
      e2e.sandbox.configure({ faults: { errorRate: 0 } });
      await expectAllDone(e2e, [...before, ...during], 90_000);
      expect(connector.pausedForOutage).toBe(false);
      await release(e2e);
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
      await holdOutage(e2e, await groupMember(e2e));
      await proxy.listen();
      await expectAllDone(e2e, ids, 90_000);
      await release(e2e, proxy);
    },
    240_000,
  );

  test.concurrent(
    'the token endpoint down for a while: documents wait, then finish',
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
      await holdOutage(e2e, await groupMember(e2e));
      proxy.tokenDown = false;
      await expectAllDone(e2e, ids, 90_000);
      await release(e2e, proxy);
    },
    240_000,
  );

  test.concurrent(
    'every connection dropped for a while: documents finish, one submission each',
    async () => {
      const e2e = await env();
      const connector = await e2e.startConnector();
      await e2e.collect();
      const member = await groupMember(e2e);
      e2e.sandbox.configure({ faults: { dropRate: 1 } });
      const ids = await sendGood(e2e, 4, 'doc');
      await waitFor('a dropped connection', () => e2e.sandbox.stats().droppedConnections > 0, 30_000);
      await paused(connector);
      await holdOutage(e2e, member);
      e2e.sandbox.configure({ faults: { dropRate: 0 } });
      await expectAllDone(e2e, ids, 90_000);
      await release(e2e);
    },
    240_000,
  );

  test.concurrent(
    'a document whose deadline passes during the outage is the only dead letter',
    async () => {
      const e2e = await env();
      // Its analysis (4 s) outlasts the start of the outage, so only the outage keeps it past its
      // deadline (9 s from its creation); the others are created once the API is back, well within theirs.
      e2e.sandbox.configure({ processing: { distribution: 'fixed', meanMs: 4000 } });
      const connector = await e2e.startConnector({ connector: { deadlineMs: 9000 } });
      await e2e.collect();
      const [late] = await sendGood(e2e, 1, 'late');
      await waitFor('its submission', () => e2e.sandbox.stats().submissionsCreated === 1, 30_000);
      e2e.sandbox.configure({ faults: { errorRate: 1 } });
      await paused(connector);
      const others = await sendGood(e2e, 3, 'after');
      await waitFor('the late document dead-lettered', () => e2e.on('dlq').length === 1, 60_000);
      e2e.sandbox.configure({ faults: { errorRate: 0 }, processing: { meanMs: 200 } });
      const deadLetter = e2e.on('dlq')[0]!;
      expect(deadLetter.headers.event_id).toBe(late);
      expect(String(deadLetter.value.error_code)).toMatch(/^deadline/);
      const done = () => others.filter((id) => e2e.forEvent(id).some((o) => o.topic === e2e.topics.fraud));
      await waitFor('the others done', () => done().length === others.length, 60_000);
      expect(e2e.on('dlq')).toHaveLength(1);
      expect(e2e.sandbox.stats().submissionsCreated).toBe(1 + others.length);
      await release(e2e);
    },
    240_000,
  );
});
