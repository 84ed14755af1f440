/**
 * Kafka itself restarted under a running connector (`docstream stack down/up --services kafka`; the
 * broker's data directory persists), in both delivery modes. A proxy in front of the API holds the
 * answers to creates (and to ready results) while the broker goes away, and lets them go once it is
 * away: the sandbox has created those submissions, and their answers arrive while Kafka takes no
 * writes, so those documents sit between their create and their state record (and those results
 * wait for the broker). Checked: the connector never exits,
 * every document gets its result, none is dead-lettered, and none is submitted twice. The broker is
 * the file's own (`private-kafka.ts`), so the files running beside it keep theirs; it is brought
 * back up before the clean-up even when a test fails.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PATHS } from '../../src/api/schemas.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { freePort } from '../../scripts/lib/harness.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { forward } from '../harness/proxy.js';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

let kafka: PrivateKafka;
beforeAll(async () => {
  kafka = await startPrivateKafka();
}, 180_000);
afterAll(() => kafka?.remove(), 180_000);

/** Whether a request is a create (`POST /v2/submission`) or a quality result read. */
function heldKind(req: http.IncomingMessage): 'create' | 'result' | null {
  if (req.method === 'POST' && req.url === PATHS.submission) return 'create';
  if (req.method === 'GET' && /^\/v2\/submission\/[^/?]+\/quality(\?|$)/.test(req.url ?? '')) return 'result';
  return null;
}

/**
 * A loopback proxy in front of the sandbox that holds answers until `release`: every create after
 * the first `createsAnswered` (the sandbox has created the submission; the connector has not heard
 * so), and every quality result that is ready (200). Every other request and answer passes at once.
 * A hold lasts about as long as the broker takes to stop, far below the connector's request
 * timeout (`api.timeoutMs`, 30 s), past which it would count the create as lost and send it again.
 */
class AnswerHold {
  private readonly held = {
    create: [] as Array<() => Promise<void>>,
    result: [] as Array<() => Promise<void>>,
  };
  private holding = true;
  private readonly server: http.Server;

  constructor(
    upstream: URL,
    private createsAnswered: number,
  ) {
    this.server = http.createServer((req, res) => {
      let kind = this.holding ? heldKind(req) : null;
      if (kind === 'create' && this.createsAnswered > 0) {
        this.createsAnswered -= 1;
        kind = null;
      }
      if (kind === null) forward(upstream, req, res);
      else this.hold(kind, upstream, req, res);
    });
  }

  /** Reads the sandbox's whole answer, then keeps it (a result only when ready) or sends it on. */
  private hold(
    kind: 'create' | 'result',
    upstream: URL,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): void {
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const send = () =>
            new Promise<void>((resolve) => {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              res.end(Buffer.concat(chunks), () => resolve());
            });
          if (this.holding && (kind === 'create' || answer.statusCode === 200)) this.held[kind].push(send);
          else void send();
        });
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Answers held now, by kind. */
  heldCount(kind: 'create' | 'result'): number {
    return this.held[kind].length;
  }

  /** Stops holding and sends every held answer; resolves once they are written to their sockets. */
  async release(): Promise<{ create: number; result: number }> {
    this.holding = false;
    const creates = this.held.create.splice(0);
    const results = this.held.result.splice(0);
    await Promise.all([...creates, ...results].map((send) => send()));
    return { create: creates.length, result: results.length };
  }

  async close(): Promise<void> {
    await this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe.each(['at-least-once', 'exactly-once'])('Kafka restarted mid-run (%s)', (delivery) => {
  let env: E2E;
  let proxy: AnswerHold;
  /** True from `stack down` until `stack up` succeeded. */
  let brokerDown = false;
  const stack = async (action: 'up' | 'down') => {
    if (action === 'down') brokerDown = true;
    await kafka.stack(action);
    if (action === 'up') brokerDown = false;
  };
  beforeAll(async () => {
    env = new E2E(1, { brokers: kafka.brokers });
    await env.start({ processing: { distribution: 'uniform', minMs: 200, maxMs: 500 } });
    // The first ten documents go through before anything is held: their results are held later.
    proxy = new AnswerHold(new URL(env.sandbox.baseUrl), 10);
    await proxy.listen();
  });
  afterAll(async () => {
    // A test that failed while the broker was away leaves it down: up again before the clean-up.
    if (brokerDown) await stack('up');
    await proxy?.close();
    await env?.stop();
  }, 180_000);

  it('the connector recovers, every document gets its result, none is submitted twice', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const before = Array.from({ length: 60 }, (_, i) => `evt-restart-a${i}`);
    const after = Array.from({ length: 20 }, (_, i) => `evt-restart-b${i}`);
    const port = await freePort();
    const child = env.spawnConnector({
      api: { baseUrl: proxy.url },
      connector: { delivery, transactionLingerMs: 20, admissionWaitMs: 500 },
      http: { host: '127.0.0.1', port },
    });
    const kafkaCheck = async (): Promise<{ ok: boolean; available: string | undefined } | null> => {
      try {
        const ready = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as {
          checks: { kafka: { ok: boolean } };
        };
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const available = /^docstream_kafka_available (\d)/m.exec(metrics)?.[1];
        return { ok: ready.checks.kafka.ok, available };
      } catch {
        return null;
      }
    };
    await env.collect();
    await env.produce(before.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
    // When the broker goes away, creates are out (the sandbox created them; their answers are held)
    // and analyses are finished (their results held too).
    await waitFor(
      'held creates and results',
      () => proxy.heldCount('create') >= 5 && proxy.heldCount('result') >= 1,
      30_000,
    );
    await stack('down');
    // While the broker is away, /readyz's kafka check fails and the gauge says so.
    let seenDown: { ok: boolean; available: string | undefined } | null = null;
    for (const until = Date.now() + 30_000; Date.now() < until && seenDown === null;) {
      const check = await kafkaCheck();
      if (check && !check.ok) seenDown = check;
      else await new Promise((r) => setTimeout(r, 250));
    }
    expect(seenDown).toEqual({ ok: false, available: '0' });
    // The held answers arrive while Kafka takes no writes: those documents wait between their create
    // and their state record, and those results wait for the broker.
    const released = await proxy.release();
    expect(released.create).toBeGreaterThanOrEqual(5);
    expect(released.result).toBeGreaterThanOrEqual(1);
    await stack('up');
    await env.produce(after.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));

    const ids = [...before, ...after];
    const done = () => new Set(env.on('quality').map((o) => o.headers.event_id)).size;
    await waitFor(`results of all ${ids.length} documents`, () => done() === ids.length, 120_000);
    expect(child.exitCode).toBeNull();
    expect(await kafkaCheck()).toEqual({ ok: true, available: '1' });
    expect(env.on('dlq')).toEqual([]);
    const counts = env.sandbox.stats().submissionsByQueryId;
    expect(Object.keys(counts).sort()).toEqual([...ids].sort());
    // Each document's results name one submission (re-emission after a lost acknowledgement is allowed).
    for (const id of ids) {
      expect(
        new Set(
          env
            .on('quality')
            .filter((o) => o.headers.event_id === id)
            .map((o) => o.key),
        ).size,
      ).toBe(1);
    }
    const twice = Object.entries(counts).filter(([, n]) => n !== 1);
    expect(twice).toEqual([]);
  }, 240_000);
});
