import { createServer } from 'node:net';
import { Readable } from 'node:stream';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportSPKI, generateKeyPair, exportPKCS8, jwtVerify, decodeProtectedHeader, importSPKI } from 'jose';
import { DocumentAnalysisClient, type ClientOptions } from './client.js';
import {
  ApiError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  NotReadyError,
  PermissionError,
  RateLimitError,
  ResponseValidationError,
  ServerError,
  UnsupportedMediaTypeError,
  ValidationError,
} from './errors.js';
import { responseText, type CallEvent } from './http.js';
import { JumpingClock, json, MockServer, type Recorded } from './test-helpers.js';
import { TenantClient } from './tenant-client.js';

const ID = 'sub-0123456789abcdef0123456';
const SHA = 'a'.repeat(64);

const fraudBody = {
  status: 'SUCCESS',
  analysis_time: '2026-01-01T00:00:00Z',
  file_type: 'pdf',
  mime_type: 'application/pdf',
  deployment_version: '1.0',
  query_id: null,
  sha256: SHA,
  filtered_parsed_pages: [],
  num_pages: 1,
  document_tags: ['PDF'],
  score: 'NORMAL',
  sample_metadata: {},
  indicators: [],
  future_field: 'kept',
};

let server: MockServer;
let clock: JumpingClock;
let tokenCount = 0;
let tokenDelayMs = 0;

/** Default routes: a token endpoint handing out tok-1, tok-2, ... and an API handler per test. */
function route(api: (req: Recorded, res: Parameters<MockServer['handler']>[1]) => void | Promise<void>) {
  server.handler = async (req, res) => {
    if (req.path === '/oauth2/token') {
      tokenCount += 1;
      const token = `tok-${tokenCount}`;
      if (tokenDelayMs) await new Promise((r) => setTimeout(r, tokenDelayMs));
      json(res, 200, {
        access_token: token,
        token_type: 'Bearer',
        expires_in: 3600,
        scope: 'submissions.read',
      });
      return;
    }
    await api(req, res);
  };
}

function client(overrides: Partial<ClientOptions> = {}): DocumentAnalysisClient {
  return new DocumentAnalysisClient({
    baseUrl: server.baseUrl,
    clientId: 'sandbox-client',
    clientSecret: 'sandbox-secret',
    rateLimit: { ratePerSecond: 1000 },
    // Transient failure is retried until the time budget: 2 s of the jumping clock, a few dozen tries at most.
    retry: { minDelayMs: 10, maxDelayMs: 50, maxTotalMs: 2000 },
    // The gate's probes run on real timers; the gate has tests of its own (health.test.ts).
    health: { failuresToTrip: 1_000_000 },
    timeoutMs: 2000,
    clock,
    ...overrides,
  });
}

