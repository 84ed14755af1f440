/**
 * No secret in any output: every secret setting gets a distinctive value, and every output of the
 * built CLI is scanned for them: `config check` (secrets with the wrong type), `config show`, `run`
 * start-up failures (wrong types, URLs with credentials, a refused combination), and a running
 * connector whose token endpoint echoes the request it was sent (Authorization header and body)
 * into its error answers: its dead letters, its log lines at debug level and its `/metrics`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const CLI = path.resolve('dist/cli/index.js');

/** A distinctive value for every secret setting of src/config/spec.ts. */
const SECRETS = {
  kafka: {
    sslKeyPassword: 'Kx7-sslkeypass-q81',
    saslPassword: 'Kx7-saslpass-q82',
    oauthClientSecret: 'Kx7-kafkaoauth-q83',
  },
  registry: {
    password: 'Kx7-registrypass-q84',
    bearerToken: 'Kx7-registrybearer-q85',
    oauthClientSecret: 'Kx7-registryoauth-q86',
    keyPassword: 'Kx7-registrykeypass-q87',
  },
  api: { clientSecret: 'Kx7-apiclient-q88' },
  webhooks: { secrets: [`whsec_${Buffer.from('Kx7-webhook-signing-q89').toString('base64')}`] },
};
const VALUES = Object.values(SECRETS).flatMap((section) =>
  Object.values(section).flatMap((v: string | string[]) => (Array.isArray(v) ? v : [v])),
);
/** What a scan looks for: each value, and the webhook key and the API's Basic credential as sent. */
const NEEDLES = [
  ...VALUES,
  Buffer.from('Kx7-webhook-signing-q89').toString('base64'),
  Buffer.from(`docstream-test:${SECRETS.api.clientSecret}`).toString('base64'),
];

function leaks(output: string): string[] {
  return NEEDLES.filter((needle) => output.includes(needle));
}

interface Ran {
  code: number | null;
  out: string;
}

/** Runs the built CLI with only the given DOCSTREAM_* variables. */
function cli(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Ran> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    }),
  );
}

/** Every secret as a DOCSTREAM_* variable. */
function secretEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [section, fields] of Object.entries(SECRETS)) {
    for (const [key, value] of Object.entries(fields as Record<string, string | string[]>)) {
      const name = `DOCSTREAM_${section}_${key}`.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
      env[name] = Array.isArray(value) ? value.join(',') : value;
    }
  }
  return env;
}

/** Every secret with the wrong type: a list holding it (a list: an object holding it). */
function wrongTypes(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [section, fields] of Object.entries(SECRETS)) {
    out[section] = {};
    for (const [key, value] of Object.entries(fields as Record<string, string | string[]>)) {
      out[section][key] = Array.isArray(value) ? { current: value[0] } : [value];
    }
  }
  return out;
}

