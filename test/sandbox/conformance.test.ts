/**
 * Conformance of the sandbox with the spec: the endpoint table with its scopes, the per-endpoint
 * status lists and the five state rules, over real HTTP.
 */
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import {
  ApplicationList,
  ClassificationSuccess,
  ContentSuccess,
  DecisionSuccess,
  ErrorBody,
  FeedbackResponse,
  FraudSuccess,
  QualitySuccess,
  ReportResponse,
  ResultOther,
  SubmissionResponse,
  Tenant,
  TokenResponse,
} from '../../src/api/schemas.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { api, basic, call, expectSchema, pdf, raw, TINY_PNG, token, until200, upload } from './helpers.js';

let sb: Sandbox;
let c: ReturnType<typeof api>;
let tenantKey: CryptoKey;

const FAST = { distribution: 'fixed' as const, meanMs: 20 };

beforeAll(async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  tenantKey = privateKey;
  sb = await startSandbox({
    processing: FAST,
    seed: 7,
    clients: [
      {
        clientId: 'sandbox-client',
        clientSecret: 'sandbox-secret',
        scopes: ['submissions.read', 'submissions.write'],
      },
      { clientId: 'reader', clientSecret: 'reader-secret', scopes: ['submissions.read'] },
      {
        clientId: 'tenant-admin',
        publicKeyPem: await exportSPKI(publicKey),
        kid: 'admin-key-1',
        scopes: ['tenants.write', 'tenants.applications.read'],
      },
    ],
  });
  c = api(sb, await token(sb));
});

afterAll(async () => {
  await sb.close();
});

function message(body: unknown): string {
  return expectSchema(ErrorBody, body).message;
}

let documents = 0;
async function uploaded(body: unknown = {}, bytes?: Uint8Array) {
  const s = await c.create(body);
  // A fresh title per file: identical bytes would (rightly) raise the serial-fraud indicator.
  const res = await upload(s.upload_url, bytes ?? (await pdf({ title: `document ${++documents}` })));
  expect(res.status).toBe(200);
  return s;
}

describe('token endpoint', () => {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };

  test('client secret by HTTP Basic or by form fields gives a bearer token', async () => {
    const byBasic = await call(sb.tokenUrl, {
      method: 'POST',
      headers: { ...form, authorization: basic('sandbox-client', 'sandbox-secret') },
      body: 'grant_type=client_credentials',
    });
    expect(byBasic.status).toBe(200);
    const t = expectSchema(TokenResponse, byBasic.body);
    expect(t.token_type).toBe('Bearer');
    expect(t.expires_in).toBe(3600);
    expect(t.scope).toBe('submissions.read submissions.write');
    const byForm = await call(sb.tokenUrl, {
      method: 'POST',
      headers: form,
      body: 'grant_type=client_credentials&client_id=reader&client_secret=reader-secret&scope=submissions.read',
    });
    expect(byForm.status).toBe(200);
    expect((byForm.body as { scope: string }).scope).toBe('submissions.read');
  });

  test('bad client, bad grant and bad scope are refused RFC 6749 style with a message', async () => {
    const wrong = await call(sb.tokenUrl, {
      method: 'POST',
      headers: { ...form, authorization: basic('sandbox-client', 'nope') },
      body: 'grant_type=client_credentials',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: 'invalid_client' });
    expect(message(wrong.body)).toMatch(/client/);
    const grant = await call(sb.tokenUrl, { method: 'POST', headers: form, body: 'grant_type=password' });
    expect(grant.status).toBe(400);
    expect(grant.body).toMatchObject({ error: 'unsupported_grant_type' });
    const scope = await call(sb.tokenUrl, {
      method: 'POST',
      headers: { ...form, authorization: basic('reader', 'reader-secret') },
      body: 'grant_type=client_credentials&scope=submissions.write',
    });
    expect(scope.status).toBe(400);
    expect(scope.body).toMatchObject({ error: 'invalid_scope' });
    expect(message(scope.body)).toMatch(/^scope/);
  });
});

