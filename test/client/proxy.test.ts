/**
 * Through a company's proxy: a real CONNECT proxy (the npm package `proxy`) on loopback, asking
 * for credentials and logging each tunnel it opens. `docstream analyze` reads HTTP_PROXY from the
 * environment and sends its token request, API calls and upload through it; the http(s) blob
 * source, given api.proxyUrl, fetches through it, and trusts an https blob host's own CA from
 * api.caFile. The proxy's log, not the client's word, shows each went through.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { PDFDocument } from 'pdf-lib';
import { createProxy, type ProxyServer } from 'proxy';
import { createBlobSource } from '../../src/blobs/index.js';
import { policy, readAll } from '../../src/blobs/test-helpers.js';
import { buildProgram, runProgram } from '../../src/cli/program.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { egressOf } from '../../src/config/egress.js';
import { closeServer, listenOnLoopback } from '../harness/proxy.js';

jest.setTimeout(60_000);

const PROXY_USER = 'egress';
const PROXY_PASSWORD = 'proxy-pass-7f3k';

let sandbox: Sandbox;
let proxy: ProxyServer;
let proxyUrl: string;
/** Each CONNECT (or plain request) the proxy accepted: `CONNECT host:port`. */
let proxyLog: string[] = [];
let refused = 0;
let blobServer: http.Server;
let blobTlsServer: https.Server;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'proxy-it-'));
  sandbox = await startSandbox({ processing: { distribution: 'fixed', meanMs: 50 }, seed: 3 });
  proxy = createProxy(http.createServer());
  const expected = `Basic ${Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64')}`;
  proxy.authenticate = (req) => {
    const ok = req.headers['proxy-authorization'] === expected;
    if (ok) proxyLog.push(`${req.method} ${req.url}`);
    else refused++;
    return ok;
  };
  proxyUrl = `http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:${await listenOnLoopback(proxy)}`;
  blobServer = http.createServer((req, res) => res.end(`plain blob ${req.url}`));
  // An https blob host whose certificate only the CA of api.caFile vouches for.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  blobTlsServer = https.createServer(
    { key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')) },
    (req, res) => res.end(`tls blob ${req.url}`),
  );
});

afterAll(async () => {
  await sandbox.close();
  await closeServer(proxy);
  if (blobServer.listening) await closeServer(blobServer);
  if (blobTlsServer.listening) await closeServer(blobTlsServer);
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  proxyLog = [];
  refused = 0;
});

async function runCli(args: string[]): Promise<{ exitCode: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err.push(String(chunk));
    return true;
  });
  process.exitCode = undefined;
  let failed: number | undefined;
  try {
    failed = await runProgram(buildProgram(), ['node', 'docstream', ...args]);
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
  const exitCode = Number(failed ?? process.exitCode ?? 0);
  process.exitCode = undefined;
  return { exitCode, out: out.join(''), err: err.join('') };
}

async function withEnv<T>(vars: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('docstream analyze through HTTP_PROXY', () => {
  it('sends the token request, the API calls and the upload through the proxy', async () => {
    const doc = await PDFDocument.create();
    doc.addPage([200, 100]);
    const file = join(dir, 'through-proxy.pdf');
    await writeFile(file, Buffer.from(await doc.save()));
    const api = new URL(sandbox.baseUrl);
    // The token endpoint on another origin of the same sandbox: its own tunnel in the proxy's log.
    const tokenUrl = `http://localhost:${api.port}/oauth2/token`;
    const result = await withEnv({ HTTP_PROXY: proxyUrl, NO_PROXY: '' }, () =>
      runCli(['analyze', file, '--base-url', sandbox.baseUrl, '--token-url', tokenUrl, '--json']),
    );
    expect({
      exitCode: result.exitCode,
      err: result.err.split('\n').filter((l) => l.startsWith('docstream analyze:')),
    }).toEqual({
      exitCode: 0,
      err: [],
    });
    expect((JSON.parse(result.out) as { fraud?: { status?: string } }).fraud?.status).toBe('SUCCESS');
    expect(proxyLog).toContain(`CONNECT localhost:${api.port}`);
    expect(proxyLog).toContain(`CONNECT ${api.host}`);
    expect(refused).toBe(0);
    expect(result.out + result.err).not.toContain(PROXY_PASSWORD);
  });

  it('fails, without showing the password, when the proxy refuses the credentials', async () => {
    const wrong = proxyUrl.replace(PROXY_PASSWORD, 'wrong-pass-19x');
    const result = await withEnv({ HTTP_PROXY: wrong, NO_PROXY: '' }, () =>
      runCli([
        'analyze',
        join(dir, 'through-proxy.pdf'),
        '--base-url',
        sandbox.baseUrl,
        '--request-timeout',
        '5',
      ]),
    );
    expect(refused).toBeGreaterThan(0);
    expect(proxyLog).toEqual([]);
    expect(result.exitCode).not.toBe(0);
    expect(result.err).toMatch(/^docstream analyze: /m);
    expect(result.err).not.toContain('wrong-pass-19x');
  });

  it('goes direct for a host NO_PROXY names', async () => {
    const result = await withEnv({ HTTP_PROXY: proxyUrl, NO_PROXY: '127.0.0.1,localhost' }, () =>
      runCli(['analyze', join(dir, 'through-proxy.pdf'), '--base-url', sandbox.baseUrl, '--json']),
    );
    expect(result.exitCode).toBe(0);
    expect(proxyLog).toEqual([]);
  });
});

describe('http(s) blobs through api.proxyUrl', () => {
  it('fetches an http blob and an https blob (trusted by api.caFile) through the proxy', async () => {
    const plainPort = await listenOnLoopback(blobServer);
    const tlsPort = await listenOnLoopback(blobTlsServer);
    const blobs = createBlobSource(
      policy({ httpHosts: [`127.0.0.1:${plainPort}`, `127.0.0.1:${tlsPort}`], allowPrivateNetworks: true }),
      { egress: egressOf({ proxyUrl, noProxy: '', caFile: join(dir, 'cert.pem') }, {}) },
    );
    try {
      const plain = await blobs.resolve({ url: `http://127.0.0.1:${plainPort}/a.pdf` });
      expect((await readAll(await plain.open())).toString()).toBe('plain blob /a.pdf');
      const secure = await blobs.resolve({ url: `https://127.0.0.1:${tlsPort}/b.pdf` });
      expect((await readAll(await secure.open())).toString()).toBe('tls blob /b.pdf');
    } finally {
      blobs.close();
    }
    expect(proxyLog).toEqual([`CONNECT 127.0.0.1:${plainPort}`, `CONNECT 127.0.0.1:${tlsPort}`]);
  });

  it('refuses the https blob host without api.caFile', async () => {
    const tlsPort = (blobTlsServer.address() as AddressInfo).port;
    const blobs = createBlobSource(
      policy({ httpHosts: [`127.0.0.1:${tlsPort}`], allowPrivateNetworks: true }),
      { egress: egressOf({ proxyUrl, noProxy: '', caFile: '' }, {}) },
    );
    try {
      await expect(blobs.resolve({ url: `https://127.0.0.1:${tlsPort}/b.pdf` })).rejects.toThrow(
        /could not be fetched/,
      );
    } finally {
      blobs.close();
    }
    expect(proxyLog).toEqual([`CONNECT 127.0.0.1:${tlsPort}`]);
  });
});
