import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  argvMatches,
  isOurProcess,
  isPortInUse,
  readPidFile,
  tailFile,
  withLock,
  writePidFile,
} from './process.js';

function listen(port: number, host?: string): Promise<Server> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen({ port, host }, () => ok(s));
  });
}
const close = (s: Server) => new Promise((ok) => s.close(ok));
const portOf = (s: Server) => (s.address() as { port: number }).port;

describe('isPortInUse', () => {
  test('a port with a listener (wildcard or loopback) is in use; a closed one is free', async () => {
    const any = await listen(0);
    const port = portOf(any);
    expect(await isPortInUse(port)).toBe(true);
    await close(any);
    expect(await isPortInUse(port)).toBe(false);

    const loop = await listen(0, '127.0.0.1');
    expect(await isPortInUse(portOf(loop))).toBe(true);
    await close(loop);
  });
});

describe('argvMatches', () => {
  const argv = ['/usr/bin/java', '-Xmx512m', '-cp', 'libs/*', 'kafka.Kafka', 'server.properties'];
  test('same arguments, any executable path', () => {
    expect(argvMatches(argv, argv)).toBe(true);
    expect(argvMatches(['/opt/jdk/bin/java', ...argv.slice(1)], argv)).toBe(true);
  });
  test('different arguments or a different program', () => {
    expect(argvMatches(['/usr/bin/java', '-jar', 'x.jar'], argv)).toBe(false);
    expect(argvMatches(['sleep', '100'], ['python3', '-m', 'moto.server', '-p', '9002'])).toBe(false);
  });
});

describe('pid files', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'docstream-pid-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('round trip, garbage is ignored', () => {
    const file = join(dir, 'x', 'kafka.pid');
    const rec = { service: 'kafka', pid: process.pid, argv: process.argv, ports: [1, 2], startedAt: 'now' };
    writePidFile(file, rec);
    expect(readPidFile(file)).toEqual(rec);
    writeFileSync(file, 'not json');
    expect(readPidFile(file)).toBeUndefined();
    expect(readPidFile(join(dir, 'missing.pid'))).toBeUndefined();
  });

  test('a live process is ours only with the recorded argv', () => {
    const argv =
      process.platform === 'linux'
        ? readFileSync('/proc/self/cmdline', 'utf8').replace(/\0$/, '').split('\0')
        : process.argv;
    const rec = { service: 'x', pid: process.pid, argv, ports: [], startedAt: 'now' };
    expect(isOurProcess(rec)).toBe(true);
    if (process.platform === 'linux') {
      expect(isOurProcess({ ...rec, argv: ['python3', '-m', 'moto.server'] })).toBe(false);
    }
    expect(isOurProcess({ ...rec, pid: 2 ** 22 + 12345 })).toBe(false);
  });

  test('tailFile returns the last lines', () => {
    const f = join(dir, 'log');
    writeFileSync(f, Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n');
    expect(tailFile(f, 3)).toBe('line 27\nline 28\nline 29');
    expect(tailFile(join(dir, 'nope'))).toBe('');
  });

  test('withLock serialises, and takes over a lock whose owner is dead', async () => {
    const lock = join(dir, '.lock');
    const order: string[] = [];
    await Promise.all([
      withLock(lock, 5000, async () => {
        order.push('a-in');
        await new Promise((r) => setTimeout(r, 100));
        order.push('a-out');
      }),
      new Promise((r) => setTimeout(r, 10)).then(() =>
        withLock(lock, 5000, async () => {
          order.push('b-in');
        }),
      ),
    ]);
    expect(order).toEqual(['a-in', 'a-out', 'b-in']);

    writeFileSync(lock, String(2 ** 22 + 12345)); // a pid that cannot exist
    expect(await withLock(lock, 1000, async () => readFileSync(lock, 'utf8'))).toBe(String(process.pid));
  });
});
