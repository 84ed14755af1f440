import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { DocumentAnalysisClient } from '../client/client.js';
import { createLogger } from '../observability/logger.js';
import { TenantClients } from './clients.js';
import { EMPTY_DIRECTORY, type TenantDirectory, type TenantEntry } from './directory.js';

const SECRET = 'refused-secret-77aa';

let server: Server;
let base = '';
beforeAll(async () => {
  // A token endpoint that refuses every client.
  server = createServer((_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"invalid_client"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

function entry(name: string, fingerprint = '1'): TenantEntry {
  return {
    name,
    cell: 'testing',
    baseUrl: base,
    tokenUrl: `${base}/oauth2/token`,
    clientId: `${name}-app`,
    credentials: { kind: 'client-secret', clientSecret: SECRET },
    tenantId: null,
    ratePerSecond: 40,
    fingerprint,
  };
}

const directory = (...entries: TenantEntry[]): TenantDirectory => ({
  tenants: new Map(entries.map((e) => [e.name, e])),
});

function setup() {
  const raw: string[] = [];
  const logger = createLogger({
    level: 'info',
    stream: new Writable({
      write(chunk: Buffer, _e, done) {
        raw.push(chunk.toString('utf8'));
        done();
      },
    }),
  });
  const clients = new TenantClients(
    (e, onCall) =>
      new DocumentAnalysisClient({
        baseUrl: e.baseUrl,
        tokenUrl: e.tokenUrl,
        clientId: e.clientId,
        clientSecret: SECRET,
        rateLimit: { ratePerSecond: e.ratePerSecond ?? 20 },
        retry: { maxTotalMs: 0 },
        onCall,
      }),
    logger,
    EMPTY_DIRECTORY,
  );
  return { clients, raw };
}

describe('TenantClients', () => {
  it('makes one client per tenant; a changed tenant gets a new one, a removed one none', () => {
    const { clients } = setup();
    clients.apply(directory(entry('acme'), entry('globex')), {
      added: ['acme', 'globex'],
      changed: [],
      removed: [],
    });
    const acme = clients.client('acme');
    expect(acme).toBeDefined();
    expect(clients.client('globex')).not.toBe(acme);
    clients.apply(directory(entry('acme', '2')), { added: [], changed: ['acme'], removed: ['globex'] });
    expect(clients.client('acme')).not.toBe(acme);
    expect(clients.has('globex')).toBe(false);
  });

  it("gives each tenant's tenantId from its current entry (null when not given or not known)", () => {
    const { clients } = setup();
    clients.apply(directory({ ...entry('acme'), tenantId: 'acme-id' }, entry('globex')), {
      added: ['acme', 'globex'],
      changed: [],
      removed: [],
    });
    expect([clients.tenantId('acme'), clients.tenantId('globex'), clients.tenantId('initech')]).toEqual([
      'acme-id',
      null,
      null,
    ]);
    clients.apply(directory({ ...entry('acme', '2'), tenantId: 'acme-id-2' }), {
      added: [],
      changed: ['acme'],
      removed: ['globex'],
    });
    expect([clients.tenantId('acme'), clients.tenantId('globex')]).toEqual(['acme-id-2', null]);
  });

  it("gives every tenant application the member's share of the group's limit, also one added later", () => {
    const { clients } = setup();
    clients.apply(directory(entry('acme')), { added: ['acme'], changed: [], removed: [] });
    clients.setShare(1, 4);
    clients.apply(directory(entry('acme'), entry('globex')), { added: ['globex'], changed: [], removed: [] });
    for (const name of ['acme', 'globex']) {
      expect(clients.limiter(name)?.share()).toEqual({ owned: 1, total: 4 });
      expect(clients.limiter(name)?.currentCeiling()).toBe(10);
    }
  });

  it('logs a refused credential once per client, by tenant name, never the secret', async () => {
    const { clients, raw } = setup();
    clients.apply(directory(entry('acme')), { added: ['acme'], changed: [], removed: [] });
    const acme = clients.client('acme')!;
    await expect(acme.checkAccess()).rejects.toThrow();
    await expect(acme.checkAccess()).rejects.toThrow();
    const lines = raw
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const refused = lines.filter((l) => l.level === 50);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ tenant: 'acme', status: 401 });
    expect(raw.join('')).not.toContain(SECRET);
  });
});
