/**
 * The operations endpoint of a connector instance: `/metrics` (Prometheus text), `/healthz` (the
 * process is alive) and `/readyz` (every readiness check passes; 503 with the failing ones otherwise).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Gauge, type Registry } from 'prom-client';

type ReadinessCheck = () => Promise<{ ok: boolean; detail?: string }>;

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

async function runChecks(
  checks: Record<string, ReadinessCheck>,
): Promise<Array<readonly [string, { ok: boolean; detail?: string }]>> {
  return Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        return [name, await check()] as const;
      } catch (err) {
        return [name, { ok: false, detail: err instanceof Error ? err.message : String(err) }] as const;
      }
    }),
  );
}

/**
 * Readiness as metrics, evaluated at each scrape: Prometheus does not call /readyz, and an alert on
 * "not ready" needs the answer in /metrics. Registered once per registry.
 */
function registerReadinessGauges(registry: Registry, checks: Record<string, ReadinessCheck>): void {
  if (registry.getSingleMetric('docstream_ready')) return;
  // Both gauges are collected concurrently in one scrape: they share one run of the checks.
  let pending: ReturnType<typeof runChecks> | null = null;
  const evaluate = () => {
    pending ??= runChecks(checks).finally(() => {
      pending = null;
    });
    return pending;
  };
  new Gauge({
    name: 'docstream_readiness_check',
    help: 'Each readiness check of /readyz: 1 passing, 0 failing',
    labelNames: ['check'] as const,
    registers: [registry],
    async collect() {
      for (const [name, result] of await evaluate()) this.set({ check: name }, result.ok ? 1 : 0);
    },
  });
  new Gauge({
    name: 'docstream_ready',
    help: 'Whether every readiness check passes (what /readyz answers 200 for): 1 ready, 0 not',
    registers: [registry],
    async collect() {
      this.set((await evaluate()).every(([, r]) => r.ok) ? 1 : 0);
    },
  });
}

export async function startOpsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  checks: Record<string, ReadinessCheck>;
}): Promise<OpsServer> {
  registerReadinessGauges(options.registry, options.checks);
  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: err instanceof Error ? err.message : 'internal error' }));
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET', 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'only GET is allowed' }));
      return;
    }
    if (path === '/metrics') {
      const body = await options.registry.metrics();
      res.writeHead(200, { 'content-type': options.registry.contentType });
      res.end(body);
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok' }));
      return;
    }
    if (path === '/readyz') {
      const results = await runChecks(options.checks);
      const ready = results.every(([, r]) => r.ok);
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: ready ? 'ready' : 'not ready', checks: Object.fromEntries(results) }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: `no such endpoint: ${path}` }));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