async function caught(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeEach(async () => {
  server = await new MockServer().start();
  clock = new JumpingClock();
  tokenCount = 0;
  tokenDelayMs = 0;
});

afterEach(async () => {
  await server.close();
});

describe('authentication', () => {
  it('sends the secret by HTTP Basic and caches the token across calls', async () => {
    route((_req, res) => json(res, 200, fraudBody));
    const c = client();
    for (let i = 0; i < 3; i++) await c.getFraud(ID);
    const tokenRequests = server.requests.filter((r) => r.path === '/oauth2/token');
    expect(tokenRequests).toHaveLength(1);
    const basic = Buffer.from('sandbox-client:sandbox-secret').toString('base64');
    expect(tokenRequests[0]?.headers.authorization).toBe(`Basic ${basic}`);
    expect(new URLSearchParams(tokenRequests[0]?.body).get('grant_type')).toBe('client_credentials');
    const api = server.requests.filter((r) => r.path !== '/oauth2/token');
    expect(api.map((r) => r.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-1']);
  });

  it('makes one token request however many calls wait for it', async () => {
    tokenDelayMs = 50;
    route((_req, res) => json(res, 200, fraudBody));
    const c = client();
    await Promise.all(Array.from({ length: 10 }, () => c.getFraud(ID)));
    expect(server.count('POST', '/oauth2/token')).toBe(1);
    expect(c.tokenRequests).toBe(1);
  });

  it('keeps the exact text of a validated answer for callers that pass the whole body on', async () => {
    // Not what JSON.stringify of the parsed body gives: the API's own spacing.
    const text = JSON.stringify(fraudBody, null, 2);
    route((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    });
    const result = await client().getFraud(ID);
    expect(result.score).toBe('NORMAL');
    expect(responseText(result)).toBe(text);
    expect(responseText({ ...result })).toBeUndefined();
    expect(responseText('text')).toBeUndefined();
  });

  it('on 401 refreshes the token once and resends once', async () => {
    route((req, res) =>
      req.headers.authorization === 'Bearer tok-1'
        ? json(res, 401, { message: 'expired' })
        : json(res, 200, fraudBody),
    );
    const events: CallEvent[] = [];
    const result = await client({ onCall: (e) => events.push(e) }).getFraud(ID);
    expect(result.status).toBe('SUCCESS');
    expect(events.filter((e) => e.endpoint.endsWith('/fraud')).map((e) => [e.status, e.retried])).toEqual([
      [401, false],
      [200, true],
    ]);
    expect(server.count('POST', '/oauth2/token')).toBe(2);
    expect(server.count('GET', /fraud$/)).toBe(2);
  });

  it('gives up with AuthenticationError when the fresh token is refused too', async () => {
    route((_req, res) => json(res, 401, { message: 'no' }));
    const error = await caught(client().getFraud(ID));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.status).toBe(401);
    expect(error.retriable).toBe(false);
    expect(server.count('GET', /fraud$/)).toBe(2);
    expect(server.count('POST', '/oauth2/token')).toBe(2);
  });

  it('refreshes at most once per call, across retried attempts', async () => {
    let calls = 0;
    route((req, res) => {
      calls += 1;
      if (calls === 2) return json(res, 503, { message: 'busy' });
      return json(res, 401, { message: `refused ${req.headers.authorization}` });
    });
    const error = await caught(client().getFraud(ID));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(server.count('GET', /fraud$/)).toBe(3);
    expect(server.count('POST', '/oauth2/token')).toBe(2);
  });

  it('refreshes a token before it expires', async () => {
    server.handler = (req, res) => {
      if (req.path === '/oauth2/token') {
        tokenCount += 1;
        return json(res, 200, { access_token: `tok-${tokenCount}`, token_type: 'Bearer', expires_in: 10 });
      }
      return json(res, 200, fraudBody);
    };
    const c = client();
    await c.getFraud(ID);
    await clock.sleep(9_500); // past the refresh margin (10% of 10 s), still before expiry
    await c.getFraud(ID);
    expect(server.count('POST', '/oauth2/token')).toBe(2);
  });

  it('maps a refused token request to AuthenticationError with the OAuth error text', async () => {
    server.handler = (_req, res) =>
      json(res, 401, { error: 'invalid_client', error_description: 'bad secret' });
    const error = await caught(client().getFraud(ID));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.endpoint).toBe('POST /oauth2/token');
    expect(error.message).toContain('invalid_client: bad secret');
  });

  it('signs a private_key_jwt assertion for the tenant API', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const pem = await exportPKCS8(privateKey);
    const spki = await importSPKI(await exportSPKI(publicKey), 'RS256');
    let assertion = '';
    server.handler = (req, res) => {
      if (req.path === '/oauth2/token') {
        assertion = new URLSearchParams(req.body).get('client_assertion') ?? '';
        return json(res, 200, { access_token: 'tenant-tok', token_type: 'Bearer', expires_in: 3600 });
      }
      return json(res, 200, { items: [] });
    };
    const tenants = new TenantClient({
      baseUrl: server.baseUrl,
      clientId: 'tenant-admin',
      privateKey: pem,
      kid: 'key-1',
      scopes: ['tenants.applications.read'],
      clock,
    });
    await expect(tenants.listApplications('t1')).resolves.toEqual({ items: [] });
    const tokenRequest = server.requests.find((r) => r.path === '/oauth2/token');
    const form = new URLSearchParams(tokenRequest?.body);
    expect(form.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    expect(form.get('scope')).toBe('tenants.applications.read');
    expect(tokenRequest?.headers.authorization).toBeUndefined();
    expect(decodeProtectedHeader(assertion)).toMatchObject({ alg: 'RS256', kid: 'key-1' });
    const { payload } = await jwtVerify(assertion, spki, {
      issuer: 'tenant-admin',
      subject: 'tenant-admin',
      audience: `${server.baseUrl}/oauth2/token`,
    });
    expect(typeof payload.jti).toBe('string');
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(60);
    expect(server.requests.find((r) => r.path === '/v0/tenants/t1/applications')?.headers.authorization).toBe(
      'Bearer tenant-tok',
    );
  });
});

describe('retries', () => {
  it('waits at least the Retry-After of a 429, spread by jitter, and lowers the rate', async () => {
    let calls = 0;
    route((_req, res) =>
      ++calls === 1
        ? json(res, 429, { message: 'slow down' }, { 'retry-after': '2' })
        : json(res, 200, fraudBody),
    );
    const c = client({ retry: { maxTotalMs: 10_000 } });
    await c.getFraud(ID);
    expect(server.count('GET', /fraud$/)).toBe(2);
    const wait = clock.sleeps.find((ms) => ms >= 2000) ?? 0;
    expect(wait).toBeGreaterThanOrEqual(2000);
    expect(wait).toBeLessThanOrEqual(3000);
    // The 429 set a limit found, and the rate fell below the limiter's starting 10/s.
    expect(c.limiter.limitFound()).toBeDefined();
    expect(c.limiter.currentRate()).toBeLessThan(10);
  });

  it('honours Retry-After as an HTTP date', async () => {
    let calls = 0;
    route((_req, res) => {
      const at = new Date(Date.now() + 3000).toUTCString();
      return ++calls === 1
        ? json(res, 429, { message: 'slow down' }, { 'retry-after': at })
        : json(res, 200, fraudBody);
    });
    await client({ retry: { maxTotalMs: 10_000 } }).getFraud(ID);
    expect(server.count('GET', /fraud$/)).toBe(2);
    const retryWait = Math.max(...clock.sleeps);
    expect(retryWait).toBeGreaterThan(1000);
    expect(retryWait).toBeLessThanOrEqual(4500);
  });

  it('spreads calls refused together with one Retry-After instead of sending them again at one instant', async () => {
    const resentAt: number[] = [];
    const refused = new Set<string>();
    route((req, res) => {
      if (!refused.has(req.path)) {
        refused.add(req.path);
        return json(res, 429, { message: 'later' }, { 'retry-after': '1' });
      }
      resentAt.push(Date.now());
      return json(res, 200, fraudBody);
    });
    // Real time: the waits are what is measured.
    const c = client({ clock: undefined, retry: { maxTotalMs: 10_000 } });
    const ids = Array.from({ length: 8 }, (_, i) => ID.replace(/.$/, String(i)));
    await Promise.all(ids.map((id) => c.getFraud(id)));
    expect(resentAt).toHaveLength(8);
    // The old limiter held everyone until one instant; now each waits 1 s plus its own jitter (0-0.5 s).
    expect(Math.max(...resentAt) - Math.min(...resentAt)).toBeGreaterThanOrEqual(100);
  });

  it('retries 5xx with back-off and reports each attempt', async () => {
    const events: CallEvent[] = [];
    let calls = 0;
    route((_req, res) => (++calls <= 2 ? json(res, 503, { message: 'busy' }) : json(res, 200, fraudBody)));
    await client({ onCall: (e) => events.push(e) }).getFraud(ID, { withMetadata: true });
    const api = events.filter((e) => e.endpoint !== '/oauth2/token');
    expect(api.map((e) => [e.status, e.attempt, e.retried])).toEqual([
      [503, 1, false],
      [503, 2, true],
      [200, 3, true],
    ]);
    expect(api[0]?.method).toBe('GET');
    expect(api[0]?.endpoint).toBe('/v2/submission/{id}/fraud');
    expect(server.requests.find((r) => r.path.endsWith('/fraud'))?.query.get('with_metadata')).toBe('true');
  });

  it('retries transient failure until the time budget is spent, using up no attempt, then says how often it tried', async () => {
    route((_req, res) => json(res, 500, { message: 'boom' }, { 'x-request-id': 'req-7' }));
    const error = await caught(client().getQuality(ID));
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({
      status: 500,
      method: 'GET',
      endpoint: 'GET /v2/submission/{id}/quality',
      submissionId: ID,
      retriable: true,
      requestId: 'req-7',
      body: { message: 'boom' },
      budgetSpent: true,
    });
    const sent = server.count('GET', /quality$/);
    // The old sender stopped after 6 attempts whatever the time left.
    expect(sent).toBeGreaterThan(6);
    expect(error.attempts).toBe(sent);
  });

  it('gives up when the time budget is too short for the Retry-After', async () => {
    route((_req, res) => json(res, 429, { message: 'no' }, { 'retry-after': '120' }));
    const error = await caught(client().getQuality(ID));
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(120_000);
    expect(server.count('GET', /quality$/)).toBe(1);
  });

  it('treats a token endpoint that cannot be reached as transient failure, and counts its tries', async () => {
    const port = await closedPort();
    const events: CallEvent[] = [];
    const c = client({ baseUrl: `http://127.0.0.1:${port}`, onCall: (e) => events.push(e) });
    const error = await caught(c.createSubmission());
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toBe('ECONNREFUSED');
    expect((error as ConnectionError).requestSent).toBe(false);
    // One token request per try of the call (the call retries, not the token request): the old
    // sender made 4 token requests inside one try and reported attempts: 1.
    const tokenTries = events.filter((e) => e.endpoint === '/oauth2/token').length;
    expect(tokenTries).toBeGreaterThan(4);
    expect(error.attempts).toBe(tokenTries);
  });

  it('waits out a token endpoint answering 503, then calls the API', async () => {
    let tokenCalls = 0;
    route((_req, res) => json(res, 200, fraudBody));
    const api = server.handler;
    server.handler = (req, res) => {
      if (req.path === '/oauth2/token' && ++tokenCalls <= 3) return json(res, 503, { message: 'down' });
      return api(req, res);
    };
    await client().getFraud(ID);
    expect(tokenCalls).toBe(4);
    expect(server.count('GET', /fraud$/)).toBe(1);
  });

  it('retries a create refused by a connection refused before sending', async () => {
    const port = await closedPort();
    const events: CallEvent[] = [];
    route((_req, res) => json(res, 200, { submission_id: ID, upload_url: `${server.baseUrl}/upload/x` }));
    const c = client({
      tokenUrl: `${server.baseUrl}/oauth2/token`,
      baseUrl: `http://127.0.0.1:${port}`,
      onCall: (e) => events.push(e),
    });
    await caught(c.createSubmission());
    expect(events.filter((e) => e.endpoint === '/v2/submission').length).toBeGreaterThan(6);
  });

  it("resends a create answered 5xx: transient failure, not the document's fault", async () => {
    let calls = 0;
    route((_req, res) =>
      ++calls <= 2
        ? json(res, 502, { message: 'bad gateway' })
        : json(res, 200, { submission_id: ID, upload_url: `${server.baseUrl}/upload/x` }),
    );
    const created = await client().createSubmission({ query_id: 'q1' });
    expect(created.submission_id).toBe(ID);
    expect(server.count('POST', '/v2/submission')).toBe(3);
  });

  it('resends a create whose connection was reset after sending', async () => {
    let calls = 0;
    route((_req, res) => {
      if (++calls === 1) res.socket?.destroy();
      else json(res, 200, { submission_id: ID, upload_url: `${server.baseUrl}/upload/x` });
    });
    await client().createSubmission();
    expect(server.count('POST', '/v2/submission')).toBe(2);
  });

  it('never resends a create refused with a 4xx', async () => {
    route((_req, res) => json(res, 400, { message: 'bad query_id' }));
    await caught(client().createSubmission());
    expect(server.count('POST', '/v2/submission')).toBe(1);
  });

  it('resends a call that timed out, a create included', async () => {
    route(() => {
      // never answers
    });
    const c = client({ timeoutMs: 100, retry: { minDelayMs: 10, maxDelayMs: 50, maxTotalMs: 500 } });
    const createError = await caught(c.createSubmission());
    expect(createError).toBeInstanceOf(ConnectionError);
    expect(server.count('POST', '/v2/submission')).toBeGreaterThan(1);
    await caught(c.getContent(ID));
    expect(server.count('GET', /content$/)).toBeGreaterThan(1);
  });

  it('resends a create answered 429', async () => {
    let calls = 0;
    route((_req, res) =>
      ++calls === 1
        ? json(res, 429, { message: 'later' }, { 'retry-after': '1' })
        : json(res, 200, { submission_id: ID, upload_url: `${server.baseUrl}/upload/x` }),
    );
    const created = await client().createSubmission();
    expect(created.submission_id).toBe(ID);
    expect(server.count('POST', '/v2/submission')).toBe(2);
  });

  it('treats a 404 on a resent DELETE as done (an earlier attempt deleted it)', async () => {
    let calls = 0;
    route((_req, res) =>
      ++calls === 1 ? json(res, 503, { message: 'busy' }) : json(res, 404, { message: 'gone' }),
    );
    await expect(client().deleteSubmission(ID)).resolves.toBeUndefined();
    expect(server.count('DELETE', `/v2/submission/${ID}`)).toBe(2);
  });
});

describe('error mapping', () => {
  const cases: [
    number,
    string,
    (c: DocumentAnalysisClient) => Promise<unknown>,
    new (...a: never[]) => ApiError,
    boolean,
  ][] = [
    [400, 'GET /v2/submission/{id}/decision', (c) => c.getDecision(ID), InvalidRequestError, false],
    [403, 'GET /v2/submission/{id}/classification', (c) => c.getClassification(ID), PermissionError, false],
    [404, 'GET /v2/submission/{id}/fraud', (c) => c.getFraud(ID), NotFoundError, false],
    [
      404,
      'GET /v2/submission/{id}/decision',
      (c) => c.getDecision(ID, { embed: ['fraud'] }),
      NotReadyError,
      true,
    ],
    [409, 'DELETE /v2/submission/{id}', (c) => c.deleteSubmission(ID), ConflictError, true],
    [409, 'GET /v2/submission/{id}/report', (c) => c.getReport(ID), ConflictError, false],
    [
      415,
      'PUT /v2/submission/{id}/feedback',
      (c) => c.putFeedback(ID, { outcome: 'FRAUD' }),
      UnsupportedMediaTypeError,
      false,
    ],
  ];
  it.each(cases)('%i on %s', async (status, endpoint, call, cls, retriable) => {
    route((_req, res) => json(res, status, { message: `status ${status}` }));
    const error = await caught(call(client()));
    expect(error).toBeInstanceOf(cls);
    expect(error).toMatchObject({
      status,
      endpoint,
      submissionId: ID,
      retriable,
      body: { message: `status ${status}` },
    });
    expect(error.message).toContain(`status ${status}`);
    expect(server.requests.filter((r) => r.path !== '/oauth2/token')).toHaveLength(1);
  });

  it('rejects a success body that breaks the schema, and keeps unknown fields of a good one', async () => {
    route((req, res) =>
      req.path.endsWith('/fraud')
        ? json(res, 200, fraudBody)
        : json(res, 200, { ...fraudBody, sha256: 'short' }),
    );
    const c = client();
    const fraud = await c.getFraud(ID);
    expect((fraud as Record<string, unknown>).future_field).toBe('kept');
    const error = await caught(c.getQuality(ID));
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect(error.message).toContain('sha256');
  });
});

describe('validation before sending', () => {
  const invalid: [string, (c: DocumentAnalysisClient) => Promise<unknown>][] = [
    ['query_id', (c) => c.createSubmission({ query_id: 'x'.repeat(1025) })],
    ['pipeline_configuration', (c) => c.createSubmission({ pipeline_configuration: 'ALL' as never })],
    ['surprise', (c) => c.createSubmission({ surprise: true } as never)],
    [
      'device_characteristics.device_ip_address',
      (c) => c.putCharacteristics(ID, { device_characteristics: { device_ip_address: '1'.repeat(40) } }),
    ],
    ['submission_id', (c) => c.getFraud('short')],
    ['outcome', (c) => c.putFeedback(ID, { outcome: 'MAYBE' as never })],
    ['upload_url', (c) => c.upload('/relative', Buffer.from('x'))],
    ['body', (c) => c.upload('http://127.0.0.1:1/u', '/no/such/file.pdf')],
  ];
  it.each(invalid)('%s', async (field, call) => {
    route((_req, res) => json(res, 500, {}));
    const error = await caught(call(client()));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect(server.requests).toHaveLength(0);
  });

  it('tenant name pattern and exactly one cell', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const tenants = new TenantClient({ baseUrl: server.baseUrl, clientId: 'a', privateKey, kid: 'k', clock });
    const bad = await caught(tenants.createTenant({ name: 'Bad_Name', cells: ['eu-1'] }));
    expect((bad as ValidationError).field).toBe('name');
    const cells = await caught(tenants.createTenant({ name: 'ok', cells: ['eu-1', 'us-1'] }));
    expect((cells as ValidationError).field).toBe('cells');
    expect(server.requests).toHaveLength(0);
  });
});

