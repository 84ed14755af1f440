/**
 * The container image without a Docker engine: podman (daemonless) with runc, from Debian's packages.
 * No registry is reachable from these machines, so the Dockerfile's base image `node:<version>-bookworm-slim`
 * is made here the way the official one is made: a minimal Debian bookworm (debootstrap, through the
 * apt mirror this machine is configured with) plus the `node` this runs on, which must be the
 * Dockerfile's pinned version (`npm run` runs on the project's Node, the npm registry's `node` package
 * in devDependencies, whatever the machine's own), this machine's npm, the CA bundle
 * (the package registry is reached through a private CA) and a `node` user with uid 1000. The
 * debootstrapped root file system is cached under `~/.cache/docstream/image`; the base image stays in
 * podman's storage, so both are made once per machine.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultCacheDir } from '../../src/stack/paths.js';

export const IMAGE_CACHE_DIR = path.join(defaultCacheDir(), 'image');
export const ROOTFS_DIR = path.join(IMAGE_CACHE_DIR, 'bookworm-minbase');
const ROOTFS_DONE = path.join(IMAGE_CACHE_DIR, 'bookworm-minbase.done');
const CONTAINERS_CONF = path.join(IMAGE_CACHE_DIR, 'containers.conf');

/**
 * These machines lack CAP_SYS_RESOURCE (podman's default ulimits cannot be applied, so none are, and
 * each container gets explicit ones within the current limits) and keep cgroup v1, which crun refuses:
 * runc runs the containers.
 */
const GLOBAL_FLAGS = ['--runtime', 'runc'];
export const LIMIT_FLAGS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a command to its end (killed after `timeoutMs`), output captured. */
export function run(
  command: string,
  args: string[],
  o: { timeoutMs: number; env?: NodeJS.ProcessEnv; echo?: boolean },
): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      if (o.echo) process.stdout.write(c);
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
      if (o.echo) process.stderr.write(c);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${command}: ${err.message}`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const ms = Date.now() - started;
      if (ms >= o.timeoutMs) stderr += `\n(killed after ${o.timeoutMs} ms)`;
      resolve({ code, stdout, stderr, ms });
    });
  });
}

/** The last `n` lines of a command's output, for a failure message. */
export function tail(text: string, n = 30): string {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}

/** Like `run`, but a non-zero exit is an error that says what was being done, with the output's tail. */
export async function must(
  what: string,
  command: string,
  args: string[],
  o: { timeoutMs: number; env?: NodeJS.ProcessEnv; echo?: boolean },
): Promise<RunResult> {
  const r = await run(command, args, o);
  if (r.code !== 0)
    throw new Error(
      `${what} failed (${command} ${args.join(' ')}: exit ${r.code}):\n${tail(r.stderr + '\n' + r.stdout)}`,
    );
  return r;
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '')
    .split(':')
    .some((dir) => dir !== '' && fs.existsSync(path.join(dir, command)));
}

/**
 * podman, runc, debootstrap and socat (the image check's loopback relay) from Debian's packages;
 * installed only when one is missing.
 */
export async function ensureTools(log: (line: string) => void): Promise<void> {
  const tools = ['podman', 'runc', 'debootstrap', 'socat'];
  const missing = tools.filter((c) => !onPath(c));
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0)
    throw new Error(
      `${missing.join(', ')} not installed, and installing needs root: apt-get install -y ${tools.join(' ')}`,
    );
  log(`installing ${missing.join(', ')} from Debian's packages`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await must('apt-get update', 'apt-get', ['update'], { timeoutMs: 300_000, env });
  const r = await must(`installing ${tools.join(', ')}`, 'apt-get', ['install', '-y', ...tools], {
    timeoutMs: 600_000,
    env,
  });
  log(`installed in ${(r.ms / 1000).toFixed(0)} s`);
}

/** The environment every podman call gets: CONTAINERS_CONF without default ulimits. */
export function podmanEnv(): NodeJS.ProcessEnv {
  fs.mkdirSync(IMAGE_CACHE_DIR, { recursive: true });
  const conf = '[containers]\ndefault_ulimits = []\n';
  if (!fs.existsSync(CONTAINERS_CONF) || fs.readFileSync(CONTAINERS_CONF, 'utf8') !== conf)
    fs.writeFileSync(CONTAINERS_CONF, conf);
  return { ...process.env, CONTAINERS_CONF };
}

export function podman(
  args: string[],
  o: { timeoutMs: number; echo?: boolean } = { timeoutMs: 60_000 },
): Promise<RunResult> {
  return run('podman', [...GLOBAL_FLAGS, ...args], { ...o, env: podmanEnv() });
}

export async function podmanMust(
  what: string,
  args: string[],
  o: { timeoutMs: number; echo?: boolean } = { timeoutMs: 60_000 },
): Promise<RunResult> {
  return must(what, 'podman', [...GLOBAL_FLAGS, ...args], { ...o, env: podmanEnv() });
}

/** The Debian mirror apt uses here (deb822 `URIs:` or a one-line `deb` entry for bookworm). */
export function debianMirror(
  files: string[] = [
    '/etc/apt/sources.list',
    ...(fs.existsSync('/etc/apt/sources.list.d')
      ? fs.readdirSync('/etc/apt/sources.list.d').map((f) => path.join('/etc/apt/sources.list.d', f))
      : []),
  ],
): string {
  for (const file of files) {
    if (!/\.(list|sources)$/.test(file) || !fs.existsSync(file)) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const stanza of text.split(/\n\s*\n/)) {
      const uri = /^URIs:\s*(\S+)/m.exec(stanza)?.[1];
      const suites = /^Suites:\s*(.+)$/m.exec(stanza)?.[1]?.split(/\s+/) ?? [];
      if (uri && suites.includes('bookworm') && !/^Enabled:\s*no/im.test(stanza)) return uri;
    }
    const line = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(text);
    if (line?.[1]) return line[1];
  }
  return 'http://deb.debian.org/debian';
}