/** A token endpoint that answers every request with an error quoting the whole request. */
async function echoingTokenEndpoint(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.entries(req.headers)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join('; ');
      const echo = `${req.method} ${req.url} ${headers}; body: ${Buffer.concat(chunks).toString('utf8')}`;
      seen.push(echo);
      // Both shapes an error body can have: RFC 6749's and the API's `message`.
      const body =
        seen.length % 2 === 1 ? { error: 'invalid_client', error_description: echo } : { message: echo };
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth2/token`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('no secret in any output', () => {
  const env = new E2E();
  let echo: Awaited<ReturnType<typeof echoingTokenEndpoint>>;
  beforeAll(async () => {
    await env.start();
    echo = await echoingTokenEndpoint();
  });
  afterAll(async () => {
    await env.stop();
    await echo.close();
  });

  it('config check: secrets with the wrong type, in JSON, and every secret in a .env file', async () => {
    const json = path.join(env.dir, 'wrong.json');
    fs.writeFileSync(json, JSON.stringify(wrongTypes()));
    const dotenv = path.join(env.dir, 'secrets.env');
    fs.writeFileSync(
      dotenv,
      Object.entries(secretEnv())
        .map(([k, v]) => `${k}=${v}`)
        .join('\n') + '\nDOCSTREAM_KAFKA_SASL_MECHANISM=sideways\n',
    );
    const checked = await cli(['config', 'check', json, dotenv]);
    expect(checked.code).toBe(2);
    // Every secret key is named as wrong, none of the values shown.
    for (const key of ['api.clientSecret', 'kafka.saslPassword', 'registry.bearerToken', 'webhooks.secrets'])
      expect(checked.out).toContain(`${key}: expected`);
    expect(leaks(checked.out)).toEqual([]);
  });

  it('config show, with every secret set', async () => {
    const shown = await cli(['config', 'show'], secretEnv());
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('[redacted]');
    expect(leaks(shown.out)).toEqual([]);
  });

  it('run: start-up failures for wrong types, URLs with credentials and a refused combination', async () => {
    const wrong = path.join(env.dir, 'wrong-run.json');
    fs.writeFileSync(wrong, JSON.stringify(wrongTypes()));
    const runs = [
      await cli(['run', '--config', wrong]),
      await cli(['run'], {
        ...secretEnv(),
        DOCSTREAM_REGISTRY_BEARER_TOKEN: '',
        DOCSTREAM_REGISTRY_USERNAME: 'docstream',
        DOCSTREAM_REGISTRY_URL: `http://docstream:${SECRETS.registry.password}@127.0.0.1:1/apis/ccompat/v7`,
        // The stack's Kafka (on whatever port it runs): the start-up gets past it to the registry.
        DOCSTREAM_KAFKA_BROKERS: process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092',
        DOCSTREAM_HTTP_PORT: '0',
        DOCSTREAM_LOG_LEVEL: 'debug',
        DOCSTREAM_LOG_FORMAT: 'json',
      }),
      await cli(['run'], {
        ...secretEnv(),
        // Plain http to another host: refused at load, naming the URL.
        DOCSTREAM_API_TOKEN_URL: `http://client:${SECRETS.api.clientSecret}@auth.example/oauth2/token`,
        DOCSTREAM_HTTP_PORT: '0',
        DOCSTREAM_LOG_FORMAT: 'json',
      }),
      // registry.username and registry.bearerToken: two ways to authenticate, refused.
      await cli(['run'], {
        ...secretEnv(),
        DOCSTREAM_REGISTRY_USERNAME: 'docstream',
        DOCSTREAM_HTTP_PORT: '0',
        DOCSTREAM_LOG_FORMAT: 'json',
      }),
    ];
    for (const ran of runs) {
      expect({ code: ran.code, out: ran.out.length > 0 }).toEqual({ code: expect.any(Number), out: true });
      expect(ran.code).not.toBe(0);
      expect(leaks(ran.out)).toEqual([]);
    }
    // The URL failure names the registry, its password redacted.
    expect(runs[1]!.out).toContain('docstream:[redacted]@127.0.0.1:1');
  });

  it('a running connector whose token endpoint echoes its request: dead letters, debug logs and /metrics', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const port = await freePort();
    const config = env.writeConfig({
      ...SECRETS,
      registry: { ...SECRETS.registry, username: 'docstream', bearerToken: '' },
      api: { ...SECRETS.api, clientId: 'docstream-test', tokenUrl: echo.url },
      http: { port },
    });
    const written = JSON.parse(fs.readFileSync(config, 'utf8')) as Record<string, Record<string, unknown>>;
    fs.writeFileSync(config, JSON.stringify({ ...written, log: { level: 'debug', format: 'json' } }));
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
    // registry.bearerToken is left out here (one way to authenticate: the user and password); the
    // start-up failures above carry it.
    const child = spawn(process.execPath, [CLI, 'run', '--config', config], {
      env: base,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (logs += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (logs += c));
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    try {
      await env.collect();
      await env.produce([arrival('secret-1', file), arrival('secret-2', file)]);
      await waitFor('a dead letter for each document', () => env.on('dlq').length >= 2, 60_000);
      // The endpoint was asked with the secret, and echoed it.
      expect(echo.seen.some((r) => r.includes('authorization: Basic '))).toBe(true);
      const deadLetters = env.on('dlq').map((l) => JSON.stringify(l));
      expect(deadLetters.join('\n')).toContain('[redacted]');
      expect(leaks(deadLetters.join('\n'))).toEqual([]);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('docstream_');
      expect(leaks(metrics)).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    expect(logs).toMatch(/"level":20/);
    expect(leaks(logs)).toEqual([]);
  });
});
