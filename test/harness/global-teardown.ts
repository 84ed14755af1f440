import type * as StackModuleNs from '../../src/stack/index.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

type StackModule = typeof StackModuleNs;

/**
 * Jest loads globalSetup/globalTeardown outside its module system (no `.js` → `.ts` mapping, so no
 * relative imports of TypeScript sources): they use the built stack module instead
 * (`npm run test:integration` builds first).
 */
async function loadStack(): Promise<StackModule> {
  const built = resolve(process.cwd(), 'dist', 'stack', 'index.js');
  if (!existsSync(built))
    throw new Error(`${built} is missing: run \`npm run build\` before the integration tests`);
  // A Function keeps the transpiler from turning import() into require(), which cannot load ESM.
  const importEsm = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
  return (await importEsm(pathToFileURL(built).href)) as StackModule;
}

/**
 * Deletes the topics this run made (their names hold its id, DOCSTREAM_TEST_RUN: other runs sharing
 * the stack keep theirs), stops the containers the global setup started, and the native services it
 * started unless DOCSTREAM_TEST_KEEP_STACK is set.
 */
export default async function globalTeardown(): Promise<void> {
  const log = (line: string) => process.stderr.write(`[stack] ${line}\n`);
  const { defaultStackOptions, RUN_ENV, stackDown, sweepRunTopics } = await loadStack();
  // Containers are the run's own (DOCSTREAM_TEST_STACK=containers): always stopped, nothing reaps them.
  const containers = globalThis.__DOCSTREAM_STACK_CONTAINERS__;
  if (containers) {
    log('testcontainers: stopping kafka and registry');
    await containers.stop();
  } else {
    const run = process.env[RUN_ENV];
    const brokers = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
    if (run) await sweepRunTopics(brokers, log, { run, timeoutMs: 120_000 });
  }
  const started = globalThis.__DOCSTREAM_STACK_STARTED__ ?? [];
  if (started.length === 0) return;
  if (process.env.DOCSTREAM_TEST_KEEP_STACK) {
    log(`DOCSTREAM_TEST_KEEP_STACK is set: leaving ${started.join(', ')} running`);
    return;
  }
  await stackDown(defaultStackOptions({ services: started, log }));
}
