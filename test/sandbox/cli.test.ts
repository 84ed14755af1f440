/** `docstream sandbox` as a user runs it: the built CLI (npm run test:integration builds first). */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLI = join(process.cwd(), 'dist', 'cli', 'index.js');

/** Secret files written by this file's tests, removed after them. */
const written: string[] = [];

/** A file holding `content`, as a secret is given to the sandbox (never as a flag value). */
function secretFile(name: string, content: string): string {
  const file = join(tmpdir(), `sandbox-${name}-${process.pid}`);
  writeFileSync(file, `${content}\n`);
  written.push(file);
  return file;
}

afterAll(() => {
  for (const file of written) rmSync(file, { force: true });
});

describe('docstream sandbox CLI', () => {
  test('--help documents every knob', () => {
    const out = spawnSync(process.execPath, [CLI, 'sandbox', '--help'], { encoding: 'utf8' });
    expect(out.status).toBe(0);
    for (const flag of [
      '--config',
      '--host',
      '--port',
      '--token-ttl',
      '--processing',
      '--processing-mean',
      '--seed',
      '--rate-limit',
      '--burst',
      '--retry-after-format',
      '--error-rate',
      '--extra-latency',
      '--drop-rate',
      '--storm-429',
      '--pipeline-fail-rate',
      '--webhook-url',
      '--webhook-secret-file',
      '--webhook-duplicate-rate',
      '--webhook-out-of-order',
      '--webhook-max-attempts',
      '--webhook-retry-base',
      '--decision-rule',
      '--max-upload-bytes',
      '--max-submissions',
      '--storage-dir',
      '--upload-url-ttl',
      '--report-url-ttl',
      '--serve-cell',
    ]) {
      expect(out.stdout).toContain(flag);
    }
  });

  test.each([
    [['--port', 'abc'], /--port/],
    [['--error-rate', '2'], /--error-rate/],
    [['--processing', 'normal'], /--processing/],
    [
      ['--extra-latency', '30ms'],
      /--extra-latency <seconds>' argument '30ms' is invalid\. must be a number of seconds/,
    ],
    [['--decision-rule', 'GOOD=YES'], /--decision-rule/],
    [['--max-upload-bytes', '12 parsecs'], /--max-upload-bytes/],
    [['--serve-cell', 'mars-1'], /--serve-cell <name\[=port\]>' argument 'mars-1' is invalid/],
    [['--port', '8089', '--serve-cell', 'eu-1=8089'], /cells\.eu-1\.port: 8089 is already the port/],
    [['--webhook-secret-file', secretFile('bad-secret', 'not-a-secret')], /webhook\.secret: must be whsec_/],
    [
      ['--webhook-secret-file', '/nonexistent/whsec'],
      /--webhook-secret-file \/nonexistent\/whsec: cannot read it/,
    ],
  ])('bad value %j exits 2 with a clear message', (args, pattern) => {
    const out = spawnSync(process.execPath, [CLI, 'sandbox', ...args], { encoding: 'utf8', timeout: 20_000 });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(pattern);
  });

  test('--webhook-secret-file gives the signing secret from a file', async () => {
    const secret = 'whsec_c2FuZGJveC1jbGktdGVzdC1zZWNyZXQ=';
    const child = spawn(
      process.execPath,
      [
        CLI,
        'sandbox',
        '--port',
        '0',
        '--log-level',
        'silent',
        '--webhook-secret-file',
        secretFile('secret', secret),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    for (let i = 0; i < 200 && !out.includes('client:') && child.exitCode === null; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(out).not.toMatch(/received array/);
    expect(out).toContain('base URL:');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test('an invalid --config file exits 2 naming the field', () => {
    const file = join(tmpdir(), `sandbox-config-${process.pid}.json`);
    writeFileSync(file, JSON.stringify({ rateLimit: { ratePerSecond: -1, burst: 1 } }));
    const out = spawnSync(process.execPath, [CLI, 'sandbox', '--config', file], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    rmSync(file, { force: true });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/rateLimit\.ratePerSecond/);
  });

  test('durations in seconds, an old …-ms flag still read (warned once), -c files in order', async () => {
    const first = join(tmpdir(), `sandbox-c1-${process.pid}.json`);
    const second = join(tmpdir(), `sandbox-c2-${process.pid}.json`);
    writeFileSync(first, JSON.stringify({ maxSubmissions: 100, seed: 7 }));
    writeFileSync(second, JSON.stringify({ maxSubmissions: 200 }));
    const child = spawn(
      process.execPath,
      [
        CLI,
        'sandbox',
        ...['-c', first, '-c', second, '--port', '0', '--log-level', 'silent'],
        ...['--processing', 'fixed', '--processing-mean', '0.07', '--webhook-retry-base-ms', '1500'],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      for (let i = 0; i < 200 && !out.includes('client:') && child.exitCode === null; i++)
        await new Promise((r) => setTimeout(r, 50));
      const base = /base URL: +(\S+)/.exec(out)?.[1];
      const config = (await (await fetch(`${base}/_sandbox/config`)).json()) as {
        processing: { meanMs: number };
        webhook: { retryBaseMs: number };
        maxSubmissions: number;
        seed: number;
      };
      expect([
        config.processing.meanMs,
        config.webhook.retryBaseMs,
        config.maxSubmissions,
        config.seed,
      ]).toEqual([70, 1500, 200, 7]);
      expect(err).toBe(
        'docstream sandbox: warning: --webhook-retry-base-ms is deprecated; use --webhook-retry-base\n',
      );
    } finally {
      child.kill('SIGTERM');
      rmSync(first, { force: true });
      rmSync(second, { force: true });
    }
    expect(await exited).toBe(0);
  });

  test('starts, prints base URL, token URL and credentials, and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [CLI, 'sandbox', '--port', '0', '--log-level', 'silent'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    for (let i = 0; i < 200 && !out.includes('client:'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out).toMatch(/base URL: +http:\/\/127\.0\.0\.1:\d+/);
    expect(out).toMatch(/token URL: +http:\/\/127\.0\.0\.1:\d+\/oauth2\/token/);
    expect(out).toContain('sandbox-client / sandbox-secret');
    const base = /base URL: +(\S+)/.exec(out)?.[1];
    const res = await fetch(`${base}/_sandbox/stats`);
    expect(res.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test("serves several cells (--config tenants, --serve-cell), prints each cell's URLs, never a tenant secret", async () => {
    const file = join(tmpdir(), `sandbox-org-${process.pid}.json`);
    const secret = `acme-secret-${process.pid}`;
    writeFileSync(
      file,
      JSON.stringify({
        cells: { 'eu-1': {} },
        tenants: [
          { name: 'acme', cells: ['eu-1'], applications: [{ clientId: 'acme-app', clientSecret: secret }] },
        ],
      }),
    );
    written.push(file);
    const child = spawn(
      process.execPath,
      [CLI, 'sandbox', '-c', file, '--port', '0', '--serve-cell', 'us-1'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      for (let i = 0; i < 200 && !out.includes('webhook:') && child.exitCode === null; i++)
        await new Promise((r) => setTimeout(r, 50));
      const eu = /cell eu-1:\n +base URL: +(\S+)\n +token URL: +(\S+)/.exec(out);
      const us = /cell us-1:\n +base URL: +(\S+)\n +token URL: +(\S+)/.exec(out);
      expect(eu?.[2]).toBe(`${eu?.[1]}/oauth2/token`);
      expect(us?.[2]).toBe(`${us?.[1]}/oauth2/token`);
      expect(new Set([eu?.[1], us?.[1], /base URL: +(\S+)/.exec(out)?.[1]]).size).toBe(3);
      expect(out).toMatch(/tenant: +acme \(id acme, cell eu-1\) application acme-app +client_secret/);
      const token = (url: string) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=client_credentials&client_id=acme-app&client_secret=${secret}`,
        });
      expect((await token(eu?.[2] as string)).status).toBe(200);
      expect((await token(us?.[2] as string)).status).toBe(401);
      expect(out + err).not.toContain(secret);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(out + err).not.toContain(secret);
  });
});