describe('authentication and authorisation on every endpoint', () => {
  const endpoints: Array<[string, string, string]> = [
    ['POST', '/v2/submission', 'submissions.write'],
    ['PUT', '/v2/submission/x/characteristics', 'submissions.write'],
    ['GET', '/v2/submission/x/fraud', 'submissions.read'],
    ['GET', '/v2/submission/x/content', 'submissions.read'],
    ['GET', '/v2/submission/x/quality', 'submissions.read'],
    ['GET', '/v2/submission/x/decision', 'submissions.read'],
    ['GET', '/v2/submission/x/classification', 'submissions.read'],
    ['GET', '/v2/submission/x/report', 'submissions.read'],
    ['DELETE', '/v2/submission/x', 'submissions.write'],
    ['PUT', '/v2/submission/x/feedback', 'submissions.write'],
    ['GET', '/v2/submission/x/feedback', 'submissions.read'],
    ['POST', '/v0/tenants', 'tenants.write'],
    ['GET', '/v0/tenants/x/applications', 'tenants.applications.read'],
  ];

  test.each(endpoints)('%s %s: 401 without or with an unknown token', async (method, path) => {
    const none = await call(`${sb.baseUrl}${path}`, { method });
    expect(none.status).toBe(401);
    expect(message(none.body)).toMatch(/Authorization/);
    const unknown = await call(`${sb.baseUrl}${path}`, {
      method,
      headers: { authorization: 'Bearer forged' },
    });
    expect(unknown.status).toBe(401);
  });

  test.each(endpoints)('%s %s: 403 when the token lacks %s', async (method, path, scope) => {
    const other = scope === 'submissions.read' ? 'tenant-admin' : 'reader';
    const t = other === 'reader' ? await token(sb, 'reader', 'reader-secret') : await adminToken();
    const res = await call(`${sb.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${t}` } });
    expect(res.status).toBe(403);
    expect(message(res.body)).toContain(scope);
  });

  test('expired tokens give 401', async () => {
    const short = await startSandbox({ tokenTtlSeconds: 1 });
    try {
      const t = await token(short);
      await new Promise((r) => setTimeout(r, 1100));
      const res = await api(short, t).get('/v2/submission/x/fraud');
      expect(res.status).toBe(401);
      expect(message(res.body)).toMatch(/expired/);
    } finally {
      await short.close();
    }
  });
});

let jti = 0;
async function assertion(overrides: { kid?: string; aud?: string; jti?: string } = {}): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: overrides.kid ?? 'admin-key-1' })
    .setIssuer('tenant-admin')
    .setSubject('tenant-admin')
    .setAudience(overrides.aud ?? sb.tokenUrl)
    .setIssuedAt()
    .setExpirationTime('2m')
    .setJti(overrides.jti ?? `jti-${++jti}-${Date.now()}`)
    .sign(tenantKey);
}

function assertionForm(jwt: string): string {
  return new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: jwt,
  }).toString();
}

async function adminToken(): Promise<string> {
  const res = await call(sb.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: assertionForm(await assertion()),
  });
  if (res.status !== 200) throw new Error(res.text);
  return (res.body as { access_token: string }).access_token;
}

