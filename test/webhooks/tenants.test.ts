/**
 * The decision webhook and the tenant directory on the real stack: an organisation sandbox sends each
 * decision delivery with its submission's tenant id (`tenant_id`). A delivery naming the tenant id the
 * directory gives the document's tenant (or a tenant or document without one) is acted on, as ever; one
 * naming another is refused for that document (a warning, a count), which gets its decision by polling.
 * Polls start late (at least half a second after the upload) and decisions are ready after 250 ms, so
 * a decision taken from its delivery is published as `source: webhook`, and a refused one as `poll`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { jest } from '@jest/globals';
import { Connector } from '../../src/connector/connector.js';
import { createLogger } from '../../src/observability/logger.js';
import { arrival, E2E, waitFor } from '../harness/e2e.js';
import { startOrganisationSandbox, type Organisation } from '../harness/organisation.js';

jest.setTimeout(120_000);

const secret = `whsec_${randomBytes(32).toString('base64')}`;

describe("webhooks: a delivery's tenant_id and the document's tenant", () => {
  const env = new E2E(2);
  let org: Organisation;
  let connector: Connector | null = null;
  const logLines: string[] = [];

  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 200 } });
    org = await startOrganisationSandbox({
      cells: ['eu-1'],
      tenants: [
        { name: 'acme', cell: 'eu-1' },
        { name: 'globex', cell: 'eu-1', auth: 'client_secret' },
        { name: 'initech', cell: 'eu-1' },
      ],
      config: { processing: { distribution: 'fixed', meanMs: 200 } },
    });
    const dir = path.join(env.dir, 'tenants');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'acme.pem'), org.tenants.acme!.privateKeyPem!);
    fs.writeFileSync(path.join(dir, 'initech.pem'), org.tenants.initech!.privateKeyPem!);
    fs.writeFileSync(path.join(dir, 'globex.secret'), `${org.tenants.globex!.clientSecret}\n`);
    const directoryFile = path.join(dir, 'directory.json');
    fs.writeFileSync(
      directoryFile,
      JSON.stringify({
        cells: org.cells,
        tenants: {
          // The sandbox names each tenant's deliveries by its id, its name here.
          acme: {
            cell: 'eu-1',
            clientId: 'acme-app',
            privateKeyFile: 'acme.pem',
            kid: org.tenants.acme!.kid,
            tenantId: 'acme',
          },
          // A directory whose globex entry holds another tenant's id.
          globex: {
            cell: 'eu-1',
            clientId: 'globex-app',
            clientSecretFile: 'globex.secret',
            tenantId: 'globex-elsewhere',
          },
          initech: {
            cell: 'eu-1',
            clientId: 'initech-app',
            privateKeyFile: 'initech.pem',
            kid: org.tenants.initech!.kid,
          },
        },
      }),
    );
    const logger = createLogger({
      level: 'warn',
      format: 'json',
      stream: new Writable({
        write(chunk: Buffer, _encoding, done) {
          logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
          done();
        },
      }),
    });
    connector = await Connector.start({
      config: env.config({
        tenants: { directoryFile },
        webhooks: { enabled: true, port: 0, secrets: [secret] },
        // Polls no earlier than half a second after the upload: a delivery comes first.
        connector: { pollInitialMs: 5000, pollMaxMs: 6000 },
      }),
      logger,
    });
    org.sandbox.configure({ webhook: { url: connector.webhookUrl!, secret } });
    env.sandbox.configure({ webhook: { url: connector.webhookUrl!, secret } });
    await env.collect();
  });
  afterAll(async () => {
    await connector?.stop();
    await env.stop();
    await org?.close();
  });

  it('acts on a delivery naming the document tenant’s id, and refuses one naming another: that document is polled', async () => {
    const file = await env.writeFile('doc.pdf', Buffer.from('%PDF-1.4 a document'));
    const events = [
      { id: 'wt-acme-0', tenant: 'acme' },
      { id: 'wt-acme-1', tenant: 'acme' },
      { id: 'wt-globex', tenant: 'globex' },
      { id: 'wt-initech', tenant: 'initech' },
      { id: 'wt-none', tenant: null },
    ];
    await env.produce(
      events.map((e) =>
        arrival(e.id, file, { enable_decision: true, ...(e.tenant ? { tenant: e.tenant } : {}) }),
      ),
      (i) => `key-${i}`,
    );
    for (const e of events) await env.waitForResults(e.id);
    await waitFor(
      'a decision for every document',
      () => events.every((e) => env.forEvent(e.id).some((o) => o.topic === env.topics.decision)),
      30_000,
    );

    const sourceOf = (id: string) =>
      env.forEvent(id).find((o) => o.topic === env.topics.decision)?.value.source;
    expect(Object.fromEntries(events.map((e) => [e.id, sourceOf(e.id)]))).toEqual({
      'wt-acme-0': 'webhook',
      'wt-acme-1': 'webhook',
      // Its delivery named globex, which the directory says is not its tenant's id.
      'wt-globex': 'poll',
      // No tenantId in the directory, and no tenant: as ever.
      'wt-initech': 'webhook',
      'wt-none': 'webhook',
    });
    // Every delivery reached the receiver and was accepted there (it knows nothing of documents).
    expect(org.sandbox.stats().webhooksAcknowledged).toBe(4);

    const refused = (await connector!.metrics.webhookDeliveriesRefused.get()).values;
    expect(refused.map((v) => [v.labels.reason, v.value])).toEqual([['tenant_mismatch', 1]]);
    const warnings = logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => String(l.msg).startsWith('webhook delivery refused'));
    const globexSub = env.forEvent('wt-globex').find((o) => o.topic === env.topics.decision)!.key!;
    expect(warnings.map((w) => [w.submission_id, w.tenant, w.tenant_id, w.delivery_tenant_id])).toEqual([
      [globexSub, 'globex', 'globex-elsewhere', 'globex'],
    ]);
    expect(logLines.join('\n')).not.toContain(org.tenants.globex!.clientSecret!);
    // The refused document's decision came from its own application's poll, in its cell.
    const globexDecisionCalls = org.sandbox
      .calls({ submissionId: globexSub })
      .items.filter((c) => c.route.endsWith('/decision'));
    expect(globexDecisionCalls.length).toBeGreaterThan(0);
    expect(new Set(globexDecisionCalls.map((c) => c.client_id))).toEqual(new Set(['globex-app']));
    expect(env.on('dlq')).toEqual([]);
  });
});
