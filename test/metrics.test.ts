import net from 'node:net';
import { sampleBytes } from '../src/demo/corpus.js';
import { E2E, arrival, waitFor } from './harness/e2e.js';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function value(text: string, pattern: RegExp): number {
  const line = text.split('\n').find((l) => pattern.test(l));
  return line ? Number(line.trim().split(/\s+/).at(-1)) : NaN;
}

describe('docstream run: metrics and health during a run', () => {
  const env = new E2E();
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 1500 } });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('serves /metrics with live values, /healthz and /readyz', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    env.spawnConnector({ http: { port } });
    await env.collect();
    await waitFor(
      'the ready endpoint',
      () => {
        void fetch(`${url}/readyz`)
          .then((r) => (ready = r.status === 200))
          .catch(() => undefined);
        return ready;
      },
      60_000,
    );
    const good = await env.writeFile('a.pdf', await sampleBytes('clean-pdf'));
    const events = Array.from({ length: 10 }, (_, i) => arrival(`m-${i}`, good));
    await env.produce([...events, '{ not json', arrival('m-outside', '/etc/passwd')]);

    // While documents wait for their results, the in-flight gauge shows them.
    let during = '';
    await waitFor('documents in flight', () => {
      void fetch(`${url}/metrics`)
        .then((r) => r.text())
        .then((t) => (during = t));
      return value(during, /^docstream_documents_in_flight /) > 0;
    });
    await waitFor('all results', () => env.on('fraud').length === 10 && env.on('dlq').length === 2, 90_000);
    // The lag gauges refresh every connector.groupShareIntervalMs (500 ms by default).
    await new Promise((r) => setTimeout(r, 2000));
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(value(text, /^docstream_documents_completed_total\{outcome="done"\}/)).toBe(10);
    expect(value(text, /^docstream_documents_failed_total\{stage="decode",reason="invalid_json"\}/)).toBe(1);
    expect(value(text, /^docstream_documents_failed_total\{stage="blob",reason="blob_not_allowed"\}/)).toBe(
      1,
    );
    expect(value(text, /^docstream_results_published_total\{kind="fraud"\}/)).toBe(10);
    expect(value(text, /^docstream_api_calls_total\{endpoint="POST \/v2\/submission",status="200"\}/)).toBe(
      10,
    );
    expect(value(text, /^docstream_stage_duration_seconds_count\{stage="create"\}/)).toBe(10);
    expect(value(text, /^docstream_stage_duration_seconds_count\{stage="end_to_end"\}/)).toBe(10);
    expect(value(text, /^docstream_api_limiter_rate /)).toBeGreaterThan(0);
    // One instance holds every input partition: its share is the whole configured rate.
    expect(value(text, /^docstream_api_limiter_ceiling /)).toBe(env.config().api.ratePerSecond);
    expect(value(text, /^docstream_consumer_lag\{topic=".*",partition="0"\}/)).toBe(0);
    expect(text).toMatch(/^docstream_api_rate_limited_total /m);
    expect(text).toMatch(/^docstream_api_retries_total|# TYPE docstream_api_retries_total counter/m);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});

let ready = false;