describe('tenants with a private_key_jwt client', () => {
  const post = async (jwt: string) =>
    call(sb.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: assertionForm(jwt),
    });

  test('assertions with a wrong kid or audience, or a reused jti, are refused', async () => {
    expect((await post(await assertion({ kid: 'other' }))).status).toBe(401);
    expect((await post(await assertion({ aud: 'https://elsewhere/token' }))).status).toBe(401);
    const once = await assertion({ jti: `reuse-${Date.now()}` });
    expect((await post(once)).status).toBe(200);
    const again = await post(once);
    expect(again.status).toBe(401);
    expect(message(again.body)).toMatch(/jti/);
  });

  test('create a tenant (201), duplicate name (409), invalid fields (400 naming them), list applications', async () => {
    const admin = api(sb, await adminToken());
    const name = `acme${Date.now()}`;
    const created = await admin.json('POST', '/v0/tenants', { name, cells: ['eu-1'] });
    expect(created.status).toBe(201);
    const tenant = expectSchema(Tenant, created.body);
    expect(tenant.name).toBe(name);
    expect(tenant._links['documents-ui'][0]?.rel).toBe('eu-1');
    const dup = await admin.json('POST', '/v0/tenants', { name, cells: ['us-1'] });
    expect(dup.status).toBe(409);
    expect(message(dup.body)).toMatch(/^name/);
    const badName = await admin.json('POST', '/v0/tenants', { name: 'Bad-Name', cells: ['eu-1'] });
    expect(badName.status).toBe(400);
    expect(message(badName.body)).toMatch(/^name/);
    const twoCells = await admin.json('POST', '/v0/tenants', { name: 'x2', cells: ['eu-1', 'us-1'] });
    expect(twoCells.status).toBe(400);
    expect(message(twoCells.body)).toMatch(/^cells/);
    const apps = await admin.get(`/v0/tenants/${tenant.id}/applications`);
    expect(apps.status).toBe(200);
    const list = expectSchema(ApplicationList, apps.body);
    expect(list.items[0]?.credentials).toMatchObject({ alg: 'RS256' });
    expect(list.items[0]?._links.token_url).toBe(sb.tokenUrl);
    expect((await admin.get('/v0/tenants/nope/applications')).status).toBe(404);
  });
});

