import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  diffDirectories,
  directoryEntryOf,
  readDirectory,
  TenantDirectoryError,
  type TenantDirectory,
} from './directory.js';

const KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
}) as string;
const SECRET = 'tenant-secret-5f2b9c';

const cells = {
  'eu-1': { baseUrl: 'https://eu-1.api.example', tokenUrl: 'https://eu-1.auth.example/oauth2/token' },
};

/** Every folder a test made, removed after the file's tests. */
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'docstream-tenants-'));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function problem(files: Record<string, string>): Promise<string> {
  const dir = folder(files);
  const err = await readDirectory(join(dir, 'tenants.json'), cells).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TenantDirectoryError);
  return (err as Error).message;
}

describe('the tenant directory file', () => {
  it('gives each tenant its cell and the credentials read from the files it names (relative to it)', async () => {
    const dir = folder({
      'tenants.json': JSON.stringify({
        cells: { 'us-1': { baseUrl: 'https://us-1.api.example' } },
        tenants: {
          acme: {
            cell: 'eu-1',
            clientId: 'acme-eu-1',
            privateKeyFile: 'acme.pem',
            kid: 'k1',
            tenantId: 't-1',
          },
          globex: {
            cell: 'us-1',
            clientId: 'globex-us-1',
            clientSecretFile: 'globex.secret',
            ratePerSecond: 5,
          },
        },
      }),
      'acme.pem': KEY,
      'globex.secret': `${SECRET}\n`,
    });
    const directory = await readDirectory(join(dir, 'tenants.json'), cells);
    const acme = directory.tenants.get('acme')!;
    expect([acme.baseUrl, acme.tokenUrl, acme.clientId, acme.tenantId]).toEqual([
      'https://eu-1.api.example',
      'https://eu-1.auth.example/oauth2/token',
      'acme-eu-1',
      't-1',
    ]);
    expect(acme.credentials).toEqual({ kind: 'private-key-jwt', privateKey: KEY.trim(), kid: 'k1' });
    const globex = directory.tenants.get('globex')!;
    expect([globex.baseUrl, globex.tokenUrl, globex.ratePerSecond]).toEqual([
      'https://us-1.api.example',
      'https://us-1.api.example/oauth2/token',
      5,
    ]);
    expect(globex.credentials).toEqual({ kind: 'client-secret', clientSecret: SECRET });
  });

  it.each([
    [
      'a cell it cannot resolve',
      { cell: 'ap-2', clientId: 'c', clientSecretFile: 's' },
      /tenants\.acme\.cell: cell "ap-2" has no configured address/,
    ],
    [
      'a key without its kid',
      { cell: 'eu-1', clientId: 'c', privateKeyFile: 'key.pem' },
      /tenants\.acme\.kid: required/,
    ],
    [
      'no credentials',
      { cell: 'eu-1', clientId: 'c' },
      /tenants\.acme: give privateKeyFile \(with kid\) or clientSecretFile/,
    ],
    [
      'a missing secret file',
      { cell: 'eu-1', clientId: 'c', clientSecretFile: 'gone' },
      /clientSecretFile: .*gone cannot be read \(ENOENT\)/,
    ],
    [
      'a key file that is no key',
      { cell: 'eu-1', clientId: 'c', privateKeyFile: 's', kid: 'k' },
      /privateKeyFile: not a PKCS#8 PEM RSA private key/,
    ],
    [
      'an unknown field',
      { cell: 'eu-1', clientId: 'c', clientSecretFile: 's', secret: 'x' },
      /unknown field tenants\.acme\.secret/,
    ],
  ])('refuses %s, naming the tenant and the field, never the secret', async (_what, entry, reason) => {
    const message = await problem({
      'tenants.json': JSON.stringify({ tenants: { acme: entry } }),
      s: SECRET,
      'key.pem': KEY,
    });
    expect(message).toMatch(reason);
    expect(message).not.toContain(SECRET);
  });

  it('refuses plain http to a host other than loopback, unless api.allowInsecureHttp says so', async () => {
    const text = JSON.stringify({
      cells: { 'us-1': { baseUrl: 'http://us-1.api.example' } },
      tenants: { acme: { cell: 'us-1', clientId: 'c', clientSecretFile: 's' } },
    });
    const dir = folder({ 'tenants.json': text, s: SECRET });
    await expect(readDirectory(join(dir, 'tenants.json'), cells)).rejects.toThrow(
      /tenants\.acme\.cell: http:\/\/us-1\.api\.example sends the client secret and tokens unencrypted/,
    );
    const allowed = await readDirectory(join(dir, 'tenants.json'), cells, true);
    expect(allowed.tenants.get('acme')?.baseUrl).toBe('http://us-1.api.example');
  });

  it('refuses a tenant name the API would not have', async () => {
    expect(await problem({ 'tenants.json': JSON.stringify({ tenants: { 'Acme Corp': {} } }) })).toMatch(
      /tenants\.Acme Corp|tenant name/,
    );
  });

  it('says where a text is not JSON without quoting it', async () => {
    const message = await problem({ 'tenants.json': `{"tenants": {"acme": "${SECRET}" ` });
    expect(message).toMatch(/not valid JSON/);
    expect(message).not.toContain(SECRET);
  });
});

describe('diffDirectories', () => {
  const entry = (name: string, fingerprint: string) => ({
    name,
    cell: 'eu-1',
    baseUrl: 'b',
    tokenUrl: 't',
    clientId: name,
    credentials: { kind: 'client-secret' as const, clientSecret: 's' },
    tenantId: null,
    ratePerSecond: null,
    fingerprint,
  });
  const of = (...entries: ReturnType<typeof entry>[]): TenantDirectory => ({
    tenants: new Map(entries.map((e) => [e.name, e])),
  });

  it('names the tenants added, changed (any fingerprint change: a rotated key) and removed', () => {
    const before = of(entry('a', '1'), entry('b', '1'), entry('c', '1'));
    const after = of(entry('b', '2'), entry('c', '1'), entry('d', '1'));
    expect(diffDirectories(before, after)).toEqual({ added: ['d'], changed: ['b'], removed: ['a'] });
  });

  it("an application's entry, as tenants create prints it, is read once its file exists", async () => {
    const key = directoryEntryOf('acme', 't-1', {
      client_id: 'acme-eu-1',
      cell: 'eu-1',
      credentials: { type: 'private_key_jwt', kid: 'k1' },
    });
    const secret = directoryEntryOf('globex', 't-2', {
      client_id: 'globex-eu-1',
      cell: 'eu-1',
      credentials: { type: 'client_secret', kid: '' },
    });
    expect(secret.globex).toEqual({
      cell: 'eu-1',
      clientId: 'globex-eu-1',
      clientSecretFile: 'globex.secret',
      tenantId: 't-2',
    });
    const dir = folder({
      'tenants.json': JSON.stringify({ tenants: { ...key, ...secret } }),
      'acme.pem': KEY,
      'globex.secret': SECRET,
    });
    const directory = await readDirectory(join(dir, 'tenants.json'), cells);
    expect(directory.tenants.get('acme')!.credentials).toEqual({
      kind: 'private-key-jwt',
      privateKey: KEY.trim(),
      kid: 'k1',
    });
    expect(directory.tenants.get('globex')!.tenantId).toBe('t-2');
  });
});
