/**
 * `registry.autoRegister: false` against the real registry, as a platform team governs it: a loopback
 * proxy in front of the stack's registry refuses every write (schema registration, compatibility
 * change) with 403, as such registries refuse applications. `docstream run` (the built CLI) then
 * starts on subjects registered beforehand and carries a document end to end, writing nothing; with
 * a subject missing, or holding another schema only, it exits 1 naming that subject.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sampleBytes } from '../../src/demo/corpus.js';
import type { AvroSchemaName } from '../../src/serde/avro-schemas.js';
import { valueSubject } from '../../src/serde/registry.js';
import { E2E, REGISTRY_URL, arrival, exitOf } from '../harness/e2e.js';
import { forward } from '../harness/proxy.js';

/** The output topics and the schema docstream writes to each (src/connector/topology.ts). */
const OUTPUT_SCHEMAS: Array<['fraud' | 'quality' | 'classification' | 'decision' | 'dlq', AvroSchemaName]> = [
  ['fraud', 'FraudResult'],
  ['quality', 'QualityResult'],
  ['classification', 'ClassificationResult'],
  ['decision', 'DecisionResult'],
  ['dlq', 'DeadLetter'],
];

interface GovernedRegistry {
  url: string;
  /** Write requests refused (method and path): docstream must send none. */
  writes: string[];
  close(): Promise<void>;
}

async function governedRegistry(): Promise<GovernedRegistry> {
  const upstream = new URL(REGISTRY_URL);
  const writes: string[] = [];
  const server = http.createServer((req, res) => {
    const write =
      (req.method === 'POST' && /\/subjects\/[^/]+\/versions$/.test(req.url ?? '')) ||
      (req.method === 'PUT' && /\/config(\/|$)/.test(req.url ?? '')) ||
      req.method === 'DELETE';
    if (write) {
      writes.push(`${req.method} ${req.url}`);
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error_code: 40301, message: 'applications may not change schemas' }));
      return;
    }
    forward(upstream, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    writes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('registry.autoRegister: false (a registry that refuses applications’ registrations)', () => {
  let governed: GovernedRegistry;
  const envs: E2E[] = [];

  beforeAll(async () => {
    governed = await governedRegistry();
  });
  afterAll(async () => {
    for (const env of envs) await env.stop();
    await governed.close();
  });

  async function environment(): Promise<E2E> {
    const env = new E2E();
    envs.push(env);
    await env.start();
    return env;
  }

  /** Registers, as the platform team would (directly, not through the proxy), each listed schema. */
  async function registerAhead(
    env: E2E,
    schemas: Array<[keyof E2E['topics'], AvroSchemaName]>,
  ): Promise<void> {
    for (const [kind, name] of schemas)
      await env.registry.registerValueSchema(env.topics[kind] as string, name);
  }

  async function startupFailure(env: E2E): Promise<string> {
    const child = env.spawnConnector({ registry: { url: governed.url, autoRegister: false } });
    expect(await exitOf(child, 90_000)).toBe(1);
    return env.childLogs.at(-1)!.join('');
  }

  it('starts on the subjects registered beforehand, writes nothing to the registry, and carries a document', async () => {
    const env = await environment();
    await registerAhead(env, OUTPUT_SCHEMAS);
    const writesBefore = governed.writes.length;
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const child = env.spawnConnector({ registry: { url: governed.url, autoRegister: false } });
    await env.collect();
    const eventId = `${env.id}-doc`;
    await env.produce([arrival(eventId, file)]);
    await env.waitForResults(eventId);
    expect(child.exitCode).toBeNull();
    expect(governed.writes.slice(writesBefore)).toEqual([]);
    child.kill('SIGTERM');
    expect(await exitOf(child, 40_000)).toBe(0);
  });

  it('the same registry refuses a connector that registers (autoRegister true): the proxy stands for a governed one', async () => {
    const env = await environment();
    await registerAhead(env, OUTPUT_SCHEMAS);
    const writesBefore = governed.writes.length;
    const child = env.spawnConnector({ registry: { url: governed.url } });
    expect(await exitOf(child, 90_000)).toBe(1);
    expect(governed.writes.length).toBeGreaterThan(writesBefore);
  });

  it('exits 1 naming the subject that is missing, having registered nothing', async () => {
    const env = await environment();
    await registerAhead(
      env,
      OUTPUT_SCHEMAS.filter(([kind]) => kind !== 'decision'),
    );
    const writesBefore = governed.writes.length;
    const log = await startupFailure(env);
    const subject = valueSubject(env.topics.decision);
    expect(log).toContain(`subject ${subject} is not in the registry`);
    expect(log).toContain('registry.autoRegister');
    expect(governed.writes.slice(writesBefore)).toEqual([]);
    const versions = await fetch(`${REGISTRY_URL}/subjects/${encodeURIComponent(subject)}/versions`);
    expect(versions.status).toBe(404);
  });

  it('exits 1 naming the subject that holds another schema only', async () => {
    const env = await environment();
    await registerAhead(env, [
      ['fraud', 'QualityResult'],
      ...OUTPUT_SCHEMAS.filter(([kind]) => kind !== 'fraud'),
    ]);
    const log = await startupFailure(env);
    expect(log).toContain(
      `subject ${valueSubject(env.topics.fraud)} has no version with docstream's FraudResult schema`,
    );
  });
});
