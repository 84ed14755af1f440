import { applyConfigPatch, defaultConfig } from './config.js';
import { applicationView, TenantStore, tenantView } from './tenants.js';

const KEY = '-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n';
const EU = { baseUrl: 'http://127.0.0.1:9001', tokenUrl: 'http://127.0.0.1:9001/oauth2/token' };

describe('TenantStore', () => {
  test('declared tenants keep their cell and credentials; the id defaults to the name', () => {
    const config = applyConfigPatch(defaultConfig(), {
      cells: { 'eu-1': {} },
      tenants: [
        {
          name: 'acme',
          cells: ['eu-1'],
          applications: [{ clientId: 'acme-app', publicKeyPem: KEY, kid: 'k1' }],
        },
        {
          id: 'globex-id',
          name: 'globex',
          cells: ['eu-1'],
          applications: [{ clientId: 'globex-app', clientSecret: 's3cret', rateLimit: null }],
        },
      ],
    });
    const store = new TenantStore(config.tenants);
    expect(store.application('acme-app')).toMatchObject({
      tenantId: 'acme',
      cell: 'eu-1',
      kid: 'k1',
      scopes: ['documents.submissions.read', 'documents.submissions.write'],
    });
    expect(store.application('acme-app')?.rateLimit).toBeUndefined();
    expect(store.application('globex-app')).toMatchObject({ tenantId: 'globex-id', rateLimit: null });
    expect(store.has('globex')).toBe(true);
    expect(store.get('globex-id')?.name).toBe('globex');
  });

  test('a tenant created over the API has one application with no credentials until they are registered', () => {
    const store = new TenantStore();
    const tenant = store.create('hooli', 'us-1');
    const app = store.application('hooli-us-1');
    expect(app).toMatchObject({ tenantId: tenant.id, cell: 'us-1', kid: 'hooli-us-1-key-1' });
    expect(app?.publicKeyPem).toBeUndefined();
    expect(app?.clientSecret).toBeUndefined();
    store.update('hooli-us-1', { publicKeyPem: KEY, kid: 'k2', rateLimit: { ratePerSecond: 1, burst: 1 } });
    expect(store.application('hooli-us-1')).toMatchObject({
      publicKeyPem: KEY,
      kid: 'k2',
      rateLimit: { burst: 1 },
    });
    expect(store.update('nobody', { clientSecret: 'x' })).toBeUndefined();
  });

  test("views follow the spec's shapes at the cell's addresses and never carry a secret", () => {
    const store = new TenantStore();
    const tenant = store.create('hooli', 'eu-1');
    expect(tenantView(tenant, EU)).toMatchObject({
      cells: ['eu-1'],
      _links: { 'documents-ui': [{ href: `${EU.baseUrl}/_ui/eu-1/hooli`, rel: 'eu-1' }] },
    });
    const app = store.update('hooli-eu-1', { clientSecret: 'top-secret' });
    const view = applicationView(app!, EU);
    expect(view).toMatchObject({
      client_id: 'hooli-eu-1',
      auth_server: EU.baseUrl,
      cell: 'eu-1',
      credentials: { type: 'client_secret' },
      _links: { token_url: EU.tokenUrl },
    });
    expect(JSON.stringify(view)).not.toContain('top-secret');
    store.update('hooli-eu-1', { publicKeyPem: KEY, kid: 'k3' });
    expect(applicationView(app!, EU).credentials).toEqual({
      type: 'private_key_jwt',
      alg: 'RS256',
      kid: 'k3',
    });
  });
});
