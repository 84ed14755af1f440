/**
 * The sandbox's CPU per document under a connector-like load. The sandbox runs in this process,
 * started like the benchmark starts it (processing fixed 200 ms, a rate limit that never binds);
 * the load comes from a child process so that this process's CPU is the sandbox's alone. Each
 * document is token-authenticated create → PUT upload of a demo corpus file → wait for the
 * result → three GETs of results. Bounded: `--docs` documents (default 2000), `--concurrency`
 * (default 200), and at most 30 s of load.
 *
 *   npm run build:scripts
 *   node --cpu-prof --cpu-prof-dir=.cache/prof .cache/scripts/scripts/sandbox-load.js --docs 2000
 *   node .cache/scripts/scripts/profile-top.js .cache/prof/<file>.cpuprofile
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeCorpus, type SampleKind } from '../src/demo/corpus.js';
import { startSandbox } from '../src/sandbox/index.js';

const KINDS: SampleKind[] = ['clean-pdf', 'edited-pdf', 'trusted-pdf', 'backdated-pdf', 'png-image'];
const GETS = ['fraud', 'quality', 'classification'] as const;
const LATENCY_MS = 200;
const MAX_LOAD_MS = 30_000;
const WARMUP_DOCS = 200;

interface DriveOrder {
  baseUrl: string;
  files: string[];
  docs: number;
  concurrency: number;
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
}

// ---- load side (child process) -----------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function request(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function drive(order: DriveOrder, send: (m: unknown) => void): Promise<void> {
  const files = order.files.map((f) => fs.readFileSync(f));
  const basic = Buffer.from('sandbox-client:sandbox-secret').toString('base64');
  const token = await request(
    `${order.baseUrl}/oauth2/token`,
    'POST',
    { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    'grant_type=client_credentials',
  );
  let notReady = 0;
  const auth = `Bearer ${(JSON.parse(token.body) as { access_token: string }).access_token}`;
  const one = async (n: number) => {
    const created = await request(
      `${order.baseUrl}/v2/submission`,
      'POST',
      { authorization: auth, 'content-type': 'application/json' },
      JSON.stringify({ query_id: `load-${n}` }),
    );
    if (created.status !== 200) throw new Error(`create ${created.status}`);
    const { submission_id: id, upload_url: uploadUrl } = JSON.parse(created.body) as {
      submission_id: string;
      upload_url: string;
    };
    const file = files[n % files.length] as Buffer;
    const put = await request(uploadUrl, 'PUT', { 'content-type': 'application/octet-stream' }, file);
    if (put.status !== 200) throw new Error(`upload ${put.status}`);
    await new Promise((r) => setTimeout(r, LATENCY_MS + 20));
    for (const kind of GETS) {
      for (let attempt = 0; ; attempt++) {
        const got = await request(`${order.baseUrl}/v2/submission/${id}/${kind}`, 'GET', {
          authorization: auth,
        });
        if (got.status === 200) break;
        if (got.status !== 404 || attempt > 50) throw new Error(`${kind} ${got.status}`);
        notReady++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const run = async (docs: number, offset: number) => {
    let next = 0;
    let failed = 0;
    const t0 = Date.now();
    const worker = async () => {
      while (next < docs && Date.now() - t0 < MAX_LOAD_MS) {
        const n = offset + next++;
        await one(n).catch(() => failed++);
      }
    };
    await Promise.all(Array.from({ length: order.concurrency }, worker));
    return { docs: next, failed, notReady, ms: Date.now() - t0 };
  };
  await run(WARMUP_DOCS, 0);
  notReady = 0;
  send({ phase: 'start' });
  await new Promise((r) => setTimeout(r, 100));
  const measured = await run(order.docs, WARMUP_DOCS);
  send({ phase: 'done', ...measured });
}

// ---- sandbox side (this process) ---------------------------------------------------------------

async function main(): Promise<void> {
  if (process.argv[2] === 'drive') {
    process.once('message', (order: DriveOrder) => {
      drive(order, (m) => process.send?.(m)).then(
        () => process.disconnect(),
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
    });
    return;
  }
  const docs = arg('docs', 2000);
  const concurrency = arg('concurrency', 200);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-load-'));
  const files = (await writeCorpus(dir, KINDS)).map((s) => s.file);
  const sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: LATENCY_MS },
    rateLimit: { ratePerSecond: 1_000_000, burst: 1_000_000 },
    maxSubmissions: Math.max(1000, (docs + WARMUP_DOCS) * 2),
  });
  const child = fork(fileURLToPath(import.meta.url), ['drive'], { execArgv: [] });
  let cpu0 = process.cpuUsage();
  let elu0 = performance.eventLoopUtilization();
  type Done = { phase: string; docs: number; failed: number; notReady: number; ms: number };
  const done = new Promise<Done>((resolve, reject) => {
    child.on('message', (m: Done) => {
      if (m.phase === 'start') {
        cpu0 = process.cpuUsage();
        elu0 = performance.eventLoopUtilization();
      } else resolve(m);
    });
    child.on('exit', (code) => reject(new Error(`load process exited ${code}`)));
  });
  child.send({ baseUrl: sandbox.baseUrl, files, docs, concurrency } satisfies DriveOrder);
  try {
    const r = await done;
    const cpu = process.cpuUsage(cpu0);
    const elu = performance.eventLoopUtilization(elu0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(
      JSON.stringify({
        docs: r.docs,
        failed: r.failed,
        notReady404: r.notReady,
        seconds: r.ms / 1000,
        sandboxCpuMs: Math.round(cpuMs),
        userMs: Math.round(cpu.user / 1000),
        systemMs: Math.round(cpu.system / 1000),
        cpuMsPerDoc: Number((cpuMs / r.docs).toFixed(3)),
        eventLoopUtilization: Number(elu.utilization.toFixed(3)),
      }),
    );
  } finally {
    child.kill();
    await sandbox.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
