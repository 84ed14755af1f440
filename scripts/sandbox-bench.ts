/**
 * Measures the requests per second the sandbox serves on this machine: GET result calls, and
 * create + upload of a 1 MB file. The sandbox runs as its own process (the built CLI), the load
 * comes from this one. Bounded in count and time.
 *
 *   npm run build
 *   npx tsc --outDir .cache/bench --module NodeNext --moduleResolution NodeNext --target ES2023 \
 *     --skipLibCheck --types node --lib ES2023 scripts/sandbox-bench.ts
 *   node .cache/bench/sandbox-bench.js
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const CLI = join(process.cwd(), 'dist', 'cli', 'index.js');
const GET_CONCURRENCY = 32;
const GET_MAX_REQUESTS = 40_000;
const GET_MAX_MS = 8_000;
const UPLOAD_CONCURRENCY = 8;
const UPLOAD_MAX = 300;
const UPLOAD_MAX_MS = 15_000;
const FILE_BYTES = 1024 * 1024;

async function startSandboxProcess(): Promise<{ baseUrl: string; stop: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'sandbox',
      '--port',
      '0',
      '--log-level',
      'silent',
      '--processing',
      'fixed',
      '--processing-mean',
      '0.005',
      '--max-submissions',
      '64',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  const deadline = Date.now() + 20_000;
  while (!/base URL: +\S+/.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`sandbox did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const baseUrl = (/base URL: +(\S+)/.exec(out) as RegExpExecArray)[1] as string;
  return {
    baseUrl,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A valid PDF padded with a comment line to about `size` bytes. */
function paddedPdf(size: number, salt: number): Buffer {
  const header = '%PDF-1.4\n';
  const body =
    '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n' +
    '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n' +
    '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] >> endobj\n' +
    `4 0 obj << /Producer (bench ${salt}) >> endobj\n`;
  const trailer = 'trailer << /Root 1 0 R /Info 4 0 R >>\n%%EOF\n';
  const pad = Math.max(0, size - header.length - body.length - trailer.length - 2);
  return Buffer.from(`${header}%${'x'.repeat(pad)}\n${body}${trailer}`, 'latin1');
}

async function run(concurrency: number, maxCount: number, maxMs: number, op: () => Promise<void>) {
  let started = 0;
  let failed = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (started < maxCount && performance.now() - t0 < maxMs) {
      started++;
      try {
        await op();
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return {
    operations: started,
    failed,
    seconds: Number(seconds.toFixed(2)),
    perSecond: Math.round(started / seconds),
  };
}

async function main(): Promise<void> {
  const sandbox = await startSandboxProcess();
  try {
    const tokenRes = await fetch(`${sandbox.baseUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('sandbox-client:sandbox-secret').toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const auth = { authorization: `Bearer ${token}` };
    const create = async () => {
      const res = await fetch(`${sandbox.baseUrl}/v2/submission`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"query_id":"bench"}',
      });
      if (res.status !== 200) throw new Error(`create ${res.status}`);
      return (await res.json()) as { submission_id: string; upload_url: string };
    };
    const put = async (url: string, body: Buffer) => {
      const res = await fetch(url, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body,
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`upload ${res.status}`);
    };

    const one = await create();
    await put(one.upload_url, paddedPdf(50_000, 0));
    const fraudUrl = `${sandbox.baseUrl}/v2/submission/${one.submission_id}/fraud`;
    for (let i = 0; i < 200 && (await fetch(fraudUrl, { headers: auth })).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const gets = await run(GET_CONCURRENCY, GET_MAX_REQUESTS, GET_MAX_MS, async () => {
      const res = await fetch(fraudUrl, { headers: auth });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`get ${res.status}`);
    });

    const file = paddedPdf(FILE_BYTES, 1);
    let n = 0;
    const uploads = await run(UPLOAD_CONCURRENCY, UPLOAD_MAX, UPLOAD_MAX_MS, async () => {
      const s = await create();
      // A distinct last byte per upload so files differ without rebuilding a megabyte each time.
      const copy = Buffer.from(file);
      copy[copy.length - 2] = 48 + (n++ % 10);
      await put(s.upload_url, copy);
    });
    const mb = (uploads.operations * FILE_BYTES) / (1024 * 1024);
    console.log(
      JSON.stringify(
        {
          machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
          getFraudResult: { concurrency: GET_CONCURRENCY, ...gets },
          createAndUpload1MB: {
            concurrency: UPLOAD_CONCURRENCY,
            ...uploads,
            megabytesPerSecond: Number((mb / uploads.seconds).toFixed(1)),
          },
        },
        null,
        2,
      ),
    );
  } finally {
    await sandbox.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
