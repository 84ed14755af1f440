/**
 * Kafka itself restarted under a running connector (`docstream stack down/up --services kafka`; the
 * broker's data directory persists), in both delivery modes: one connector per mode (each with its
 * own topics, group, sandbox and proxy) rides the same restart. A proxy in front of the API holds the
 * answers to creates (and to ready results) while the broker goes away, and lets them go once it is
 * away: the sandbox has created those submissions, and their answers arrive while Kafka takes no
 * writes, so those documents sit between their create and their state record (and those results
 * wait for the broker). Checked, per mode: the connector never exits, every document gets its
 * result, none is dead-lettered, and none is submitted twice. The broker is the file's own
 * (`private-kafka.ts`), so the files running beside it keep theirs; it is brought back up before
 * the clean-up even when a test fails.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PATHS } from '../../src/api/schemas.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { freePort } from '../../scripts/lib/harness.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { forward, sendOn } from '../harness/proxy.js';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

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
 * A hold lasts until both modes' connectors have answers held and the broker has stopped: the
 * connectors' request timeout (`api.timeoutMs`) is raised well past that, so that no held answer
 * counts as lost (a create whose answer is lost is sent again, by design).
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
    sendOn(upstream, req, res, (answer) => {
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
    });
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

const MODES = ['at-least-once', 'exactly-once'] as const;
type Delivery = (typeof MODES)[number];

/** The connector's /readyz kafka check and its `docstream_kafka_available` gauge (null: no answer). */
type KafkaCheck = { ok: boolean; available: string | undefined } | null;

/** What one mode's connector did through the restart; the test of the mode checks it. */
interface Outcome {
  /** The first failing /readyz kafka check while the broker was away (null: none seen in 30 s). */
  seenDown: KafkaCheck;
  /** Answers held while the broker went away, let go once it was away. */
  released: { create: number; result: number };
  /** The connector's exit code once every result was out (null: still running). */
  exitCode: number | null;
  kafkaAfter: KafkaCheck;
  ids: string[];
  /** Event ids whose result was out, and the submission ids (keys) of each one's results. */
  resultKeys: Map<string, Set<string | null>>;
  dlq: unknown[];
  submissionsByQueryId: Record<string, number>;
}

/** One delivery mode's connector, with its own topics, group, sandbox and proxy. */
class ModeRun {
  readonly env = new E2E(1, { brokers: kafka.brokers });
  proxy!: AnswerHold;
  private port = 0;
  private file = '';
  private child: ReturnType<E2E['spawnConnector']> | null = null;
  readonly before = Array.from({ length: 60 }, (_, i) => `evt-restart-a${i}`);
  readonly after = Array.from({ length: 20 }, (_, i) => `evt-restart-b${i}`);

  constructor(readonly delivery: Delivery) {}

  /** Starts the connector with the first documents, and waits until creates and results are held. */
  async start(): Promise<void> {
    await this.env.start({ processing: { distribution: 'uniform', minMs: 200, maxMs: 500 } });
    // The first ten documents go through before anything is held: their results are held later.
    this.proxy = new AnswerHold(new URL(this.env.sandbox.baseUrl), 10);
    await this.proxy.listen();
    this.file = await this.env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    this.port = await freePort();
    this.child = this.env.spawnConnector({
      api: { baseUrl: this.proxy.url, timeoutMs: 120_000 },
      connector: { delivery: this.delivery, transactionLingerMs: 20, admissionWaitMs: 500 },
      http: { host: '127.0.0.1', port: this.port },
    });
    await this.env.collect();
    await this.env.produce(this.before.map((id) => this.arrival(id)));
    // When the broker goes away, creates are out (the sandbox created them; their answers are held)
    // and analyses are finished (their results held too).
    await waitFor(
      `${this.delivery}: held creates and results`,
      () => this.proxy.heldCount('create') >= 5 && this.proxy.heldCount('result') >= 1,
      30_000,
    );
  }

  private arrival(id: string): Record<string, unknown> {
    return arrival(id, this.file, { pipeline_configuration: 'QUALITY_ONLY' });
  }

  async kafkaCheck(): Promise<KafkaCheck> {
    try {
      const base = `http://127.0.0.1:${this.port}`;
      const ready = (await (await fetch(`${base}/readyz`)).json()) as { checks: { kafka: { ok: boolean } } };
      const metrics = await (await fetch(`${base}/metrics`)).text();
      const available = /^docstream_kafka_available (\d)/m.exec(metrics)?.[1];
      return { ok: ready.checks.kafka.ok, available };
    } catch {
      return null;
    }
  }

