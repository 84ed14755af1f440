/**
 * An organisation of tenants in several cells, over real HTTP: two cells on their own listeners,
 * three tenants (two in eu-1), each with its own application (and a fourth, umbrella, in us-1
 * with a small rate limit of its own). Each tenant creates and reads its
 * submissions in its own cell; another tenant's read is 404; a client or token of the wrong cell is
 * refused; one application's 429s leave another's budget alone; the call record names the cell,
 * tenant and application of every call; a tenant created over the API becomes usable once its key
 * is registered; decision webhooks carry the submission's tenant.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportPKCS8, exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { ApplicationList, ErrorBody, FraudSuccess, Tenant } from '../../src/api/schemas.js';
import { pino } from 'pino';
import { startSandbox, type CallList } from '../../src/sandbox/index.js';
import {
  registerApplicationKey,
  requestToken,
  startOrganisationSandbox,
  tenantToken,
  type OrgTenant,
  type Organisation,
} from '../harness/organisation.js';
import { basic, call, expectSchema, pdf, until200, upload, waitFor } from './helpers.js';

let org: Organisation;
let adminKey: CryptoKey;
let hooks: Server;
let hookUrl: string;
const delivered: Array<{ tenant_id: string; payload: { id: string } }> = [];

beforeAll(async () => {
  hooks = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      delivered.push(JSON.parse(text) as (typeof delivered)[number]);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks`;
  const admin = await generateKeyPair('RS256', { extractable: true });
  adminKey = admin.privateKey;
  org = await startOrganisationSandbox({
    cells: ['eu-1', 'us-1'],
    tenants: [
      { name: 'acme', cell: 'eu-1' },
      { name: 'globex', cell: 'eu-1', auth: 'client_secret' },
      { name: 'initech', cell: 'us-1' },
      { name: 'umbrella', cell: 'us-1', rateLimit: { ratePerSecond: 0.5, burst: 3 } },
    ],
    config: {
      clients: [
        {
          clientId: 'org-admin',
          publicKeyPem: await exportSPKI(admin.publicKey),
          kid: 'admin-1',
          scopes: ['tenants.write', 'tenants.applications.read'],
        },
      ],
      webhook: { url: hookUrl, retryBaseMs: 50 },
    },
  });
});

afterAll(async () => {
  await org?.close();
  await new Promise((resolve) => hooks?.close(resolve));
});

/** A bearer-token API at one base URL. */
function at(baseUrl: string, accessToken: string) {
  const auth = { authorization: `Bearer ${accessToken}` };
  return {
    get: (path: string) => call(`${baseUrl}${path}`, { headers: auth }),
    post: (path: string, body: unknown) =>
      call(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
  };
}

const tenant = (name: string): OrgTenant => org.tenants[name] as OrgTenant;

async function createAndUpload(t: OrgTenant, accessToken: string, queryId: string, body: object = {}) {
  const res = await at(t.baseUrl, accessToken).post('/v2/submission', { query_id: queryId, ...body });
  expect(res.status).toBe(200);
  const created = res.body as { submission_id: string; upload_url: string };
  // The upload URL is the tenant's cell's, not another listener's.
  expect(created.upload_url.startsWith(`${t.baseUrl}/_upload/`)).toBe(true);
  expect((await upload(created.upload_url, await pdf({ title: queryId }))).status).toBe(200);
  return created.submission_id;
}

test('each cell has its own base URL and token endpoint, neither the sandbox own', () => {
  const eu = org.cells['eu-1'];
  const us = org.cells['us-1'];
  expect(eu && us).toBeTruthy();
  const bases = new Set([org.sandbox.baseUrl, eu?.baseUrl, us?.baseUrl]);
  expect(bases.size).toBe(3);
  expect(eu?.tokenUrl).toBe(`${eu?.baseUrl}/oauth2/token`);
  expect(us?.tokenUrl).toBe(`${us?.baseUrl}/oauth2/token`);
});

describe('three tenants in two cells', () => {
  const made: Record<string, string[]> = {};
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    for (const name of ['acme', 'globex', 'initech']) {
      const t = tenant(name);
      tokens[name] = await tenantToken(t);
      made[name] = [
        await createAndUpload(t, tokens[name] as string, `${name}-1`),
        await createAndUpload(t, tokens[name] as string, `${name}-2`),
      ];
    }
  });

  test('each tenant reads its own submissions in its own cell', async () => {
    for (const name of ['acme', 'globex', 'initech']) {
      const t = tenant(name);
      for (const id of made[name] as string[]) {
        const res = await until200(() =>
          at(t.baseUrl, tokens[name] as string).get(`/v2/submission/${id}/fraud`),
        );
        expect(res.status).toBe(200);
        expect(expectSchema(FraudSuccess, res.body).query_id).toMatch(new RegExp(`^${name}-`));
      }
    }
  });

  test("another tenant's token gets 404 for a submission, as if it did not exist, in the same cell too", async () => {
    const acmeId = (made.acme as string[])[0] as string;
    const sameCell = await at(tenant('globex').baseUrl, tokens.globex as string).get(
      `/v2/submission/${acmeId}/fraud`,
    );
    expect(sameCell.status).toBe(404);
    expect(expectSchema(ErrorBody, sameCell.body).message).toBe(`submission ${acmeId} does not exist`);
    const unknown = await at(tenant('globex').baseUrl, tokens.globex as string).get(
      '/v2/submission/00000000-0000-4000-8000-000000000000/fraud',
    );
    // The same answer as for an id that exists nowhere: nothing tells the two apart.
    expect(unknown.status).toBe(404);
    const otherCell = await at(tenant('initech').baseUrl, tokens.initech as string).get(
      `/v2/submission/${acmeId}/quality`,
    );
    expect(otherCell.status).toBe(404);
    // Writes too: feedback and delete of another tenant's submission are 404.
    const feedback = await call(`${tenant('globex').baseUrl}/v2/submission/${acmeId}/feedback`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tokens.globex}`, 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'FRAUD' }),
    });
    expect(feedback.status).toBe(404);
    const del = await call(`${tenant('globex').baseUrl}/v2/submission/${acmeId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${tokens.globex}` },
    });
    expect(del.status).toBe(404);
    expect(
      (await at(tenant('acme').baseUrl, tokens.acme as string).get(`/v2/submission/${acmeId}/fraud`)).status,
    ).toBe(200);
  });

  test("another cell's token endpoint refuses the client: 401 invalid_client naming its cell", async () => {
    const us = org.cells['us-1']?.tokenUrl as string;
    const byKey = await requestToken(tenant('acme'), us);
    expect(byKey.status).toBe(401);
    expect(byKey.body.error).toBe('invalid_client');
    expect(byKey.body.message).toMatch(/acme-app is not registered in cell us-1.*cell eu-1/);
    const bySecret = await requestToken(tenant('globex'), us);
    expect(bySecret.status).toBe(401);
    expect(bySecret.body.error).toBe('invalid_client');
    expect(bySecret.body.message).toMatch(/cell eu-1/);
    // Nor does the sandbox's own token endpoint know a tenant's application.
    expect((await requestToken(tenant('initech'), org.sandbox.tokenUrl)).status).toBe(401);
  });

  test("a token of one cell is refused by another cell's API: 401 with a message", async () => {
    const res = await at(tenant('initech').baseUrl, tokens.acme as string).post('/v2/submission', {});
    expect(res.status).toBe(401);
    expect(expectSchema(ErrorBody, res.body).message).toMatch(
      /issued by the token endpoint of cell eu-1.*cell us-1/,
    );
    expect(res.headers.get('www-authenticate')).toMatch(/invalid_token/);
    const own = await at(org.sandbox.baseUrl, tokens.initech as string).get('/v2/submission/x/fraud');
    expect(own.status).toBe(401);
  });

  test('the call record names the cell, tenant and application of every create, over HTTP and in process', async () => {
    const res = await call(`${org.sandbox.baseUrl}/_sandbox/calls`);
    expect(res.status).toBe(200);
    const overHttp = res.body as CallList;
    expect(overHttp.items.length).toBe(org.sandbox.calls().items.length);
    for (const name of ['acme', 'globex', 'initech']) {
      const t = tenant(name);
      for (const id of made[name] as string[]) {
        const creates = overHttp.items.filter((c) => c.submission_id === id && c.method === 'POST');
        expect(creates).toEqual([
          expect.objectContaining({
            cell: t.cell,
            tenant_id: t.id,
            client_id: t.clientId,
            route: '/v2/submission',
            status: 200,
          }),
        ]);
        const upload = overHttp.items.find((c) => c.submission_id === id && c.route === '/_upload/:id');
        expect(upload).toMatchObject({ cell: t.cell, status: 200 });
      }
      const tokenCall = org.sandbox
        .calls({ clientId: t.clientId })
        .items.find((c) => c.route === '/oauth2/token' && c.status === 200);
      expect(tokenCall).toMatchObject({ cell: t.cell, tenant_id: t.id });
    }
    // The refused cross-cell call is recorded where it arrived, with no tenant.
    const refused = org.sandbox.calls({ cell: 'us-1' }).items.filter((c) => c.status === 401);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((c) => c.tenant_id === null && c.client_id === null)).toBe(true);
    // Every submission, as the sandbox lists it, sits in its tenant's cell.
    const listed = (await call(`${org.sandbox.baseUrl}/_sandbox/submissions`)).body as {
      items: Array<{ id: string; cell: string; tenant_id: string; client_id: string }>;
    };
    for (const name of ['acme', 'globex', 'initech']) {
      for (const id of made[name] as string[]) {
        expect(listed.items.find((s) => s.id === id)).toMatchObject({
          cell: tenant(name).cell,
          tenant_id: tenant(name).id,
          client_id: tenant(name).clientId,
        });
      }
    }
  });
});

test("one application's 429s never touch another's budget", async () => {
  const umbrella = at(tenant('umbrella').baseUrl, await tenantToken(tenant('umbrella')));
  const initech = at(tenant('initech').baseUrl, await tenantToken(tenant('initech')));
  let limited: Awaited<ReturnType<typeof umbrella.get>> | undefined;
  let allowed = 0;
  for (let i = 0; i < 10 && !limited; i++) {
    const res = await umbrella.get('/v2/submission/nope/fraud');
    if (res.status === 429) limited = res;
    else allowed++;
  }
  // Its own burst of 3, then 429 (a refill of 0.5/s adds at most one while the loop runs).
  expect(allowed).toBeGreaterThanOrEqual(3);
  expect(allowed).toBeLessThanOrEqual(4);
  expect(limited?.status).toBe(429);
  expect(expectSchema(ErrorBody, limited?.body).message).toMatch(/client umbrella-app is limited to 0.5\/s/);
  expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  // umbrella is at its limit; initech, in the same cell on the default (no limit), is not held back.
  for (let i = 0; i < 20; i++) expect((await initech.get('/v2/submission/nope/fraud')).status).toBe(404);
  expect((await umbrella.get('/v2/submission/nope/fraud')).status).toBe(429);
  const umbrella429 = org.sandbox.calls({ clientId: 'umbrella-app' }).items.filter((c) => c.status === 429);
  expect(umbrella429.length).toBeGreaterThanOrEqual(2);
  expect(org.sandbox.calls({ clientId: 'initech-app' }).items.some((c) => c.status === 429)).toBe(false);
});

test('a tenant created over the API is usable once its key is registered, in its own cell only', async () => {
  const now = Math.floor(Date.now() / 1000);
  const jwt = await new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: 'admin-1' })
    .setIssuer('org-admin')
    .setSubject('org-admin')
    .setAudience(org.sandbox.tokenUrl)
    .setJti(`admin-${now}`)
    .setExpirationTime(now + 60)
    .sign(adminKey);
  const tokenRes = await call(org.sandbox.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: jwt,
    }).toString(),
  });
  expect(tokenRes.status).toBe(200);
  const admin = at(org.sandbox.baseUrl, (tokenRes.body as { access_token: string }).access_token);
  const unserved = await admin.post('/v0/tenants', { name: 'hooli', cells: ['ap-3'] });
  expect(unserved.status).toBe(400);
  expect(expectSchema(ErrorBody, unserved.body).message).toMatch(/^cells: cell ap-3 is not served/);
  const created = await admin.post('/v0/tenants', { name: 'hooli', cells: ['us-1'] });
  expect(created.status).toBe(201);
  const hooli = expectSchema(Tenant, created.body);
  const apps = expectSchema(ApplicationList, (await admin.get(`/v0/tenants/${hooli.id}/applications`)).body);
  const app = apps.items[0];
  const us = org.cells['us-1'];
  expect(app).toMatchObject({ client_id: 'hooli-us-1', cell: 'us-1', _links: { token_url: us?.tokenUrl } });

  const t: OrgTenant = {
    id: hooli.id,
    name: 'hooli',
    cell: 'us-1',
    baseUrl: us?.baseUrl as string,
    tokenUrl: us?.tokenUrl as string,
    clientId: 'hooli-us-1',
    auth: 'private_key_jwt',
    kid: app?.credentials.kid as string,
  };
  // No key registered yet: the token endpoint refuses it.
  const unusable = await requestToken({ ...t, privateKeyPem: (await registerKeyless()).privateKeyPem });
  expect(unusable.status).toBe(401);
  const registered = await registerApplicationKey(org.sandbox.baseUrl, 'hooli-us-1', t.kid as string);
  expect(registered.status).toBe(200);
  const usable = { ...t, privateKeyPem: registered.privateKeyPem };
  const id = await createAndUpload(usable, await tenantToken(usable), 'hooli-1');
  expect(org.sandbox.calls({ submissionId: id }).items[0]).toMatchObject({
    cell: 'us-1',
    tenant_id: hooli.id,
    client_id: 'hooli-us-1',
  });
  expect((await requestToken(usable, org.cells['eu-1']?.tokenUrl)).status).toBe(401);
  const unknownApp = await call(`${org.sandbox.baseUrl}/_sandbox/applications/nobody`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientSecret: 'x' }),
  });
  expect(unknownApp.status).toBe(404);
});

/** A key pair that is registered nowhere. */
async function registerKeyless(): Promise<{ privateKeyPem: string }> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { privateKeyPem: await exportPKCS8(privateKey) };
}

test("decision webhooks carry the submission's own tenant_id", async () => {
  const acme = tenant('acme');
  const initech = tenant('initech');
  const a = await createAndUpload(acme, await tenantToken(acme), 'acme-decision', { enable_decision: true });
  const b = await createAndUpload(initech, await tenantToken(initech), 'initech-decision', {
    enable_decision: true,
  });
  await waitFor(() => [a, b].every((id) => delivered.some((d) => d.payload.id === id)));
  expect(delivered.find((d) => d.payload.id === a)?.tenant_id).toBe(acme.id);
  expect(delivered.find((d) => d.payload.id === b)?.tenant_id).toBe(initech.id);
});

test('a client secret registered for an application never reaches the log or an answer; its rate limit is its own', async () => {
  const lines: string[] = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
  const adminSecret = `admin-${randomUUID()}`;
  const secret = `wayne-${randomUUID()}`;
  const sb = await startSandbox(
    {
      cells: { 'ca-1': {} },
      clients: [{ clientId: 'admin', clientSecret: adminSecret, scopes: ['tenants.write'] }],
    },
    { logger },
  );
  try {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const adminToken = await call(sb.tokenUrl, {
      method: 'POST',
      headers: { ...form, authorization: basic('admin', adminSecret) },
      body: 'grant_type=client_credentials',
    });
    const admin = at(sb.baseUrl, (adminToken.body as { access_token: string }).access_token);
    expect((await admin.post('/v0/tenants', { name: 'wayne', cells: ['ca-1'] })).status).toBe(201);
    const registered = await call(`${sb.baseUrl}/_sandbox/applications/wayne-ca-1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientSecret: secret, rateLimit: { ratePerSecond: 0.5, burst: 1 } }),
    });
    expect(registered.status).toBe(200);
    expect(registered.body).toMatchObject({
      client_id: 'wayne-ca-1',
      credentials: { type: 'client_secret' },
    });
    const listed = await call(`${sb.baseUrl}/_sandbox/tenants`);
    expect(listed.body).toMatchObject({
      items: [
        { name: 'wayne', cell: 'ca-1', applications: [{ client_id: 'wayne-ca-1', client_secret: true }] },
      ],
    });
    const badPatch = await call(`${sb.baseUrl}/_sandbox/applications/wayne-ca-1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientSecret: '' }),
    });
    expect(badPatch.status).toBe(400);
    expect(expectSchema(ErrorBody, badPatch.body).message).toMatch(/^clientSecret/);

    const ca = sb.cells['ca-1']!;
    const token = await call(ca.tokenUrl, {
      method: 'POST',
      headers: { ...form, authorization: basic('wayne-ca-1', secret) },
      body: 'grant_type=client_credentials',
    });
    expect(token.status).toBe(200);
    const wayne = at(ca.baseUrl, (token.body as { access_token: string }).access_token);
    expect((await wayne.get('/v2/submission/nope/fraud')).status).toBe(404);
    const limited = await wayne.get('/v2/submission/nope/fraud');
    expect(limited.status).toBe(429);
    expect(expectSchema(ErrorBody, limited.body).message).toMatch(/client wayne-ca-1 is limited to 0.5\/s/);

    const shown = [
      registered.text,
      listed.text,
      token.text,
      (await call(`${sb.baseUrl}/_sandbox/config`)).text,
    ];
    for (const text of shown) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(adminSecret);
    }
  } finally {
    await sb.close();
  }
  // The log has the sandbox's lines (listening, the application updated), and neither secret.
  expect(lines.some((l) => l.includes('sandbox application updated'))).toBe(true);
  expect(lines.join('')).not.toContain(secret);
  expect(lines.join('')).not.toContain(adminSecret);
});
