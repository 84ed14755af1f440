import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { retry } from '../util/retry.js';

/** What `up` records about a process it started. */
export interface PidRecord {
  service: string;
  pid: number;
  /** The exact argv it was started with (command first). */
  argv: string[];
  ports: number[];
  startedAt: string;
}

export function writePidFile(file: string, rec: PidRecord): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(rec, null, 2) + '\n');
}

export function readPidFile(file: string): PidRecord | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const rec = JSON.parse(readFileSync(file, 'utf8')) as PidRecord;
    if (!Number.isInteger(rec.pid) || rec.pid <= 1 || !Array.isArray(rec.argv)) return undefined;
    return rec;
  } catch {
    return undefined;
  }
}

export function removePidFile(file: string): void {
  rmSync(file, { force: true });
}

/** Reads /proc/<pid>/cmdline as argv; undefined when the process is gone (or is a zombie). */
function procArgv(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (raw.length === 0) return undefined; // zombie or kernel thread
    return raw.replace(/\0$/, '').split('\0');
  } catch {
    return undefined;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when the argv of a live process matches what we started: same arguments (the executable may
 * have been resolved differently, e.g. through a wrapper script, so argv[0] is not compared).
 */
export function argvMatches(actual: string[], expected: string[]): boolean {
  const want = expected.slice(1);
  if (actual.length < want.length) return false;
  const tail = actual.slice(actual.length - want.length);
  return want.every((a, i) => a === tail[i]);
}

/** Is the process of this record still running and still the one we started? */
export function isOurProcess(rec: PidRecord): boolean {
  if (!pidAlive(rec.pid)) return false;
  if (process.platform !== 'linux') return true;
  const argv = procArgv(rec.pid);
  return argv !== undefined && argvMatches(argv, rec.argv);
}

export interface SpawnSpec {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here. */
  outFile: string;
}

/** Starts a process that survives this one: own process group, output to a file, not waited for. */
export function spawnDetached(spec: SpawnSpec): number {
  mkdirSync(dirname(spec.outFile), { recursive: true });
  mkdirSync(spec.cwd, { recursive: true });
  const fd = openSync(spec.outFile, 'a');
  try {
    writeFileSync(fd, `\n=== ${new Date().toISOString()} ${spec.command} ${spec.args.join(' ')}\n`);
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    child.on('error', () => {
      /* reported through the health check and the log */
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`cannot start ${spec.command}`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig); // the whole process group (spawned detached)
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

/** SIGTERM, wait up to `graceMs`, then SIGKILL. Returns how it ended. */
export async function stopProcess(
  rec: PidRecord,
  graceMs: number,
): Promise<'stopped' | 'killed' | 'not-running'> {
  if (!isOurProcess(rec)) return 'not-running';
  signal(rec.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isOurProcess(rec)) return 'stopped';
    await sleep(200);
  }
  signal(rec.pid, 'SIGKILL');
  for (let i = 0; i < 50 && isOurProcess(rec); i++) await sleep(100);
  return 'killed';
}

function tryListen(port: number, host: string): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** True when something already listens on the port (on the wildcard or the loopback address). */
export async function isPortInUse(port: number): Promise<boolean> {
  for (const host of ['0.0.0.0', '127.0.0.1']) {
    const err = await tryListen(port, host);
    if (err && err.code !== 'EADDRNOTAVAIL' && err.code !== 'EAFNOSUPPORT') return true;
  }
  return false;
}

/** The last `n` lines of a file ('' when missing). */
export function tailFile(file: string, n = 20): string {
  if (!existsSync(file)) return '';
  const text = readFileSync(file, 'utf8');
  const lines = text.trimEnd().split('\n');
  return lines.slice(-n).join('\n');
}

/**
 * A simple inter-process lock (a file created exclusively, holding the owner's pid); a lock whose
 * owner died is taken over. Waits up to `timeoutMs`.
 */
export async function withLock<T>(file: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  /** The lock is someone else's: the pid holding it. */
  class Held extends Error {}
  /** A lock whose owner died, just removed: taken at once. */
  const removed = new Error('stale lock removed');
  await retry(
    async () => {
      try {
        const fd = openSync(file, 'wx');
        writeFileSync(fd, String(process.pid));
        closeSync(fd);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const content = readFileSafe(file);
        const owner = Number(content);
        const stale =
          content === '' ? Date.now() > deadline : !Number.isInteger(owner) || owner <= 0 || !pidAlive(owner);
        if (stale) {
          rmSync(file, { force: true });
          throw removed;
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for lock ${file} held by pid ${owner}`);
        throw new Held(String(owner));
      }
    },
    {
      backoff: { initialMs: 250, maxMs: 250, jitter: false },
      classify: (err) =>
        err === removed
          ? { retry: true, immediately: true }
          : err instanceof Held
            ? { retry: true }
            : { retry: false },
    },
  );
  try {
    return await fn();
  } finally {
    rmSync(file, { force: true });
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}