  /** With the broker stopped: the first failing kafka check (30 s at most), then the held answers go. */
  async whileAway(): Promise<Pick<Outcome, 'seenDown' | 'released'>> {
    let seenDown: KafkaCheck = null;
    for (const until = Date.now() + 30_000; Date.now() < until && seenDown === null;) {
      const check = await this.kafkaCheck();
      if (check && !check.ok) seenDown = check;
      else await new Promise((r) => setTimeout(r, 250));
    }
    // The held answers arrive while Kafka takes no writes: those documents wait between their create
    // and their state record, and those results wait for the broker.
    return { seenDown, released: await this.proxy.release() };
  }

  /** With the broker back: more documents, then every result. */
  async finish(away: Pick<Outcome, 'seenDown' | 'released'>): Promise<Outcome> {
    await this.env.produce(this.after.map((id) => this.arrival(id)));
    const ids = [...this.before, ...this.after];
    const done = () => new Set(this.env.on('quality').map((o) => o.headers.event_id)).size;
    await waitFor(
      `${this.delivery}: results of all ${ids.length} documents`,
      () => done() === ids.length,
      120_000,
    );
    const resultKeys = new Map<string, Set<string | null>>();
    for (const o of this.env.on('quality')) {
      const id = o.headers.event_id!;
      resultKeys.set(id, (resultKeys.get(id) ?? new Set()).add(o.key));
    }
    return {
      ...away,
      exitCode: this.child!.exitCode,
      kafkaAfter: await this.kafkaCheck(),
      ids,
      resultKeys,
      dlq: this.env.on('dlq'),
      submissionsByQueryId: this.env.sandbox.stats().submissionsByQueryId,
    };
  }

  async stop(): Promise<void> {
    await this.proxy?.close();
    await this.env.stop();
  }
}

let kafka: PrivateKafka;
const runs = new Map<Delivery, ModeRun>();
/** Each mode's outcome, or what failed it. */
const outcomes = new Map<Delivery, Promise<Outcome>>();
/** True from `stack down` until `stack up` succeeded. */
let brokerDown = false;

async function stack(action: 'up' | 'down'): Promise<void> {
  if (action === 'down') brokerDown = true;
  await kafka.stack(action);
  if (action === 'up') brokerDown = false;
}

/** The promise, with its rejection marked handled: a test awaits (and so sees) it later. */
function started<T>(run: Promise<T>): Promise<T> {
  run.catch(() => undefined);
  return run;
}

beforeAll(async () => {
  kafka = await startPrivateKafka();
  for (const delivery of MODES) runs.set(delivery, new ModeRun(delivery));
  const ready = new Map([...runs].map(([delivery, run]) => [delivery, started(run.start())]));
  // One restart for both modes, once each has creates and results held (or has failed: its test
  // reports why, and the other mode goes on).
  await Promise.allSettled(ready.values());
  await stack('down');
  const away = new Map(
    [...runs].map(([delivery, run]) => [delivery, started(ready.get(delivery)!.then(() => run.whileAway()))]),
  );
  await Promise.allSettled(away.values());
  await stack('up');
  for (const [delivery, run] of runs) {
    outcomes.set(delivery, started(away.get(delivery)!.then((a) => run.finish(a))));
  }
  await Promise.allSettled(outcomes.values());
}, 360_000);

afterAll(async () => {
  try {
    // A run that failed while the broker was away leaves it down: up again before the clean-up.
    if (brokerDown) await stack('up');
    for (const run of runs.values()) await run.stop();
  } finally {
    await kafka?.remove();
  }
}, 180_000);

describe.each(MODES)('Kafka restarted mid-run (%s)', (delivery) => {
  it('the connector recovers, every document gets its result, none is submitted twice', async () => {
    const o = await outcomes.get(delivery)!;
    // While the broker was away, /readyz's kafka check failed and the gauge said so; the held
    // creates and results were answered then.
    expect(o.seenDown).toEqual({ ok: false, available: '0' });
    expect(o.released.create).toBeGreaterThanOrEqual(5);
    expect(o.released.result).toBeGreaterThanOrEqual(1);
    expect(o.exitCode).toBeNull();
    expect(o.kafkaAfter).toEqual({ ok: true, available: '1' });
    expect(o.dlq).toEqual([]);
    expect(Object.keys(o.submissionsByQueryId).sort()).toEqual([...o.ids].sort());
    // Each document's results name one submission (re-emission after a lost acknowledgement is allowed).
    for (const id of o.ids) expect(o.resultKeys.get(id)?.size).toBe(1);
    const twice = Object.entries(o.submissionsByQueryId).filter(([, n]) => n !== 1);
    expect(twice).toEqual([]);
  });
});
