/**
 * The sandbox as an attacker sees it: requests that try to skip authentication, break the
 * token endpoint or make it answer huge bodies.
 */
import { request as httpRequest } from 'node:http';
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { api, basic, call, token } from './helpers.js';

let sb: Sandbox;
let adminKey: CryptoKey;

beforeAll(async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  adminKey = privateKey;
  sb = await startSandbox({
    processing: { distribution: 'fixed', meanMs: 20 },
    clients: [
      {
        clientId: 'sandbox-client',
        clientSecret: 'sandbox-secret',
        scopes: ['submissions.read', 'submissions.write'],
      },
      {
        clientId: 'tenant-admin',
        publicKeyPem: await exportSPKI(publicKey),
        kid: 'admin-key-1',
        scopes: ['tenants.write'],
      },
    ],
    tokenUrls: ['https://auth.example.test/oauth2/token'],
  });
});

afterAll(async () => {
  await sb.close();
});

describe('percent-encoded API paths', () => {
  // The router decodes %76 to "v", so these reach the /v2 and /v0 routes.
  const disguised: Array<[string, string, string | undefined]> = [
    ['POST', '/%762/submission', '{}'],
    ['POST', '/%76%32/submission', '{}'],
    ['DELETE', '/%76%32/submission/x', undefined],
    ['GET', '/%762/submission/x/fraud', undefined],
    ['PUT', '/v%32/submission/x/feedback', '{}'],
    ['POST', '/%760/tenants', '{"name":"x","cells":["eu-1"]}'],
    ['GET', '/%760/tenants/x/applications', undefined],
  ];

  test.each(disguised)('%s %s without a token: 401', async (method, path, body) => {
    const res = await call(`${sb.baseUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(401);
  });

  test('a token without the route scope gets 403 on the encoded path too', async () => {
    const reader = await token(sb, 'sandbox-client', 'sandbox-secret', 'submissions.read');
    const res = await api(sb, reader).json('POST', '/%762/submission', {});
    expect(res.status).toBe(403);
  });
});

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('token endpoint', () => {
  test('malformed percent-encoding in Basic credentials is a 401, not a 500', async () => {
    for (const [id, secret] of [
      ['sandbox-client%', 'sandbox-secret'],
      ['sandbox-client', '%E0%A4%A'],
      ['%zz', '%'],
    ]) {
      const res = await call(sb.tokenUrl, {
        method: 'POST',
        headers: { ...FORM, authorization: basic(id as string, secret as string) },
        body: 'grant_type=client_credentials',
      });
      expect(res.status).toBe(401);
      expect((res.body as { error: string }).error).toBe('invalid_client');
    }
  });

  let jti = 0;
  const assertion = (aud: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'admin-key-1' })
      .setIssuer('tenant-admin')
      .setSubject('tenant-admin')
      .setAudience(aud)
      .setIssuedAt()
      .setExpirationTime('2m')
      .setJti(`security-${++jti}-${Date.now()}`)
      .sign(adminKey);

  /** POSTs an assertion with a chosen Host header (fetch does not let a caller set it). */
  const postAssertion = (jwt: string, host?: string) =>
    new Promise<number>((resolve, reject) => {
      const body = new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: jwt,
      }).toString();
      const req = httpRequest(
        sb.tokenUrl,
        {
          method: 'POST',
          headers: { ...FORM, 'content-length': Buffer.byteLength(body), ...(host ? { host } : {}) },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  test('the assertion audience is checked against configured token URLs, not the Host header', async () => {
    // An assertion minted for another server, replayed with a Host header that matches it.
    expect(
      await postAssertion(await assertion('http://evil.example.test/oauth2/token'), 'evil.example.test'),
    ).toBe(401);
    expect(await postAssertion(await assertion(sb.tokenUrl))).toBe(200);
    const port = new URL(sb.tokenUrl).port;
    expect(await postAssertion(await assertion(`http://localhost:${port}/oauth2/token`))).toBe(200);
    expect(await postAssertion(await assertion('https://auth.example.test/oauth2/token'))).toBe(200);
  });
});

describe('error bodies', () => {
  test('an error listing thousands of unknown fields answers a capped message', async () => {
    const c = api(sb, await token(sb));
    const body = Object.fromEntries(Array.from({ length: 20000 }, (_, i) => [`unknown_field_${i}`, 1]));
    const res = await c.json('POST', '/v2/submission', body);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(/^unknown fields unknown_field_0, /);
    expect(res.text.length).toBeLessThan(2048);
  });

  test('a 404 for a very long path does not echo all of it', async () => {
    const res = await call(`${sb.baseUrl}/${'a'.repeat(8000)}`);
    expect(res.status).toBe(404);
    expect(res.text.length).toBeLessThan(2048);
  });
});
