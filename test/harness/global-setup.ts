/**
 * Jest global setup for the integration project: makes sure a real Kafka, schema registry and S3
 * store are reachable, and exports DOCSTREAM_KAFKA_BROKERS, DOCSTREAM_REGISTRY_URL and
 * DOCSTREAM_BLOBS_S3_ENDPOINT (plus dummy AWS credentials) to the tests.
 *
 * - DOCSTREAM_TEST_STACK=reuse: use the stack those variables describe (defaults: localhost), start nothing.
 * - DOCSTREAM_TEST_STACK=containers: Kafka and the schema registry from containers started with
 *   testcontainers on the engine DOCKER_HOST names (scripts/lib/test-containers.ts; `npm run
 *   build:scripts` first), the S3 store from the native stack. An engine that does not answer fails
 *   the run with how to start one: the choice was explicit.
 * - otherwise: `stackUp` with the default options (idempotent: a stack already running is reused).
 *   The teardown stops only what this setup started, unless DOCSTREAM_TEST_KEEP_STACK is set.
 *
 * It also gives the run its id (DOCSTREAM_TEST_RUN, inherited by every worker): the names tests make
 * hold it, and the teardown deletes the topics that do, so the shared stack does not fill up.
 */
import type { ServiceName } from '../../src/stack/index.js';
import type * as StackModuleNs from '../../src/stack/index.js';
import type * as ContainersNs from '../../scripts/lib/test-containers.js';
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

/** The compiled testcontainers harness (scripts/lib/test-containers.ts), which the sources do not ship. */
async function loadContainers(): Promise<typeof ContainersNs> {
  const built = resolve(process.cwd(), '.cache', 'scripts', 'scripts', 'lib', 'test-containers.js');
  if (!existsSync(built))
    throw new Error(
      `${built} is missing: run \`npm run build:scripts\` before DOCSTREAM_TEST_STACK=containers`,
    );
  const importEsm = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
  return (await importEsm(pathToFileURL(built).href)) as typeof ContainersNs;
}

declare global {
  var __DOCSTREAM_STACK_STARTED__: ServiceName[] | undefined;
  var __DOCSTREAM_STACK_CONTAINERS__: ContainersNs.StackContainers | undefined;
}

function setDefault(name: string, value: string): void {
  if (!process.env[name]) process.env[name] = value;
}

export default async function globalSetup(): Promise<void> {
  const { defaultStackOptions, newRunId, partitionDirWarning, RUN_ENV, stackEnv, stackStatus, stackUp } =
    await loadStack();
  const log = (line: string) => process.stderr.write(`[stack] ${line}\n`);
  const opts = defaultStackOptions({ log });
  // Always a new one: an id inherited from the shell would let this run delete another's topics.
  process.env[RUN_ENV] = newRunId();
  globalThis.__DOCSTREAM_STACK_STARTED__ = [];
  let managed: ServiceName[] = [];
  if (process.env.DOCSTREAM_TEST_STACK === 'reuse') {
    log('DOCSTREAM_TEST_STACK=reuse: using the stack described by the environment');
  } else if (process.env.DOCSTREAM_TEST_STACK === 'containers') {
    const { startStackContainers } = await loadContainers();
    const containers = await startStackContainers(log);
    globalThis.__DOCSTREAM_STACK_CONTAINERS__ = containers;
    process.env.DOCSTREAM_KAFKA_BROKERS = containers.brokers;
    process.env.DOCSTREAM_REGISTRY_URL = containers.registryUrl;
    log(`testcontainers: kafka and registry from ${containers.describe}`);
    const { services } = await stackStatus({ ...opts, log: () => undefined });
    if (!services.find((s) => s.service === 's3')?.healthy) {
      const res = await stackUp({ ...opts, services: ['s3'] });
      globalThis.__DOCSTREAM_STACK_STARTED__ = res.started;
    }
  } else {
    log('starting (or reusing) the local stack');
    // A healthy service on our port that this run dir did not start (e.g. a stack started by hand or
    // from another run dir) is reused as it is; `stackUp` starts the rest.
    const { services } = await stackStatus({ ...opts, log: () => undefined });
    const external = services.filter((s) => s.healthy && s.pid === undefined).map((s) => s.service);
    for (const s of external)
      log(
        `${s}: reusing the healthy service already on port ${services.find((x) => x.service === s)?.ports[0]}`,
      );
    managed = services.map((s) => s.service).filter((s) => !external.includes(s));
    if (managed.length > 0) {
      const res = await stackUp({ ...opts, services: managed });
      globalThis.__DOCSTREAM_STACK_STARTED__ = res.started;
    }
    // `up` warns of too many partition directories itself; a stack only reused is checked here.
    const warning = managed.includes('kafka') ? undefined : partitionDirWarning(opts.runDir);
    if (warning) log(warning);
    for (const line of stackEnv(opts)) {
      const m = /^export (\w+)=(.*)$/.exec(line);
      if (m?.[1] && m[2] !== undefined) process.env[m[1]] = m[2];
    }
  }
  // Which services the default run dir manages, for tests of the `stack` CLI itself.
  process.env.DOCSTREAM_TEST_STACK_MANAGED = managed.join(',');
  for (const line of stackEnv(opts)) {
    const m = /^export (\w+)=(.*)$/.exec(line);
    if (m?.[1] && m[2] !== undefined) setDefault(m[1], m[2]);
  }
}