describe('POST /v2/submission', () => {
  test('an empty body creates a FRAUD_ONLY submission with a pre-signed upload URL', async () => {
    const res = await call(`${sb.baseUrl}/v2/submission`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await token(sb)}` },
    });
    expect(res.status).toBe(200);
    const body = expectSchema(SubmissionResponse, res.body);
    expect(body.upload_url).toMatch(/\/_upload\/.+\?expires=\d+&sig=/);
    expect(body.submission_characteristics_upload_url).toBeUndefined();
  });

  test.each([
    [{ query_id: 'x'.repeat(1025) }, /^query_id/],
    [{ pipeline_configuration: 'EVERYTHING' }, /^pipeline_configuration/],
    [{ enable_decision: 'yes' }, /^enable_decision/],
    [{ enable_submission_characteristics: 1 }, /^enable_submission_characteristics/],
    [{ surprise: true }, /surprise/],
  ])('400 naming the failing field for %j', async (body, field) => {
    const res = await c.json('POST', '/v2/submission', body);
    expect(res.status).toBe(400);
    expect(message(res.body)).toMatch(field);
  });

  test('invalid JSON is 400 and a non-JSON content type is 415', async () => {
    const bad = await c.json('POST', '/v2/submission', '{"query_id":');
    expect(bad.status).toBe(400);
    expect(message(bad.body)).toMatch(/invalid JSON/);
    const res = await call(`${sb.baseUrl}/v2/submission`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await token(sb)}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(res.status).toBe(415);
    expect(message(res.body)).toMatch(/Content-Type/);
  });
});

describe('pre-signed upload URL', () => {
  test('forged signature 403, wrong content type 415, second upload 409', async () => {
    const s = await c.create();
    const forged = await upload(s.upload_url.replace(/sig=[^&]+/, 'sig=AAAA'), await pdf());
    expect(forged.status).toBe(403);
    const otherId = await c.create();
    const swapped = await upload(s.upload_url.replace(s.submission_id, otherId.submission_id), await pdf());
    expect(swapped.status).toBe(403);
    const wrongType = await upload(s.upload_url, await pdf(), 'application/pdf');
    expect(wrongType.status).toBe(415);
    expect((await upload(s.upload_url, await pdf())).status).toBe(200);
    const second = await upload(s.upload_url, await pdf());
    expect(second.status).toBe(409);
    expect(message(second.body)).toMatch(/already/);
  });

  test('an upload over maxUploadBytes is 413 with a message, and the submission can still be uploaded', async () => {
    sb.configure({ maxUploadBytes: 1024 });
    try {
      const s = await c.create();
      const big = await upload(s.upload_url, Buffer.alloc(4096, 1));
      expect(big.status).toBe(413);
      expect(message(big.body)).toMatch(/maxUploadBytes/);
      expect((await upload(s.upload_url, TINY_PNG)).status).toBe(200);
    } finally {
      sb.configure({ maxUploadBytes: 100 * 1024 * 1024 });
    }
  });

  test('an expired upload URL is 403', async () => {
    const short = await startSandbox({ uploadUrlTtlSeconds: 1 });
    try {
      const s = await api(short, await token(short)).create();
      await new Promise((r) => setTimeout(r, 1100));
      const res = await upload(s.upload_url, await pdf());
      expect(res.status).toBe(403);
      expect(message(res.body)).toMatch(/expired/);
    } finally {
      await short.close();
    }
  });
});

describe('results (rule 3: 200 once processing finished, with success or an error variant)', () => {
  test('404 before upload; afterwards every result validates against its schema', async () => {
    const s = await c.create({ query_id: 'results-1' });
    for (const kind of ['fraud', 'quality', 'classification', 'content']) {
      const early = await c.get(`/v2/submission/${s.submission_id}/${kind}`);
      expect(early.status).toBe(404);
      expect(message(early.body)).toMatch(/not ready/);
    }
    await upload(s.upload_url, await pdf({ title: 'Invoice 2024-17', text: 'Invoice total 42 EUR' }));
    const id = s.submission_id;
    const fraud = expectSchema(
      FraudSuccess,
      (await until200(() => c.get(`/v2/submission/${id}/fraud`))).body,
    );
    expect(fraud.query_id).toBe('results-1');
    expect(fraud.file_type).toBe('pdf');
    expect(fraud.num_pages).toBe(1);
    expect(fraud.score).toBe('NORMAL');
    expect(fraud.document_tags).toEqual(expect.arrayContaining(['PDF', 'DIGITAL']));
    expectSchema(QualitySuccess, (await until200(() => c.get(`/v2/submission/${id}/quality`))).body);
    const cls = expectSchema(
      ClassificationSuccess,
      (await until200(() => c.get(`/v2/submission/${id}/classification`))).body,
    );
    expect(cls.document_type).toBe('invoice');
    const content = expectSchema(
      ContentSuccess,
      (await until200(() => c.get(`/v2/submission/${id}/content`))).body,
    );
    expect(content.pages[0]?.text).toContain('Invoice total 42 EUR');
  });

  test('with_metadata adds indicator metadata; omitted or false leaves it out; other values 400', async () => {
    const s = await uploaded({}, await pdf({ producer: 'Adobe Photoshop 25.0' }));
    const path = `/v2/submission/${s.submission_id}/fraud`;
    const plain = expectSchema(FraudSuccess, (await until200(() => c.get(path))).body);
    expect(plain.score).toBe('HIGH_RISK');
    expect(plain.indicators[0]).toMatchObject({ type: 'RISK', origin: 'fraud' });
    expect(plain.indicators[0]?.metadata).toBeUndefined();
    const off = expectSchema(FraudSuccess, (await c.get(`${path}?with_metadata=false`)).body);
    expect(off.indicators[0]?.metadata).toBeUndefined();
    const on = expectSchema(FraudSuccess, (await c.get(`${path}?with_metadata=true`)).body);
    expect(on.indicators[0]?.metadata).toMatchObject({ type: 'DataOnly', column_names: ['field', 'value'] });
    expect(on.indicators[0]?.metadata?.title).toEqual(expect.any(String));
    const bad = await c.get(`${path}?with_metadata=maybe`);
    expect(bad.status).toBe(400);
    expect(message(bad.body)).toMatch(/^with_metadata/);
  });

  test('unsupported files get the UNPROCESSABLE_INPUT_ENTITY variant', async () => {
    const s = await uploaded({}, Buffer.from('just some text, not a document'));
    for (const kind of ['fraud', 'quality', 'classification']) {
      const body = expectSchema(
        ResultOther,
        (await until200(() => c.get(`/v2/submission/${s.submission_id}/${kind}`))).body,
      );
      expect(body.status).toBe('UNPROCESSABLE_INPUT_ENTITY');
      expect(body).toMatchObject({ file_type: 'unsupported' });
    }
  });

  test('results a pipeline does not produce are the PIPELINE_SKIPPED variant', async () => {
    const s = await uploaded({ pipeline_configuration: 'QUALITY_ONLY' });
    const fraud = expectSchema(
      ResultOther,
      (await until200(() => c.get(`/v2/submission/${s.submission_id}/fraud`))).body,
    );
    expect(fraud.status).toBe('PIPELINE_SKIPPED');
    expectSchema(
      QualitySuccess,
      (await until200(() => c.get(`/v2/submission/${s.submission_id}/quality`))).body,
    );
  });

  test('a small image is LOW_QUALITY with a quality indicator', async () => {
    const s = await uploaded({}, TINY_PNG);
    const q = expectSchema(
      QualitySuccess,
      (await until200(() => c.get(`/v2/submission/${s.submission_id}/quality`))).body,
    );
    expect(q.file_type).toBe('image');
    expect(q.score).toBe('LOW_QUALITY');
    expect(q.indicators[0]).toMatchObject({ origin: 'quality' });
  });

  test('unknown submissions are 404 on every result endpoint', async () => {
    for (const kind of ['fraud', 'quality', 'classification', 'content', 'decision', 'report', 'feedback']) {
      const res = await c.get(`/v2/submission/00000000-0000-0000-0000-000000000000/${kind}`);
      expect(res.status).toBe(404);
      expect(message(res.body)).toMatch(/does not exist/);
    }
  });

  test('a body with a non-JSON content type is 415 on result endpoints that list 415, ignored on classification', async () => {
    const s = await uploaded();
    const headers = { authorization: `Bearer ${await token(sb)}`, 'content-type': 'text/plain' };
    const fraud = await raw(`${sb.baseUrl}/v2/submission/${s.submission_id}/fraud`, 'GET', headers, 'hello');
    expect(fraud.status).toBe(415);
    const del = await raw(`${sb.baseUrl}/v2/submission/${s.submission_id}`, 'DELETE', headers, 'hello');
    expect(del.status).toBe(415);
    const cls = await raw(
      `${sb.baseUrl}/v2/submission/${s.submission_id}/classification`,
      'GET',
      headers,
      'hello',
    );
    expect(cls.status).not.toBe(415);
  });
});

describe('characteristics (rule 2 and endpoint rule 1)', () => {
  const valid = { document_characteristics: { document_type: 'invoice', source_channel: 'web' } };

  test('not enabled: 400', async () => {
    const s = await c.create();
    const res = await c.json('PUT', `/v2/submission/${s.submission_id}/characteristics`, valid);
    expect(res.status).toBe(400);
    expect(message(res.body)).toMatch(/enable_submission_characteristics/);
  });

  test('enabled: analysis waits for them; PUT gives 204 and starts it', async () => {
    const s = await c.create({ enable_submission_characteristics: true });
    expect(s.submission_characteristics_upload_url).toBe(`/v2/submission/${s.submission_id}/characteristics`);
    await upload(s.upload_url, await pdf());
    await new Promise((r) => setTimeout(r, 150));
    expect((await c.get(`/v2/submission/${s.submission_id}/fraud`)).status).toBe(404);
    const listed = await call(`${sb.baseUrl}/_sandbox/submissions`);
    const mine = (listed.body as { items: Array<{ id: string; state: string }> }).items.find(
      (x) => x.id === s.submission_id,
    );
    expect(mine?.state).toBe('awaiting_characteristics');
    const put = await call(`${sb.baseUrl}${s.submission_characteristics_upload_url}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await token(sb)}`, 'content-type': 'application/json' },
      body: JSON.stringify(valid),
    });
    expect(put.status).toBe(204);
    expectSchema(FraudSuccess, (await until200(() => c.get(`/v2/submission/${s.submission_id}/fraud`))).body);
  });

  test('PUT before the upload is allowed', async () => {
    const s = await c.create({ enable_submission_characteristics: true });
    expect((await c.json('PUT', `/v2/submission/${s.submission_id}/characteristics`, valid)).status).toBe(
      204,
    );
    await upload(s.upload_url, await pdf());
    expectSchema(FraudSuccess, (await until200(() => c.get(`/v2/submission/${s.submission_id}/fraud`))).body);
  });

  test('400 naming the field, 400 without body, 415, 404', async () => {
    const s = await c.create({ enable_submission_characteristics: true });
    const path = `/v2/submission/${s.submission_id}/characteristics`;
    const bad = await c.json('PUT', path, { document_characteristics: { document_side: 'left' } });
    expect(bad.status).toBe(400);
    expect(message(bad.body)).toMatch(/^document_characteristics\.document_side/);
    const ip = await c.json('PUT', path, { device_characteristics: { device_ip_address: '1'.repeat(40) } });
    expect(message(ip.body)).toMatch(/^device_characteristics\.device_ip_address/);
    const none = await call(`${sb.baseUrl}${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await token(sb)}` },
    });
    expect(none.status).toBe(400);
    const text = await call(`${sb.baseUrl}${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await token(sb)}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(text.status).toBe(415);
    expect(
      (await c.json('PUT', '/v2/submission/unknown-submission-id-00000/characteristics', valid)).status,
    ).toBe(404);
  });
});