describe('options', () => {
  it('rejects unknown options loudly', () => {
    expect(() => client({ retries: 3 } as never)).toThrow(/unknown field retries/);
  });

  it('requires an address for a real cell, and resolves the testing cell', () => {
    expect(() => client({ baseUrl: undefined, cell: 'eu-1' })).toThrow(/no configured address/);
    const testing = client({ baseUrl: undefined, cell: 'testing' });
    expect(testing.baseUrl).toBe('http://localhost:8080');
    expect(testing.tokenUrl).toBe('http://localhost:8080/oauth2/token');
    const configured = client({
      baseUrl: undefined,
      cell: 'eu-1',
      cells: { 'eu-1': { baseUrl: 'https://eu.example' } },
    });
    expect(configured.tokenUrl).toBe('https://eu.example/oauth2/token');
  });
});

describe('submission flow', () => {
  it('creates, uploads without a token, and puts characteristics at a relative URL', async () => {
    route((req, res) => {
      if (req.method === 'POST') {
        return json(res, 200, {
          submission_id: ID,
          upload_url: `${server.baseUrl}/upload/${ID}?sig=abc`,
          submission_characteristics_upload_url: `/v2/submission/${ID}/characteristics`,
        });
      }
      if (req.path.startsWith('/upload/')) return json(res, 200, undefined);
      return json(res, 204, undefined);
    });
    const c = client();
    const created = await c.createSubmission({ enable_submission_characteristics: true });
    expect(created.submission_characteristics_upload_url).toBe(
      `${server.baseUrl}/v2/submission/${ID}/characteristics`,
    );
    await c.upload(created.upload_url, Buffer.from('%PDF-1.4 hello'));
    await c.putCharacteristics(created.submission_characteristics_upload_url ?? '', {
      customer_case_id: 'case-1',
    });

    const upload = server.requests.find((r) => r.path.startsWith('/upload/'));
    expect(upload?.headers.authorization).toBeUndefined();
    expect(upload?.headers['content-type']).toBe('application/octet-stream');
    expect(upload?.headers['content-length']).toBe('14');
    expect(upload?.body).toBe('%PDF-1.4 hello');
    const characteristics = server.requests.find((r) => r.path.endsWith('/characteristics'));
    expect(characteristics?.method).toBe('PUT');
    expect(characteristics?.headers.authorization).toBe('Bearer tok-1');
    expect(JSON.parse(characteristics?.body ?? '')).toEqual({ customer_case_id: 'case-1' });
  });

  it('retries an upload from a file path, never one from a one-shot stream', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'client-test-'));
    try {
      const file = join(dir, 'doc.pdf');
      await writeFile(file, 'file-bytes');
      let calls = 0;
      route((_req, res) => (++calls === 1 ? json(res, 503, { message: 'busy' }) : json(res, 200, undefined)));
      const c = client();
      await c.upload(`${server.baseUrl}/upload/a`, file);
      expect(server.requests.map((r) => r.body)).toEqual(['file-bytes', 'file-bytes']);

      calls = 0;
      const error = await caught(
        c.upload(`${server.baseUrl}/upload/b`, Readable.from([Buffer.from('once')])),
      );
      expect(error).toBeInstanceOf(ServerError);
      expect(error.endpoint).toBe('PUT {upload_url}');
      expect(server.count('PUT', '/upload/b')).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends decision embed and report include_decision as query parameters', async () => {
    route((req, res) =>
      req.path.endsWith('/report')
        ? json(res, 200, { report_url: 'http://x/r', expires_at: '2026-01-01T00:00:00Z' })
        : json(res, 200, {
            status: 'SUCCESS',
            adaptive_decision_version: '1',
            decision: 'APPROVED',
            decision_inputs: { fraud: { url: `/v2/submission/${ID}/fraud`, data: fraudBody } },
            reason: {},
          }),
    );
    const c = client();
    const decision = await c.getDecision(ID, { embed: ['fraud', 'quality'] });
    expect(decision.status).toBe('SUCCESS');
    await c.getReport(ID, { includeDecision: true });
    expect(server.requests.find((r) => r.path.endsWith('/decision'))?.query.get('embed')).toBe(
      'fraud,quality',
    );
    expect(server.requests.find((r) => r.path.endsWith('/report'))?.query.get('include_decision')).toBe(
      'true',
    );
  });
});
