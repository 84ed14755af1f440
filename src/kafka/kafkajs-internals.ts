/**
 * kafkajs 2.2.4's internal modules, for the corrections docstream puts on them (`request-queue.ts`,
 * `paused-fetch.ts`, `response-remainder.ts`): loaded by their path in kafkajs's own package, so each
 * is the very module the library's clients load (same path, same module, same prototype).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The module at `path` under kafkajs/src (e.g. `network/connection.js`). */
export function kafkajsInternal<T>(path: string): T {
  return require(`kafkajs/src/${path}`) as T;
}
