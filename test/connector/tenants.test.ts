/**
 * Many tenants on the real stack: three tenants in two cells of an organisation sandbox (each cell
 * its own listener and token endpoint; a token is valid only in its own cell, a submission only for
 * its own tenant) and the default credentials' sandbox, their events mixed on the same input
 * partitions. Checked from the sandbox side (its submissions and its call record): every document is
 * created in its tenant's cell by its tenant's application, and nowhere else; results carry the
 * tenant; a tenant added to the directory file while the connector runs is served within 10 s; a
 * removed tenant's new events wait, then are dead-lettered, and `docstream dlq redrive` has them
 * analysed once the tenant is back.
 */
import { jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Connector } from '../../src/connector/connector.js';
import { arrival, E2E, waitFor } from '../harness/e2e.js';
import { startOrganisationSandbox, type Organisation } from '../harness/organisation.js';

jest.setTimeout(180_000);

const CLI = path.resolve('dist/cli/index.js');

/** The built CLI, with none of this process's DOCSTREAM_ variables. */
async function cli(args: string[]): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, ...args], { env, timeout: 120_000 });
  return stdout;
}

interface OrgSubmission {
  id: string;
  cell: string;
  tenant_id: string | null;
  client_id: string;
  created: string;
}

describe('many tenants, each in its own cell with its own credentials', () => {
  const env = new E2E(3);
  let org: Organisation;
  let connector: Connector;
  let file: string;
  let directoryFile: string;
  let secrets: string;

  /** Writes the directory as a Secret update would: a new file renamed over the old one. */
  const writeDirectory = (names: string[]) => {
    const tenants: Record<string, unknown> = {};
    for (const name of names) {
      const t = org.tenants[name]!;
      tenants[name] =
        t.auth === 'client_secret'
          ? { cell: t.cell, clientId: t.clientId, clientSecretFile: `${name}.secret` }
          : { cell: t.cell, clientId: t.clientId, privateKeyFile: `${name}.pem`, kid: t.kid };
    }
    const next = `${directoryFile}.next`;
    fs.writeFileSync(next, JSON.stringify({ cells: org.cells, tenants }));
    fs.renameSync(next, directoryFile);
  };

  const connectorOverrides = () => ({
    tenants: { directoryFile, header: 'x-tenant', reloadIntervalMs: 500, unknownGraceMs: 5000 },
  });

  /** Waits until the connector's directory holds `n` tenants (the reload has happened). */
  const tenantsAre = async (n: number) => {
    const until = Date.now() + 10_000;
    while ((await tenantsGauge()) !== n && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await tenantsGauge()).toBe(n);
  };

  const tenantsGauge = async () => {
    const text = await connector.metrics.registry.getSingleMetricAsString('docstream_tenants');
    return Number(/^docstream_tenants (\d+)$/m.exec(text)?.[1] ?? -1);
  };

  /** The organisation sandbox's submissions made with this query id. */
  const orgSubmissions = async (queryId: string): Promise<OrgSubmission[]> => {
    const res = await fetch(
      `${org.sandbox.baseUrl}/_sandbox/submissions?query_id=${encodeURIComponent(queryId)}`,
    );
    return ((await res.json()) as { items: OrgSubmission[] }).items;
  };

  beforeAll(async () => {
    await env.start();
    org = await startOrganisationSandbox({
      cells: ['eu-1', 'us-1'],
      tenants: [
        { name: 'acme', cell: 'eu-1' },
        { name: 'globex', cell: 'eu-1', auth: 'client_secret' },
        { name: 'initech', cell: 'us-1' },
        { name: 'hooli', cell: 'us-1' },
        // An application whose own limit is far below what the connector would send.
        { name: 'umbrella', cell: 'us-1', rateLimit: { ratePerSecond: 4, burst: 2 } },
        // Its entry in the directory will hold a key the API does not know.
        { name: 'wayne', cell: 'eu-1' },
      ],
      config: { processing: { distribution: 'fixed', meanMs: 200 } },
    });
    secrets = path.join(env.dir, 'tenants');
    fs.mkdirSync(secrets);
    for (const t of Object.values(org.tenants)) {
      if (t.name === 'wayne') {
        const wrong = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
        fs.writeFileSync(path.join(secrets, 'wayne.pem'), wrong.export({ type: 'pkcs8', format: 'pem' }));
        continue;
      }
      if (t.privateKeyPem) fs.writeFileSync(path.join(secrets, `${t.name}.pem`), t.privateKeyPem);
      if (t.clientSecret) fs.writeFileSync(path.join(secrets, `${t.name}.secret`), `${t.clientSecret}\n`);
    }
    directoryFile = path.join(secrets, 'directory.json');
    writeDirectory(['acme', 'globex', 'initech']);
    file = await env.writeFile('doc.pdf', Buffer.from('%PDF-1.4 a document'));
    await env.collect();
    connector = await env.startConnector(connectorOverrides());
  });
  afterAll(async () => {
    await env.stop();
    await org?.close();
  });

  const cellOf: Record<string, string> = {
    acme: 'eu-1',
    globex: 'eu-1',
    initech: 'us-1',
    hooli: 'us-1',
    umbrella: 'us-1',
    wayne: 'eu-1',
  };

  it("creates every document in its tenant's cell with its tenant's application, and only there", async () => {
    // Mixed on the same partitions (three keys over three partitions, tenants interleaved).
    const events: Array<{ id: string; tenant: string | null; byHeader?: boolean }> = [];
    for (let i = 0; i < 4; i++) {
      events.push({ id: `acme-${i}`, tenant: 'acme' });
      events.push({ id: `globex-${i}`, tenant: 'globex', byHeader: i % 2 === 1 });
      events.push({ id: `initech-${i}`, tenant: 'initech' });
      events.push({ id: `none-${i}`, tenant: null });
    }
    await env.produce(
      events.map((e) => arrival(e.id, file, e.tenant && !e.byHeader ? { tenant: e.tenant } : {})),
      (i) => `key-${i % 3}`,
      (i) => (events[i]!.byHeader ? { 'x-tenant': events[i]!.tenant! } : undefined),
    );
    for (const e of events) await env.waitForResults(e.id);

    for (const e of events) {
      const inOrg = await orgSubmissions(e.id);
      const inDefault = await env.submissions(e.id);
      if (e.tenant === null) {
        expect({ event: e.id, org: inOrg.length, default: inDefault.length }).toEqual({
          event: e.id,
          org: 0,
          default: 1,
        });
      } else {
        // One submission, in its tenant's cell, created by its tenant's application.
        expect({
          event: e.id,
          default: inDefault.length,
          org: inOrg.map((s) => [s.cell, s.tenant_id, s.client_id]),
        }).toEqual({
          event: e.id,
          default: 0,
          org: [[cellOf[e.tenant], e.tenant, org.tenants[e.tenant]!.clientId]],
        });
      }
      // Results carry the tenant (null for the default credentials).
      const results = env.forEvent(e.id).filter((o) => o.topic !== env.topics.dlq);
      expect(results.length).toBeGreaterThanOrEqual(3);
      expect(new Set(results.map((o) => o.value.tenant))).toEqual(new Set([e.tenant]));
    }
    // Every call a tenant's application made reached its own cell, and none was refused.
    for (const name of ['acme', 'globex', 'initech']) {
      const calls = org.sandbox.calls({ clientId: org.tenants[name]!.clientId }).items;
      expect(calls.length).toBeGreaterThan(0);
      expect(new Set(calls.map((c) => c.cell))).toEqual(new Set([cellOf[name]]));
      expect(calls.filter((c) => c.status === 401 || c.status === 403)).toEqual([]);
    }
    expect(env.on('dlq')).toEqual([]);
  });

  it('serves a tenant added to the directory file within 10 s, without a restart', async () => {
    const addedAt = Date.now();
    writeDirectory(['acme', 'globex', 'initech', 'hooli']);
    await env.produce([arrival('hooli-1', file, { tenant: 'hooli' })], () => 'key-0');
    await env.waitForResults('hooli-1');
    const [submission] = await orgSubmissions('hooli-1');
    expect([submission?.cell, submission?.tenant_id, submission?.client_id]).toEqual([
      'us-1',
      'hooli',
      'hooli-app',
    ]);
    expect(Date.parse(submission!.created) - addedAt).toBeLessThan(10_000);
    expect(env.forEvent('hooli-1').every((o) => o.value.tenant === 'hooli')).toBe(true);
  });

  it("holds a removed tenant's new events for the grace period, then dead-letters them (unknown_tenant)", async () => {
    writeDirectory(['acme', 'initech', 'hooli']);
    await tenantsAre(3);
    const sentAt = Date.now();
    // Behind it on the same partition, an event of another tenant goes on meanwhile.
    await env.produce(
      [arrival('globex-late', file, { tenant: 'globex' }), arrival('acme-behind', file, { tenant: 'acme' })],
      () => 'key-1',
    );
    await env.waitForResults('acme-behind');
    await waitFor('the removed tenant’s dead letter', () => env.forEvent('globex-late').length > 0, 30_000);
    // The record behind it was not held back: its results came out before the dead letter.
    const first = (id: string) => env.outputs.findIndex((o) => o.headers.event_id === id);
    expect(first('acme-behind')).toBeLessThan(first('globex-late'));
    const [letter] = env.forEvent('globex-late');
    expect(letter!.topic).toBe(env.topics.dlq);
    expect([letter!.value.stage, letter!.value.error_code, letter!.value.tenant]).toEqual([
      'validate',
      'unknown_tenant',
      'globex',
    ]);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(5000);
    expect(await orgSubmissions('globex-late')).toEqual([]);
    expect(await env.submissions('globex-late')).toEqual([]);
  });

  it('re-drives that dead letter with docstream dlq redrive once the tenant is back: analysed in its cell', async () => {
    writeDirectory(['acme', 'globex', 'initech', 'hooli']);
    await tenantsAre(4);
    const config = env.writeConfig(connectorOverrides());
    const redriven = JSON.parse(
      await cli(['dlq', 'redrive', '--code', 'unknown_tenant', '--json', '--config', config]),
    ) as { sent: number };
    expect(redriven.sent).toBe(1);
    await env.waitForResults('globex-late');
    const [submission] = await orgSubmissions('globex-late');
    expect([submission?.cell, submission?.tenant_id, submission?.client_id]).toEqual([
      'eu-1',
      'globex',
      org.tenants.globex!.clientId,
    ]);
  });

  it("keeps one tenant at its limit (429s, its limiter's wait) from delaying another tenant's documents", async () => {
    writeDirectory(['acme', 'globex', 'initech', 'hooli', 'umbrella']);
    await tenantsAre(5);
    // Interleaved on the same partitions: 30 documents of the throttled tenant, 6 of another one
    // in the same cell.
    const events: Array<{ id: string; tenant: string }> = [];
    for (let i = 0; i < 30; i++) {
      events.push({ id: `umbrella-${i}`, tenant: 'umbrella' });
      if (i % 5 === 0) events.push({ id: `hooli-fast-${i}`, tenant: 'hooli' });
    }
    await env.produce(
      events.map((e) => arrival(e.id, file, { tenant: e.tenant })),
      (i) => `key-${i % 3}`,
    );
    const fast = events.filter((e) => e.tenant === 'hooli').map((e) => e.id);
    for (const id of fast) await env.waitForResults(id, 60_000);
    const umbrellaCalls = org.sandbox.calls({ clientId: org.tenants.umbrella!.clientId }).items;
    const hooliCalls = org.sandbox.calls({ clientId: org.tenants.hooli!.clientId }).items;
    // The throttled tenant was answered 429 and was still creating; the other was never refused
    // and had all its documents' results out by then.
    expect(umbrellaCalls.filter((c) => c.status === 429).length).toBeGreaterThan(0);
    expect(hooliCalls.filter((c) => c.status === 429)).toEqual([]);
    const slow = events.filter((e) => e.tenant === 'umbrella').map((e) => e.id);
    const created = await Promise.all(slow.map((id) => orgSubmissions(id)));
    expect(created.filter((c) => c.length === 0).length).toBeGreaterThan(0);
    // The throttled tenant's documents all end with their results all the same, none dead-lettered.
    for (const id of slow) await env.waitForResults(id, 120_000);
    expect(env.on('dlq').filter((o) => o.value.tenant === 'umbrella')).toEqual([]);
  });

  it('dead-letters the documents of a tenant whose credentials the API refuses; the others carry on', async () => {
    writeDirectory(['acme', 'globex', 'initech', 'hooli', 'umbrella', 'wayne']);
    await tenantsAre(6);
    await env.produce(
      [
        arrival('wayne-1', file, { tenant: 'wayne' }),
        arrival('acme-beside', file, { tenant: 'acme' }),
        arrival('wayne-2', file, { tenant: 'wayne' }),
      ],
      () => 'key-2',
    );
    await env.waitForResults('acme-beside');
    for (const id of ['wayne-1', 'wayne-2'])
      await waitFor(`${id}'s dead letter`, () => env.forEvent(id).length > 0, 30_000);
    for (const id of ['wayne-1', 'wayne-2']) {
      const [letter] = env.forEvent(id);
      expect([letter!.topic, letter!.value.stage, letter!.value.error_code, letter!.value.tenant]).toEqual([
        env.topics.dlq,
        'create',
        'api_401',
        'wayne',
      ]);
      expect(await orgSubmissions(id)).toEqual([]);
    }
    // Its application asked the token endpoint of its own cell and was refused there (the record
    // names no client for a request that did not authenticate); no other cell saw a refusal.
    const refused = (cell: string) =>
      org.sandbox.calls({ cell }).items.filter((c) => c.route === '/oauth2/token' && c.status === 401);
    expect(refused('eu-1').length).toBeGreaterThan(0);
    expect(refused('us-1')).toEqual([]);
  });
});
