/**
 * `docstream config check --connect` (the built CLI) against the local stack's SCRAM-over-TLS
 * listener, the registry and a sandbox: a configuration that works is reported ok part by part and
 * exits 0; a topic that does not exist, a registry that does not answer, a wrong API secret and a
 * bucket that does not exist are each named with the setting to fix, and exit 1.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import type { Finding } from '../../src/preflight/index.js';
import { E2E } from '../harness/e2e.js';
import { S3_ENDPOINT, ScratchBucket } from '../harness/s3-store.js';
import { secureListeners } from '../harness/secure.js';

const CLI = path.resolve('dist/cli/index.js');

interface Report {
  code: number | null;
  ms: number;
  ok: boolean;
  findings: Finding[];
  stderr: string;
}

/** Runs the check with one configuration file and returns its JSON report. */
function check(file: string, extraEnv: Record<string, string> = {}): Promise<Report> {
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_'))),
    ...extraEnv,
  };
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [CLI, 'config', 'check', '--connect', '--json', '--timeout', '5', '-c', file],
    {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      try {
        const parsed = JSON.parse(stdout) as { ok: boolean; findings: Finding[] };
        resolve({ code, ms: Date.now() - started, ok: parsed.ok, findings: parsed.findings, stderr });
      } catch {
        reject(new Error(`no JSON report (exit ${code}): ${stdout}\n${stderr}`));
      }
    });
  });
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const missing = (r: Report) => r.findings.filter((f) => f.status === 'missing');

describe('docstream config check --connect on the secured stack', () => {
  const env = new E2E();
  const bucket = new ScratchBucket('config-check');
  let kafka: Record<string, unknown>;
  const reports = new Map<string, Promise<Report>>();

  beforeAll(async () => {
    await env.start();
    const s = secureListeners();
    kafka = {
      brokers: [s.scramTls.bootstrap],
      sslCaFile: s.caFile,
      saslMechanism: 'scram-sha-512',
      saslUsername: s.scramTls.username,
      saslPassword: s.scramTls.password,
    };
    const registryDown = `http://127.0.0.1:${await closedPort()}/apis/ccompat/v7`;
    // Side by side: each run is a child process of its own, the stack answers them all.
    await bucket.create();
    const blobs = {
      fileRoots: [env.dir],
      s3Buckets: [bucket.name],
      s3Endpoint: S3_ENDPOINT,
      s3Region: 'us-east-1',
      s3ForcePathStyle: true,
    };
    reports.set('good', check(env.writeConfig({ kafka, blobs })));
    reports.set(
      'bucket',
      check(env.writeConfig({ kafka, blobs: { ...blobs, s3Buckets: [`${bucket.name}-missing`] } })),
    );
    reports.set('topic', check(env.writeConfig({ kafka, topics: { arrived: `${env.id}.no-such-topic` } })));
    reports.set('registry', check(env.writeConfig({ kafka, registry: { url: registryDown } })));
    reports.set('secret', check(env.writeConfig({ kafka, api: { clientSecret: 'not-the-secret' } })));
    const secretFile = await env.writeFile('api-client-secret', Buffer.from('sandbox-secret'));
    reports.set(
      'exactly-once',
      check(env.writeConfig({ kafka, connector: { delivery: 'exactly-once' } }), {
        DOCSTREAM_API_CLIENT_SECRET_FILE: secretFile,
      }),
    );
    for (const r of reports.values()) r.catch(() => undefined);
  }, 60_000);

  afterAll(async () => {
    await env.stop();
    await bucket.remove();
  });

  it('reports every part ok for a configuration that works, and exits 0', async () => {
    const r = await reports.get('good')!;
    expect(missing(r)).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.ok).toBe(true);
    const parts = new Set(r.findings.map((f) => f.part));
    expect([...parts].sort()).toEqual(['acls', 'api', 'blobs', 'files', 'kafka', 'registry', 'topics']);
    const kafkaLine = r.findings.find((f) => f.part === 'kafka')!;
    expect(kafkaLine.detail).toMatch(/connected \(TLS, SASL SCRAM-SHA-512\)/);
    // Every topic of the topology, and the ACLs tried on them.
    for (const topic of [env.topics.arrived, env.topics.fraud, env.topics.dlq, env.topics.state]) {
      expect(r.findings.some((f) => f.part === 'topics' && f.subject === topic)).toBe(true);
    }
    expect(r.findings).toContainEqual(
      expect.objectContaining({ part: 'acls', subject: `Read on topic ${env.topics.arrived}`, status: 'ok' }),
    );
    expect(r.findings).toContainEqual(
      expect.objectContaining({ part: 'api', subject: 'api.clientId', status: 'ok' }),
    );
    expect(r.findings).toContainEqual(
      expect.objectContaining({ part: 'blobs', subject: `s3 bucket ${bucket.name}`, status: 'ok' }),
    );
    expect(JSON.stringify(r)).not.toContain(secureListeners().scramTls.password);
  });

  it('names a bucket that does not exist, with the settings to check, and exits 1', async () => {
    const r = await reports.get('bucket')!;
    expect(r.code).toBe(1);
    expect(missing(r)).toEqual([
      expect.objectContaining({
        part: 'blobs',
        subject: `s3 bucket ${bucket.name}-missing`,
        detail: expect.stringMatching(
          /does not exist at this endpoint: check blobs\.s3Buckets, blobs\.s3Endpoint/,
        ),
      }),
    ]);
  });

  it('names a topic that does not exist with the setting and the command that creates it, and exits 1', async () => {
    const r = await reports.get('topic')!;
    expect(r.code).toBe(1);
    expect(missing(r)).toEqual([
      expect.objectContaining({
        part: 'topics',
        subject: `${env.id}.no-such-topic`,
        detail: expect.stringMatching(
          /does not exist: check topics\.arrived .*kafka-topics\.sh --create --topic/,
        ),
      }),
    ]);
  });

  it('names a registry that does not answer, within the time bound, and exits 1', async () => {
    const r = await reports.get('registry')!;
    expect(r.code).toBe(1);
    expect(missing(r)).toEqual([
      expect.objectContaining({
        part: 'registry',
        detail: expect.stringMatching(/unreachable.*check registry\.url/),
      }),
    ]);
    expect(r.ms).toBeLessThan(30_000);
    // Kafka, the API and the blobs were still checked.
    expect(r.findings.filter((f) => f.part === 'topics' && f.status === 'ok').length).toBeGreaterThan(5);
  });

  it('names a wrong API secret, and exits 1', async () => {
    const r = await reports.get('secret')!;
    expect(r.code).toBe(1);
    expect(missing(r)).toEqual([
      expect.objectContaining({
        part: 'api',
        subject: 'api.clientId',
        detail: expect.stringMatching(/token endpoint refused the credentials.*api\.clientSecret/),
      }),
    ]);
    expect(JSON.stringify(r)).not.toContain('not-the-secret');
  });

  it('with exactly-once, tries the transactional ids (InitProducerId on a throwaway id), and names the secret file it read', async () => {
    const r = await reports.get('exactly-once')!;
    expect(missing(r)).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.findings).toContainEqual(
      expect.objectContaining({
        part: 'acls',
        subject: `Write on transactional ids ${env.config().kafka.groupId}-${env.topics.arrived}-*`,
        status: 'ok',
        detail: expect.stringMatching(/InitProducerId for the throwaway id .*-config-check-/),
      }),
    );
    expect(r.findings).toContainEqual(
      expect.objectContaining({ part: 'files', subject: 'DOCSTREAM_API_CLIENT_SECRET_FILE', status: 'ok' }),
    );
  });
});
