/**
 * kafkajs 2.2.4's internal modules, for the corrections docstream puts on them (`request-queue.ts`,
 * `paused-fetch.ts`, `response-remainder.ts`, `rejoin-barrier.ts`, and the admin's cluster in
 * `group-readings.ts`): loaded
 * by their path in kafkajs's own package, so each is the very module the library's clients load
 * (same path, same module, same prototype).
 *
 * Each correction was written against kafkajs 2.2.4's code and checks, before it is applied, that the
 * installed kafkajs is that version (`internalsPatchable`). On any other version none is applied: the
 * client runs on kafkajs's own code, and `KafkaClient` says so once per process.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The kafkajs version whose internals the corrections were written against. */
export const PATCHED_KAFKAJS_VERSION = '2.2.4';

/**
 * Overrides the installed kafkajs version as the corrections see it (a test starts the connector as if
 * on another kafkajs, to check that it runs without them).
 */
export const KAFKAJS_VERSION_ENV = 'DOCSTREAM_TEST_KAFKAJS_VERSION';

/** The installed kafkajs's version (its package.json), or `unknown` when it cannot be read. */
export function installedKafkajsVersion(): string {
  const forced = process.env[KAFKAJS_VERSION_ENV];
  if (forced) return forced;
  try {
    const { version } = require('kafkajs/package.json') as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** True when the installed kafkajs is the version the corrections of its internals were written for. */
export function internalsPatchable(): boolean {
  return installedKafkajsVersion() === PATCHED_KAFKAJS_VERSION;
}

/** The one line said when the corrections are not applied, or undefined when they are. */
export function unpatchedNotice(): string | undefined {
  const installed = installedKafkajsVersion();
  if (installed === PATCHED_KAFKAJS_VERSION) return undefined;
  return `kafkajs ${installed} is installed, not ${PATCHED_KAFKAJS_VERSION}: docstream's corrections of kafkajs internals (idle request queues, paused fetch loops, response remainders, group readings, the rejoin barrier) are not applied, and kafkajs runs its own code; without the rejoin barrier a rebalance may release a partition before the submissions created for it are recorded (its next owner then submits them again)`;
}

/** The module at `path` under kafkajs/src (e.g. `network/connection.js`). */
export function kafkajsInternal<T>(path: string): T {
  return require(`kafkajs/src/${path}`) as T;
}