/** A minimal Debian bookworm root file system, made once and cached. */
export async function ensureRootfs(log: (line: string) => void): Promise<void> {
  if (fs.existsSync(ROOTFS_DONE)) return;
  fs.rmSync(ROOTFS_DIR, { recursive: true, force: true });
  const mirror = debianMirror();
  log(`debootstrap --variant=minbase bookworm (mirror ${mirror}), cached in ${ROOTFS_DIR}`);
  const r = await must('debootstrap', 'debootstrap', ['--variant=minbase', 'bookworm', ROOTFS_DIR, mirror], {
    timeoutMs: 900_000,
  });
  fs.writeFileSync(ROOTFS_DONE, `${new Date().toISOString()} ${mirror}\n`);
  log(`debootstrap took ${(r.ms / 1000).toFixed(0)} s`);
}

/** The Node.js release the Dockerfile's base is pinned to (`ARG NODE_VERSION=...`). */
export function dockerfileNodeVersion(dockerfile: string): string {
  const version = /^ARG NODE_VERSION=(\d+\.\d+\.\d+)\s*$/m.exec(fs.readFileSync(dockerfile, 'utf8'))?.[1];
  if (!version) throw new Error(`${dockerfile}: no "ARG NODE_VERSION=<x.y.z>"`);
  return version;
}

/** `node:<version>-bookworm-slim`, the Dockerfile's base. */
export function baseImageName(nodeVersion: string): string {
  return `docker.io/library/node:${nodeVersion}-bookworm-slim`;
}

/**
 * Makes the base image for the Dockerfile's pinned Node unless podman already has it; returns its
 * name. Its `node` is the one running this, so that must be the pinned release.
 */
export async function ensureBaseImage(dockerfile: string, log: (line: string) => void): Promise<string> {
  const version = dockerfileNodeVersion(dockerfile);
  if (process.versions.node !== version)
    throw new Error(
      `${dockerfile} pins node ${version}, the base image is made from the node running this, ` +
        `${process.versions.node}: run it as \`npm run image:check\` (npm run puts the project's node ` +
        `${version}, installed by npm install, first on PATH)`,
    );
  const name = baseImageName(version);
  if ((await podman(['image', 'exists', name])).code === 0) return name;
  await ensureRootfs(log);
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-rootfs-'));
  try {
    await must('copying the cached root file system', 'cp', ['-a', `${ROOTFS_DIR}/.`, staging], {
      timeoutMs: 300_000,
    });
    // Leaner, as the official slim images are: no apt lists, docs or locales beyond C.
    for (const dir of [
      'var/lib/apt/lists',
      'var/cache/apt',
      'usr/share/doc',
      'usr/share/man',
      'usr/share/locale',
    ])
      fs.rmSync(path.join(staging, dir), { recursive: true, force: true });
    const local = path.join(staging, 'usr/local');
    fs.mkdirSync(path.join(local, 'bin'), { recursive: true });
    fs.mkdirSync(path.join(local, 'lib/node_modules'), { recursive: true });
    fs.copyFileSync(process.execPath, path.join(local, 'bin/node'));
    fs.chmodSync(path.join(local, 'bin/node'), 0o755);
    // The npm that runs this (`npm run image:check` sets npm_execpath to its npm-cli.js): `npm root -g`
    // names the global folder of the node on PATH, where the npm package's node has no npm.
    const npmDir = process.env.npm_execpath
      ? path.resolve(path.dirname(fs.realpathSync(process.env.npm_execpath)), '..')
      : path.join(
          (await must('npm root -g', 'npm', ['root', '-g'], { timeoutMs: 30_000 })).stdout.trim(),
          'npm',
        );
    await must('copying npm', 'cp', ['-a', npmDir, path.join(local, 'lib/node_modules/')], {
      timeoutMs: 120_000,
    });
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(local, 'bin/npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(local, 'bin/npx'));
    const certs = path.join(staging, 'etc/ssl/certs');
    fs.mkdirSync(certs, { recursive: true });
    fs.copyFileSync('/etc/ssl/certs/ca-certificates.crt', path.join(certs, 'ca-certificates.crt'));
    fs.appendFileSync(path.join(staging, 'etc/group'), 'node:x:1000:\n');
    fs.appendFileSync(path.join(staging, 'etc/passwd'), 'node:x:1000:1000::/home/node:/bin/sh\n');
    fs.mkdirSync(path.join(staging, 'home/node'), { recursive: true });
    fs.chownSync(path.join(staging, 'home/node'), 1000, 1000);
    log(`importing ${name} (Debian bookworm minbase + node ${version} and this machine's npm)`);
    await must(
      'podman import',
      'bash',
      [
        '-c',
        'set -o pipefail; tar -C "$1" --numeric-owner -c . | podman --runtime runc import ' +
          '--change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" ' +
          '--change "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin" ' +
          '--change "CMD [\\"node\\"]" - "$2"',
        'import',
        staging,
        name,
      ],
      { timeoutMs: 300_000, env: podmanEnv() },
    );
    return name;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** An image's size in bytes, as podman reports it (the sum of its layers, uncompressed). */
export async function imageSize(name: string): Promise<number> {
  const r = await podmanMust(`inspecting ${name}`, ['image', 'inspect', '--format', '{{.Size}}', name]);
  return Number(r.stdout.trim());
}

export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
