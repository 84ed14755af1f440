/**
 * Kafka itself restarted under a running connector (`docstream stack down/up --services kafka`; the
 * broker's data directory persists), in both delivery modes. Every API call is slowed so that the
 * broker goes away while creates are out: their answers arrive while Kafka takes no writes, so those
 * documents sit between their create and their state record. Checked: the connector never exits,
 * every document gets its result, none is dead-lettered, and none is submitted twice. The broker is
 * the file's own (`private-kafka.ts`), so the files running beside it keep theirs; it is brought
 * back up before the clean-up even when a test fails.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { freePort } from '../../scripts/lib/harness.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

let kafka: PrivateKafka;
beforeAll(async () => {
  kafka = await startPrivateKafka();
}, 180_000);
afterAll(() => kafka?.remove(), 180_000);

describe.each(['at-least-once', 'exactly-once'])('Kafka restarted mid-run (%s)', (delivery) => {
  let env: E2E;
  const stack = (action: 'up' | 'down') => kafka.stack(action);
  beforeAll(async () => {
    env = new E2E(1, { brokers: kafka.brokers });
    await env.start({ processing: { distribution: 'uniform', minMs: 1000, maxMs: 2000 } });
  });
  afterAll(async () => {
    await stack('up');
    await env?.stop();
  }, 180_000);

  it('the connector recovers, every document gets its result, none is submitted twice', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const before = Array.from({ length: 60 }, (_, i) => `evt-restart-a${i}`);
    const after = Array.from({ length: 20 }, (_, i) => `evt-restart-b${i}`);
    const port = await freePort();
    const child = env.spawnConnector({
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
    await env.produce(before.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
    await waitFor('the first submissions', () => env.sandbox.stats().submissionsCreated >= 10, 30_000);
    await env.collect();
    // Creates answered while the broker is away: their documents wait between create and record.
    env.sandbox.configure({ faults: { extraLatencyMs: 1500 } });
    await stack('down');
    // While the broker is away, /readyz's kafka check fails and the gauge says so.
    let seenDown: { ok: boolean; available: string | undefined } | null = null;
    for (const until = Date.now() + 30_000; Date.now() < until && seenDown === null;) {
      const check = await kafkaCheck();
      if (check && !check.ok) seenDown = check;
      else await new Promise((r) => setTimeout(r, 250));
    }
    expect(seenDown).toEqual({ ok: false, available: '0' });
    // Analyses finish while the broker is away: their results wait for it.
    env.sandbox.configure({ faults: { extraLatencyMs: 0 } });
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
