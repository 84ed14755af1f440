import { jest } from '@jest/globals';
import { OidcTokenSource } from './oidc-token.js';
import { settledOnFakeTime } from '../util/test-helpers.js';

const settled = <T>(work: Promise<T>) => settledOnFakeTime(work, 1_000);

function tokenEndpoint(answer: (n: number) => { status: number; body: unknown }) {
  const calls: Array<{ url: string; auth: string | null; form: URLSearchParams }> = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    calls.push({ url, auth: headers.get('authorization'), form: new URLSearchParams(String(init.body)) });
    await new Promise((r) => setTimeout(r, 5)); // on the fake clock
    const { status, body } = answer(calls.length);
    return new Response(JSON.stringify(body), { status });
  }) as unknown as typeof fetch;
  return { calls, fetchImpl };
}

const settings = {
  tokenUrl: 'https://idp.example/token',
  clientId: 'client',
  clientSecret: 'secret',
  scope: 'kafka read',
  settingPrefix: 'kafka.oauth',
};

describe('OidcTokenSource', () => {
  // The endpoint's answer and the token's expiry run on the fake clock; promise jobs, nextTick and
  // setImmediate stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('asks once for many concurrent callers, with the client credentials and the scope', async () => {
    const endpoint = tokenEndpoint((n) => ({
      status: 200,
      body: { access_token: `t${n}`, expires_in: 300, token_type: 'Bearer' },
    }));
    const source = new OidcTokenSource({ ...settings, fetch: endpoint.fetchImpl });
    const tokens = await settled(Promise.all(Array.from({ length: 10 }, () => source.token())));
    expect(new Set(tokens)).toEqual(new Set(['t1']));
    expect(endpoint.calls).toHaveLength(1);
    expect(endpoint.calls[0]!.auth).toBe(`Basic ${Buffer.from('client:secret').toString('base64')}`);
    expect(endpoint.calls[0]!.form.get('grant_type')).toBe('client_credentials');
    expect(endpoint.calls[0]!.form.get('scope')).toBe('kafka read');
    await settled(source.token());
    expect(endpoint.calls).toHaveLength(1);
  });

  it('keeps a token without expires_in for the default lifetime (300 s) instead of asking each time', async () => {
    const endpoint = tokenEndpoint((n) => ({ status: 200, body: { access_token: `t${n}` } }));
    const source = new OidcTokenSource({ ...settings, fetch: endpoint.fetchImpl });
    expect(await settled(source.token())).toBe('t1');
    expect(await settled(source.token())).toBe('t1');
    expect(endpoint.calls).toHaveLength(1);
  });

  it('asks again once the token is near its expiry', async () => {
    const endpoint = tokenEndpoint((n) => ({ status: 200, body: { access_token: `t${n}`, expires_in: 1 } }));
    const source = new OidcTokenSource({ ...settings, fetch: endpoint.fetchImpl });
    const first = source.token();
    await jest.advanceTimersByTimeAsync(5); // the endpoint's answer
    expect(await first).toBe('t1');
    await jest.advanceTimersByTimeAsync(1000);
    const second = source.token();
    await jest.advanceTimersByTimeAsync(5);
    expect(await second).toBe('t2');
  });

  it.each([
    [
      401,
      { error: 'invalid_client' },
      /^kafka\.oauthClientSecret: the token endpoint refused the client credentials \(HTTP 401\)/,
    ],
    [400, { error: 'invalid_client' }, /^kafka\.oauthClientSecret:/],
    [400, { error: 'invalid_scope' }, /^kafka\.oauthTokenUrl: .*\(invalid_scope\); check kafka\.oauthScope/],
    [
      200,
      { token_type: 'Bearer' },
      /^kafka\.oauthTokenUrl: the token endpoint answered without an access_token/,
    ],
  ])('HTTP %i %o names the setting', async (status, body, message) => {
    const endpoint = tokenEndpoint(() => ({ status, body }));
    const source = new OidcTokenSource({ ...settings, fetch: endpoint.fetchImpl });
    await expect(settled(source.token())).rejects.toThrow(message);
  });

  it('names the token URL when the endpoint cannot be reached', async () => {
    const source = new OidcTokenSource({
      ...settings,
      fetch: (async () => {
        throw new TypeError('fetch failed');
      }) as unknown as typeof fetch,
    });
    await expect(source.token()).rejects.toThrow(/^kafka\.oauthTokenUrl: token endpoint unreachable/);
  });
});
