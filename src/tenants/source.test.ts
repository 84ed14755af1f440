import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../observability/logger.js';
import { TenantDirectorySource } from './source.js';
import { TenantDirectoryError } from './directory.js';

const pem = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
const KEY_1 = pem();
const KEY_2 = pem();
const SECRET_1 = 'first-secret-8e1d';
const SECRET_2 = 'second-secret-4a7c';

/** A logger writing JSON lines into `lines`, as `docstream run` logs. */
function capture(): {
  lines: Array<Record<string, unknown>>;
  text: () => string;
  logger: ReturnType<typeof createLogger>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(chunk.toString('utf8'));
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, text: () => raw.join(''), logger: createLogger({ stream, level: 'info' }) };
}

const cells = {
  'eu-1': { baseUrl: 'https://eu-1.api.example' },
  'us-1': { baseUrl: 'https://us-1.api.example' },
};

/** Every mounted folder a test made, removed after the file's tests. */
const mounts: string[] = [];
afterAll(() => {
  for (const dir of mounts) rmSync(dir, { recursive: true, force: true });
});

/** A folder laid out as a mounted Kubernetes Secret: files are symlinks into `..data`, swapped atomically. */
class MountedSecret {
  readonly dir = mkdtempSync(join(tmpdir(), 'docstream-secret-'));
  private version = 0;
  readonly file = join(this.dir, 'tenants.json');

  constructor(files: Record<string, string>) {
    mounts.push(this.dir);
    this.swap(files);
    for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(this.dir, name));
  }

  /** What the kubelet does: a new timestamped folder, then `..data` renamed over to point at it. */
  swap(files: Record<string, string>): void {
    const real = mkdtempSync(join(this.dir, `..${++this.version}-`));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(real, name), text);
    symlinkSync(real, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
  }
}

const directory = (tenants: Record<string, unknown>) => JSON.stringify({ tenants });
const acme = { cell: 'eu-1', clientId: 'acme', privateKeyFile: 'acme.pem', kid: 'k1' };
const globex = { cell: 'us-1', clientId: 'globex', clientSecretFile: 'globex.secret' };

describe('TenantDirectorySource', () => {
  it('reloads a swapped Secret: tenants added, changed (a rotated key) and removed, logged by name only', async () => {
    const mount = new MountedSecret({
      'tenants.json': directory({ acme }),
      'acme.pem': KEY_1,
      'globex.secret': SECRET_1,
    });
    const log = capture();
    const source = new TenantDirectorySource({
      file: mount.file,
      cells,
      intervalMs: 60_000,
      logger: log.logger,
    });
    const changes: unknown[] = [];
    source.onChange((_d, diff) => changes.push(diff));
    await source.load();
    expect([...source.current.tenants.keys()]).toEqual(['acme']);

    // A second tenant, and acme's key rotated.
    mount.swap({ 'tenants.json': directory({ acme, globex }), 'acme.pem': KEY_2, 'globex.secret': SECRET_1 });
    await source.reload();
    expect([...source.current.tenants.keys()].sort()).toEqual(['acme', 'globex']);
    expect(source.current.tenants.get('acme')?.credentials).toMatchObject({ privateKey: KEY_2.trim() });

    // globex's secret rotated, acme removed.
    mount.swap({ 'tenants.json': directory({ globex }), 'acme.pem': KEY_2, 'globex.secret': SECRET_2 });
    await source.reload();
    // Nothing changed: nothing logged, no listener called.
    await source.reload();

    expect(changes).toEqual([
      { added: ['acme'], changed: [], removed: [] },
      { added: ['globex'], changed: ['acme'], removed: [] },
      { added: [], changed: ['globex'], removed: ['acme'] },
    ]);
    const changed = log.lines.filter((l) => l.msg === 'tenant directory changed');
    expect(changed.map((l) => [l.added, l.changed, l.removed])).toEqual([
      [['globex'], ['acme'], []],
      [[], ['globex'], ['acme']],
    ]);
    for (const secret of [KEY_1, KEY_2, SECRET_1, SECRET_2]) {
      expect(log.text()).not.toContain(secret.trim().split('\n')[1] ?? secret);
      expect(log.text()).not.toContain(secret.trim());
    }
  });

  it('keeps the previous directory when the new file cannot be used, and says why once', async () => {
    const mount = new MountedSecret({ 'tenants.json': directory({ globex }), 'globex.secret': SECRET_1 });
    const log = capture();
    const source = new TenantDirectorySource({
      file: mount.file,
      cells,
      intervalMs: 60_000,
      logger: log.logger,
    });
    await source.load();
    mount.swap({ 'tenants.json': `{"tenants": {"globex": "${SECRET_2}"`, 'globex.secret': SECRET_1 });
    await source.reload();
    await source.reload();
    expect([...source.current.tenants.keys()]).toEqual(['globex']);
    const refused = log.lines.filter((l) => l.level === 50);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ err: expect.stringMatching(/not valid JSON/), tenants: 1 });
    expect(log.text()).not.toContain(SECRET_2);
    expect(log.text()).not.toContain(SECRET_1);

    mount.swap({
      'tenants.json': directory({ globex: { ...globex, cell: 'eu-1' } }),
      'globex.secret': SECRET_1,
    });
    await source.reload();
    expect(source.current.tenants.get('globex')?.cell).toBe('eu-1');
  });

  it('fails the first read, so that a start with an unusable directory stops', async () => {
    const mount = new MountedSecret({ 'tenants.json': directory({ acme }) });
    const source = new TenantDirectorySource({
      file: mount.file,
      cells,
      intervalMs: 60_000,
      logger: capture().logger,
    });
    await expect(source.load()).rejects.toThrow(TenantDirectoryError);
  });

  it('reads the file again on its interval', async () => {
    const mount = new MountedSecret({ 'tenants.json': directory({}), 'globex.secret': SECRET_1 });
    const source = new TenantDirectorySource({
      file: mount.file,
      cells,
      intervalMs: 100,
      logger: capture().logger,
    });
    await source.load();
    source.start();
    try {
      mount.swap({ 'tenants.json': directory({ globex }), 'globex.secret': SECRET_1 });
      const until = Date.now() + 5000;
      while (!source.current.tenants.has('globex') && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50));
      expect(source.current.tenants.has('globex')).toBe(true);
    } finally {
      source.stop();
    }
  });
});
