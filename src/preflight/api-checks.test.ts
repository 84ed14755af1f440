import { AuthenticationError, PermissionError } from '../client/errors.js';
import { checkApi } from './api-checks.js';
import { Findings } from './findings.js';

const address = { baseUrl: 'https://api.example', tokenUrl: 'https://api.example/oauth2/token' };

describe('the API part of config check --connect', () => {
  it('says ok when the token and the API call work', async () => {
    const f = new Findings();
    await checkApi(
      { submissions: () => ({ client: { checkAccess: async () => undefined }, ...address }) },
      f,
      1000,
    );
    expect(f.all).toEqual([
      expect.objectContaining({
        status: 'ok',
        detail: expect.stringContaining('a token from https://api.example/oauth2/token'),
      }),
    ]);
  });

  it('names the secret setting when the token endpoint refuses the credentials', async () => {
    const f = new Findings();
    const refused = new AuthenticationError('401 invalid_client', {
      method: 'POST',
      endpoint: 'POST /oauth2/token',
      status: 401,
    });
    await checkApi(
      { submissions: () => ({ client: { checkAccess: () => Promise.reject(refused) }, ...address }) },
      f,
      1000,
    );
    expect(f.all[0]).toEqual(
      expect.objectContaining({
        status: 'missing',
        detail: expect.stringMatching(/token endpoint refused the credentials.*api\.clientSecret/),
      }),
    );
  });

  it('names the scopes when the API refuses the token', async () => {
    const f = new Findings();
    const refused = new PermissionError('403', {
      method: 'GET',
      endpoint: 'GET /v2/submission/{id}/fraud',
      status: 403,
    });
    await checkApi(
      { submissions: () => ({ client: { checkAccess: () => Promise.reject(refused) }, ...address }) },
      f,
      1000,
    );
    expect(f.all[0]!.detail).toMatch(/lacks a scope.*submissions\.read/);
  });

  it('tries the tenant-admin client too when one is configured', async () => {
    const f = new Findings();
    const refused = new AuthenticationError('401', {
      method: 'POST',
      endpoint: 'POST /oauth2/token',
      status: 401,
    });
    await checkApi(
      {
        submissions: () => ({ client: { checkAccess: async () => undefined }, ...address }),
        tenants: () => ({ checkAccess: () => Promise.reject(refused) }),
      },
      f,
      1000,
    );
    expect(f.all.map((x) => [x.subject, x.status])).toEqual([
      ['api.clientId', 'ok'],
      ['tenant.clientId', 'missing'],
    ]);
    expect(f.all[1]!.detail).toMatch(/tenant\.kid/);
  });
});
