import { ConnectorMetrics } from './metrics.js';
import { startOpsServer } from './server.js';

describe('ops server', () => {
  it('serves metrics, liveness, and readiness that names failing checks', async () => {
    const metrics = new ConnectorMetrics({ defaultMetrics: false });
    metrics.inFlight.set(3);
    metrics.recordCall({ endpoint: 'POST /v2/submission', status: 429, retried: true });
    let kafkaOk = false;
    const server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: metrics.registry,
      checks: { kafka: async () => ({ ok: kafkaOk, detail: kafkaOk ? undefined : 'not connected' }) },
    });
    try {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      expect(text).toMatch(/docstream_documents_in_flight 3/);
      expect(text).toMatch(/docstream_api_calls_total\{endpoint="POST \/v2\/submission",status="429"\} 1/);
      expect(text).toMatch(/docstream_api_rate_limited_total 1/);
      expect(text).toMatch(/docstream_api_retries_total\{endpoint="POST \/v2\/submission"\} 1/);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const notReady = await fetch(`${server.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toMatchObject({
        checks: { kafka: { ok: false, detail: 'not connected' } },
      });
      kafkaOk = true;
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('exports readiness in /metrics, evaluated at each scrape, one run of the checks per scrape', async () => {
    const metrics = new ConnectorMetrics({ defaultMetrics: false });
    let kafkaOk = false;
    let apiRuns = 0;
    const server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: metrics.registry,
      checks: {
        kafka: async () => ({ ok: kafkaOk }),
        api: async () => {
          apiRuns++;
          return { ok: true };
        },
      },
    });
    try {
      let text = await (await fetch(`${server.url}/metrics`)).text();
      expect(text).toMatch(/^docstream_ready 0$/m);
      expect(text).toMatch(/^docstream_readiness_check\{check="kafka"\} 0$/m);
      expect(text).toMatch(/^docstream_readiness_check\{check="api"\} 1$/m);
      expect(apiRuns).toBe(1);
      kafkaOk = true;
      text = await (await fetch(`${server.url}/metrics`)).text();
      expect(text).toMatch(/^docstream_ready 1$/m);
      expect(text).toMatch(/^docstream_readiness_check\{check="kafka"\} 1$/m);
      expect(apiRuns).toBe(2);
    } finally {
      await server.close();
    }
  });
});
