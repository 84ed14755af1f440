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
});