describe('Adaptive Decision (endpoint rule 2, state rule 3)', () => {
  test('400 when not enabled', async () => {
    const s = await uploaded();
    const res = await c.get(`/v2/submission/${s.submission_id}/decision`);
    expect(res.status).toBe(400);
    expect(message(res.body)).toMatch(/enable_decision/);
  });

  test('404 until the verdict is ready, then 200 following the rules; embed puts the input data in', async () => {
    const s = await c.create({ enable_decision: true, query_id: 'dec-1' });
    const path = `/v2/submission/${s.submission_id}/decision`;
    expect((await c.get(path)).status).toBe(404);
    await upload(s.upload_url, await pdf({ producer: 'GIMP 2.10' }));
    const res = await until200(() => c.get(path));
    const d = expectSchema(DecisionSuccess, res.body);
    expect(d.decision).toBe('DECLINED');
    expect(d.decision_inputs.fraud).toEqual({ url: `/v2/submission/${s.submission_id}/fraud`, data: null });
    expect(d.reason.fraud_score).toMatchObject({ value: 'HIGH_RISK' });
    const embedded = expectSchema(DecisionSuccess, (await c.get(`${path}?embed=fraud`)).body);
    expectSchema(FraudSuccess, embedded.decision_inputs.fraud?.data);
    const bad = await c.get(`${path}?embed=fraud,nonsense`);
    expect(bad.status).toBe(400);
    expect(message(bad.body)).toMatch(/^embed/);
  });

  test('decision rules are configurable', async () => {
    sb.configure({ decisionRules: { NORMAL: 'FAST_TRACK' } });
    try {
      const s = await uploaded({ enable_decision: true });
      const d = expectSchema(
        DecisionSuccess,
        (await until200(() => c.get(`/v2/submission/${s.submission_id}/decision`))).body,
      );
      expect(d.decision).toBe('FAST_TRACK');
    } finally {
      sb.configure({ decisionRules: { NORMAL: 'APPROVED' } });
    }
  });

  test('a failed variant when fraud was unprocessable', async () => {
    const s = await uploaded({ enable_decision: true }, Buffer.from('plain text'));
    const d = expectSchema(
      ResultOther,
      (await until200(() => c.get(`/v2/submission/${s.submission_id}/decision`))).body,
    );
    expect(d.status).toBe('PIPELINE_FAILED');
    expect(d.message).toMatch(/UNPROCESSABLE_INPUT_ENTITY/);
  });
});

