/**
 * The platformatic floor's Kafka client: the Node floor (scripts/floor.ts) run on @platformatic/kafka
 * (pure JavaScript) instead of kafkajs, and the same package for the client checks
 * (scripts/kafka-client-checks). Like the rdkafka floor's client it is not a dependency of
 * docstream: it needs Node >= 22.22 (or >= 24.6), above docstream's engines floor. It is installed
 * on first use into .cache/platformatic-floor from scripts/platformatic-floor's package.json and lock
 * (an exact version), and again only when that lock changes. Nothing is built: its one native
 * package (@node-rs/crc32) is optional and prebuilt per platform.
 */
import fs from 'node:fs';
import path from 'node:path';
import { npmCiInto } from './floor-install.js';

const SOURCE_DIR = path.resolve('scripts/platformatic-floor');
const INSTALL_DIR = path.resolve('.cache/platformatic-floor');
export const PLATFORMATIC_PACKAGE = '@platformatic/kafka';
/** A copy of the lock the install was made from: an install whose copy differs is made again. */
const INSTALLED_LOCK = path.join(INSTALL_DIR, 'installed-from.lock.json');
const INSTALL_LOG = path.join(INSTALL_DIR, 'npm-ci.log');

/** The package's `engines`: node >= 22.22.0 on 22 and 23, >= 24.6.0 from 24 on. */
export function nodeFitsPlatformatic(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major === 22 || major === 23) return major > 22 || minor >= 22;
  if (major >= 24) return major > 24 || minor >= 6;
  return false;
}

/**
 * Installs the platformatic floor's client unless installed from the same lock; returns the file
 * of the installed package's entry point (an ES module: import it by its file URL). Throws when the
 * running node is older than the package accepts.
 */
export function installPlatformaticFloor(log: (line: string) => void): string {
  if (!nodeFitsPlatformatic(process.versions.node))
    throw new Error(
      `${PLATFORMATIC_PACKAGE} needs node >= 22.22.0 or >= 24.6.0; this is ${process.versions.node} ` +
        '(run with the project node: scripts/project-node.sh)',
    );
  const lock = fs.readFileSync(path.join(SOURCE_DIR, 'package-lock.json'), 'utf8');
  const packageDir = path.join(INSTALL_DIR, 'node_modules', PLATFORMATIC_PACKAGE);
  const entry = path.join(packageDir, 'dist/index.js');
  if (fs.existsSync(INSTALLED_LOCK) && fs.readFileSync(INSTALLED_LOCK, 'utf8') === lock) return entry;
  log(`platformatic floor: installing ${PLATFORMATIC_PACKAGE} into .cache/platformatic-floor (npm ci)`);
  const started = Date.now();
  const install = npmCiInto(SOURCE_DIR, INSTALL_DIR);
  fs.writeFileSync(INSTALL_LOG, `${install.stdout ?? ''}${install.stderr ?? ''}`);
  if (install.error || install.status !== 0) {
    const tail = `${install.stdout ?? ''}${install.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(
      `installing ${PLATFORMATIC_PACKAGE} for the platformatic floor failed ` +
        `(${install.error?.message ?? `exit ${install.status}`}; log in ${path.relative(process.cwd(), INSTALL_LOG)})\n${tail}`,
    );
  }
  const version = (
    JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string }
  ).version;
  fs.writeFileSync(INSTALLED_LOCK, lock);
  log(
    `platformatic floor: installed ${PLATFORMATIC_PACKAGE} ${version} in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  return entry;
}
