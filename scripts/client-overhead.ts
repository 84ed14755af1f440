/**
 * Measures the client's own overhead per call: the same GET answered by the same local
 * server, once through DocumentAnalysisClient (limiter, token cache, retry wrapper, zod
 * validation) and once as a bare got call with a fixed bearer token and JSON.parse.
 * Reports, asserts nothing. Bounded: at most N calls per side and a wall-clock deadline.
 *
 *   npm run build:scripts && node .cache/scripts/scripts/client-overhead.js [N]
 *   node .cache/scripts/scripts/client-overhead.js --concurrent   CPU per call: node:http, got, client
 */
import { fork } from 'node:child_process';
import http, { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { got } from 'got';
import { DocumentAnalysisClient } from '../src/client/client.js';

const N = Math.min(
  500,
  Math.max(10, Number(process.argv[2]?.startsWith('--') ? 500 : (process.argv[2] ?? 500))),
);
const DEADLINE_MS = 60_000;
const ID = 'sub-0123456789abcdef0123456';

const body = JSON.stringify({
  status: 'SUCCESS',
  analysis_time: '2026-01-01T00:00:00Z',
  file_type: 'pdf',
  mime_type: 'application/pdf',
  deployment_version: '1.0',
  query_id: 'q-1',
  sha256: 'a'.repeat(64),
  filtered_parsed_pages: [],
  num_pages: 2,
  document_tags: ['PDF', 'DIGITAL'],
  score: 'WARNING',
  sample_metadata: { producer: 'x', creator: 'y' },
  indicators: Array.from({ length: 5 }, (_, i) => ({
    indicator_id: `ind-${i}`,
    type: 'RISK',
    category: 'modification',
    title: `Indicator ${i}`,
    description: 'A finding.',
    origin: 'fraud',
  })),
});

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function describe(label: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  return `${label.padEnd(8)} n=${samples.length} mean=${mean.toFixed(3)}ms p50=${percentile(sorted, 50).toFixed(3)}ms p95=${percentile(sorted, 95).toFixed(3)}ms`;
}

/** Concurrent calls, in bounded count: CPU per call of this process (the server runs in a child). */
async function cpuPerCall(call: () => Promise<unknown>, calls: number, concurrency: number): Promise<number> {
  let next = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < calls) await call();
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / calls;
}

function nodeHttpGet(agent: http.Agent, url: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      url,
      { agent, headers: { authorization: 'Bearer tok', accept: 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(JSON.parse(text) as unknown));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

/**
 * `--concurrent`: the server in a child process, so this process's CPU is the client's alone;
 * 2000 GETs at 32 concurrent through node:http, got (extended once, keep-alive) and the client.
 */
async function concurrent(): Promise<void> {
  const server = fork(new URL(import.meta.url).pathname, ['--server'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve) => server.once('message', (m) => resolve(m as number)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const url = `${baseUrl}/v2/submission/${ID}/fraud`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 });
  const bareGot = got.extend({
    agent: { http: agent },
    headers: { authorization: 'Bearer tok', accept: 'application/json' },
    throwHttpErrors: false,
    retry: { limit: 0 },
    responseType: 'text',
  });
  const client = new DocumentAnalysisClient({
    baseUrl,
    clientId: 'bench',
    clientSecret: 'bench',
    rateLimit: { ratePerSecond: 1_000_000, burst: 1000 },
  });
  const sides: Record<string, () => Promise<unknown>> = {
    'node:http': () => nodeHttpGet(agent, url),
    got: async () => JSON.parse((await bareGot(url)).body) as unknown,
    client: () => client.getFraud(ID),
  };
  const results: Record<string, number[]> = {};
  for (let round = 0; round < 3; round++) {
    for (const [name, call] of Object.entries(sides)) {
      if (round === 0) await cpuPerCall(call, 300, 32);
      (results[name] ??= []).push(await cpuPerCall(call, 2000, 32));
    }
  }
  server.kill();
  for (const [name, values] of Object.entries(results)) {
    const best = Math.min(...values);
    process.stdout.write(
      `${name.padEnd(10)} CPU per call: best of 3 ${best.toFixed(3)} ms (${values.map((v) => v.toFixed(3)).join(', ')})\n`,
    );
  }
}

function serve(): void {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        req.url === '/oauth2/token'
          ? JSON.stringify({ access_token: 'tok', token_type: 'Bearer', expires_in: 3600 })
          : body,
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
}

async function main(): Promise<void> {
  if (process.argv[2] === '--server') return serve();
  if (process.argv[2] === '--concurrent') return concurrent();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/oauth2/token') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: 'tok', token_type: 'Bearer', expires_in: 3600 }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A ceiling far above what one sequential caller reaches: this measures the limiter's
  // bookkeeping, not its waiting.
  const client = new DocumentAnalysisClient({
    baseUrl,
    clientId: 'bench',
    clientSecret: 'bench',
    rateLimit: { ratePerSecond: 1_000_000, burst: 1000 },
  });
  const url = `${baseUrl}/v2/submission/${ID}/fraud`;
  const bare = async () => {
    const response = await got(url, {
      headers: { authorization: 'Bearer tok', accept: 'application/json' },
      throwHttpErrors: false,
      retry: { limit: 0 },
      responseType: 'text',
    });
    return JSON.parse(response.body) as unknown;
  };
  const viaClient = () => client.getFraud(ID);

  const started = Date.now();
  for (let i = 0; i < 50; i++) {
    await bare();
    await viaClient();
  }
  const samples = { bare: [] as number[], client: [] as number[] };
  // CPU of this process (the in-process server's share is the same for both sides).
  const cpu = { bare: 0, client: 0 };
  const cpuNow = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  // Interleaved, so drift of the shared machine affects both sides alike.
  for (let i = 0; i < N && Date.now() - started < DEADLINE_MS; i++) {
    let t = performance.now();
    let c = cpuNow();
    await bare();
    samples.bare.push(performance.now() - t);
    cpu.bare += cpuNow() - c;
    t = performance.now();
    c = cpuNow();
    await viaClient();
    samples.client.push(performance.now() - t);
    cpu.client += cpuNow() - c;
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));

  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  process.stdout.write(
    [
      describe('bare got', samples.bare),
      describe('client', samples.client),
      `overhead per call: mean ${(mean(samples.client) - mean(samples.bare)).toFixed(3)}ms, ` +
        `median ${(median(samples.client) - median(samples.bare)).toFixed(3)}ms`,
      `CPU per call (client + in-process server): bare ${(cpu.bare / 1000 / samples.bare.length).toFixed(3)}ms, ` +
        `client ${(cpu.client / 1000 / samples.client.length).toFixed(3)}ms`,
    ].join('\n') + '\n',
  );
}

void main();