describe('delete (rule 4)', () => {
  test('409 while processing; 204 when done; then 404 everywhere', async () => {
    sb.configure({ processing: { distribution: 'fixed', meanMs: 1500 } });
    let s;
    try {
      s = await uploaded({ enable_decision: true });
    } finally {
      sb.configure({ processing: FAST });
    }
    const path = `/v2/submission/${s.submission_id}`;
    const busy = await c.del(path);
    expect(busy.status).toBe(409);
    expect(message(busy.body)).toMatch(/retry/);
    await until200(() => c.get(`${path}/decision`));
    for (let i = 0; i < 100 && (await c.del(path)).status === 409; i++)
      await new Promise((r) => setTimeout(r, 25));
    for (const kind of ['fraud', 'quality', 'decision', 'feedback'])
      expect((await c.get(`${path}/${kind}`)).status).toBe(404);
    expect((await c.del(path)).status).toBe(404);
    expect((await c.json('PUT', `${path}/feedback`, { outcome: 'FRAUD' })).status).toBe(404);
  });

  test('a submission that was never uploaded can be deleted', async () => {
    const s = await c.create();
    expect((await c.del(`/v2/submission/${s.submission_id}`)).status).toBe(204);
  });
});

describe('report (rule 5)', () => {
  test('200 with a downloadable PDF once fraud (and decision) succeeded', async () => {
    const s = await uploaded({ enable_decision: true });
    const path = `/v2/submission/${s.submission_id}/report`;
    await until200(() => c.get(`/v2/submission/${s.submission_id}/decision`));
    const res = await c.get(`${path}?include_decision=true`);
    expect(res.status).toBe(200);
    const report = expectSchema(ReportResponse, res.body);
    const download = await fetch(report.report_url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/pdf');
    expect(
      Buffer.from(await download.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
    const tampered = await fetch(
      report.report_url.replace('include_decision=true', 'include_decision=false'),
    );
    expect(tampered.status).toBe(403);
  });

  test('409 before fraud finished, when fraud was unprocessable or skipped, or the decision failed', async () => {
    sb.configure({ processing: { distribution: 'fixed', meanMs: 60_000 } });
    let slow;
    try {
      slow = await uploaded();
    } finally {
      sb.configure({ processing: FAST });
    }
    expect((await c.get(`/v2/submission/${slow.submission_id}/report`)).status).toBe(409);
    const text = await uploaded({}, Buffer.from('plain text'));
    await until200(() => c.get(`/v2/submission/${text.submission_id}/fraud`));
    const unprocessable = await c.get(`/v2/submission/${text.submission_id}/report`);
    expect(unprocessable.status).toBe(409);
    expect(message(unprocessable.body)).toMatch(/UNPROCESSABLE_INPUT_ENTITY/);
    const skipped = await uploaded({ pipeline_configuration: 'CLASSIFICATION_ONLY' });
    await until200(() => c.get(`/v2/submission/${skipped.submission_id}/classification`));
    expect((await c.get(`/v2/submission/${skipped.submission_id}/report`)).status).toBe(409);
  });

  test('400 for include_decision without enable_decision or with a non-boolean value', async () => {
    const s = await uploaded();
    await until200(() => c.get(`/v2/submission/${s.submission_id}/fraud`));
    const res = await c.get(`/v2/submission/${s.submission_id}/report?include_decision=true`);
    expect(res.status).toBe(400);
    expect(message(res.body)).toMatch(/^include_decision/);
    expect((await c.get(`/v2/submission/${s.submission_id}/report?include_decision=1`)).status).toBe(400);
    expect((await c.get(`/v2/submission/${s.submission_id}/report`)).status).toBe(200);
  });
});

describe('feedback', () => {
  test('404 before any, 400 naming a missing field, 200 stored and read back', async () => {
    const s = await c.create();
    const path = `/v2/submission/${s.submission_id}/feedback`;
    expect((await c.get(path)).status).toBe(404);
    const missing = await c.json('PUT', path, { comment: 'no outcome' });
    expect(missing.status).toBe(400);
    expect(message(missing.body)).toMatch(/^outcome/);
    const put = await c.json('PUT', path, {
      outcome: 'NOT_FRAUD',
      comment: 'checked by hand',
      labels: ['manual'],
    });
    expect(put.status).toBe(200);
    const stored = expectSchema(FeedbackResponse, put.body);
    expect(stored).toMatchObject({ submission_id: s.submission_id, outcome: 'NOT_FRAUD' });
    const got = await c.get(path);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(stored);
    const text = await call(`${sb.baseUrl}${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await token(sb)}`, 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(415);
  });
});

describe('fraud rules', () => {
  const score = async (bytes: Uint8Array) => {
    const s = await uploaded({}, bytes);
    return expectSchema(
      FraudSuccess,
      (await until200(() => c.get(`/v2/submission/${s.submission_id}/fraud`))).body,
    );
  };

  test('trusted generator → TRUSTED with the TRUSTED tag', async () => {
    const f = await score(await pdf({ producer: 'docstream-trusted generator 1.0' }));
    expect(f.score).toBe('TRUSTED');
    expect(f.document_tags).toContain('TRUSTED');
  });

  test('incremental updates and a creation/modification gap → WARNING', async () => {
    const updated = Buffer.concat([
      Buffer.from(await pdf({ title: 'incremental' })),
      Buffer.from('\n% appended revision\n%%EOF\n'),
    ]);
    const f1 = await score(updated);
    expect(f1.score).toBe('WARNING');
    expect(f1.indicators.map((i) => i.indicator_id)).toContain('incremental_update');
    const f2 = await score(
      await pdf({ created: new Date('2020-01-01T00:00:00Z'), modified: new Date('2024-06-01T00:00:00Z') }),
    );
    expect(f2.score).toBe('WARNING');
    expect(f2.indicators.map((i) => i.indicator_id)).toContain('date_mismatch');
  });

  test('the same file submitted again carries a serial-fraud indicator', async () => {
    const bytes = await pdf({ title: `serial ${Date.now()}` });
    const first = await uploaded({ query_id: 'serial-a' }, bytes);
    const f1 = expectSchema(
      FraudSuccess,
      (await until200(() => c.get(`/v2/submission/${first.submission_id}/fraud`))).body,
    );
    expect(f1.indicators.find((i) => i.indicator_attributes)).toBeUndefined();
    const second = await uploaded({ query_id: 'serial-b' }, bytes);
    const f2 = expectSchema(
      FraudSuccess,
      (await until200(() => c.get(`/v2/submission/${second.submission_id}/fraud`))).body,
    );
    const attrs = f2.indicators.find((i) => i.indicator_attributes)?.indicator_attributes;
    expect(attrs).toMatchObject({
      type: 'SerialFraudIndicatorAttributes',
      cluster_submission_ids_sample: [first.submission_id],
      cluster_query_ids_sample: ['serial-a'],
    });
  });
});

describe('inspection under /_sandbox', () => {
  test('submissions by query_id, stats, config validation, reset', async () => {
    const q = `inspect-${Date.now()}`;
    await c.create({ query_id: q });
    await c.create({ query_id: q });
    const listed = await call(`${sb.baseUrl}/_sandbox/submissions?query_id=${q}`);
    expect(listed.status).toBe(200);
    expect((listed.body as { count: number }).count).toBe(2);
    const stats = await call(`${sb.baseUrl}/_sandbox/stats`);
    expect((stats.body as { submissionsByQueryId: Record<string, number> }).submissionsByQueryId[q]).toBe(2);
    expect(sb.stats().requests['POST /v2/submission 200']).toBeGreaterThanOrEqual(2);
    const bad = await call(`${sb.baseUrl}/_sandbox/config`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ faults: { errorRate: 3 } }),
    });
    expect(bad.status).toBe(400);
    expect(message(bad.body)).toMatch(/^faults\.errorRate/);
    const reset = await call(`${sb.baseUrl}/_sandbox/reset`, { method: 'POST' });
    expect(reset.status).toBe(204);
    expect(sb.stats().submissionsCreated).toBe(0);
  });
});

describe('eviction', () => {
  test('past maxSubmissions the oldest idle submissions go', async () => {
    const small = await startSandbox({ maxSubmissions: 3 });
    try {
      const sc = api(small, await token(small));
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push((await sc.create()).submission_id);
      const listed = await call(`${small.baseUrl}/_sandbox/submissions`);
      expect((listed.body as { items: Array<{ id: string }> }).items.map((x) => x.id)).toEqual(ids.slice(2));
      expect((await sc.get(`/v2/submission/${ids[0]}/fraud`)).status).toBe(404);
    } finally {
      await small.close();
    }
  });
});
