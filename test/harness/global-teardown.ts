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
 * Stops the containers the global setup started, and the native services it started unless
 * DOCSTREAM_TEST_KEEP_STACK is set.
 */
export default async function globalTeardown(): Promise<void> {
  // Containers are the run's own (DOCSTREAM_TEST_STACK=containers): always stopped, nothing reaps them.
  const containers = globalThis.__DOCSTREAM_STACK_CONTAINERS__;
  if (containers) {
    process.stderr.write('[stack] testcontainers: stopping kafka and registry\n');
    await containers.stop();
  }
  const started = globalThis.__DOCSTREAM_STACK_STARTED__ ?? [];
  if (started.length === 0) return;
  if (process.env.DOCSTREAM_TEST_KEEP_STACK) {
    process.stderr.write(`[stack] DOCSTREAM_TEST_KEEP_STACK is set: leaving ${started.join(', ')} running\n`);
    return;
  }
  const { defaultStackOptions, stackDown } = await loadStack();
  await stackDown(
    defaultStackOptions({ services: started, log: (line) => process.stderr.write(`[stack] ${line}\n`) }),
  );
}
