/**
 * One tenant at its application's rate limit does not hold another back on the same partition: a
 * backlog of `busy` (its application allows 3 calls/s) written before a few `calm` events, one input
 * partition, four in-flight slots. Without tenant shares busy's documents take every slot while they
 * wait for their limiter, and calm's records are read only once most of the backlog is done; with them
 * busy holds its share (two slots), its other documents wait holding none, and calm's are analysed at
 * once. Checked on the real stack, in an organisation sandbox: calm's results are all out while
 * busy's backlog is still mostly waiting, busy's documents all get their results in the end, and
 * every document was submitted once, by its own tenant's application.
 */
import fs from 'node:fs';
import path from 'node:path';
import { arrival, E2E, waitFor } from '../harness/e2e.js';
import { startOrganisationSandbox, type Organisation } from '../harness/organisation.js';

const BUSY = 12;
const CALM = 4;

describe("each tenant's share of the in-flight slots", () => {
  const env = new E2E(1);
  let org: Organisation;

  beforeAll(async () => {
    await env.start();
    org = await startOrganisationSandbox({
      cells: ['eu-1'],
      tenants: [
        { name: 'busy', cell: 'eu-1', rateLimit: { ratePerSecond: 3, burst: 1 } },
        { name: 'calm', cell: 'eu-1' },
      ],
      config: { processing: { distribution: 'fixed', meanMs: 200 } },
    });
    await env.collect();
  }, 120_000);
  afterAll(async () => {
    await env.stop();
    await org?.close();
  });

  it("analyses the calm tenant's documents while the busy tenant's backlog waits for its limit", async () => {
    const dir = path.join(env.dir, 'tenants');
    fs.mkdirSync(dir);
    const tenants: Record<string, unknown> = {};
    for (const name of ['busy', 'calm']) {
      const t = org.tenants[name]!;
      fs.writeFileSync(path.join(dir, `${name}.pem`), t.privateKeyPem!);
      tenants[name] = { cell: t.cell, clientId: t.clientId, privateKeyFile: `${name}.pem`, kid: t.kid };
    }
    const directoryFile = path.join(dir, 'directory.json');
    fs.writeFileSync(directoryFile, JSON.stringify({ cells: org.cells, tenants }));
    await env.startConnector({
      tenants: { directoryFile, maxInFlightShare: 0.5 },
      connector: { maxInFlight: 4, admissionWaitMs: 200 },
    });

    const file = await env.writeFile('doc.pdf', Buffer.from('%PDF-1.4 a document'));
    const busy = Array.from({ length: BUSY }, (_, i) => `busy-${i}`);
    const calm = Array.from({ length: CALM }, (_, i) => `calm-${i}`);
    await env.produce([
      ...busy.map((id) => arrival(id, file, { tenant: 'busy', pipeline_configuration: 'QUALITY_ONLY' })),
      ...calm.map((id) => arrival(id, file, { tenant: 'calm', pipeline_configuration: 'QUALITY_ONLY' })),
    ]);
    const done = (ids: string[]) =>
      ids.filter((id) => env.on('quality').some((o) => o.headers.event_id === id)).length;

    await waitFor("the calm tenant's results", () => done(calm) === CALM, 30_000);
    // Each busy document makes several calls (a token, create, upload, polls) at 3 calls/s: most of
    // the backlog is still to come when calm is through.
    expect(done(busy)).toBeLessThanOrEqual(BUSY / 2);

    await waitFor("the busy tenant's results", () => done(busy) === BUSY, 90_000);
    for (const id of [...busy, ...calm]) {
      const res = await fetch(`${org.sandbox.baseUrl}/_sandbox/submissions?query_id=${id}`);
      const made = ((await res.json()) as { items: Array<{ client_id: string }> }).items;
      expect({ id, clients: made.map((s) => s.client_id) }).toEqual({
        id,
        clients: [org.tenants[id.split('-')[0]!]!.clientId],
      });
    }
    expect(env.on('dlq')).toEqual([]);
  }, 150_000);
});
