/**
 * `startSandbox`: a faithful, in-process Document Analysis API for tries and tests.
 * See docs/sandbox.md for the decisions taken where the spec says "not shown", and the knobs.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { PATHS } from '../api/schemas.js';
import { silentLogger } from '../observability/logger.js';
import { FactsCache } from './analysis/facts-cache.js';
import { AuthServer } from './auth.js';
import {
  applyConfigPatch,
  defaultConfig,
  SandboxConfigError,
  type DeepPartial,
  type SandboxConfig,
} from './config.js';
import type { SandboxContext } from './context.js';
import { createRandom, type Random } from './random.js';
import { RateLimiter } from './rate-limit.js';
import { Scheduler } from './scheduler.js';
import { buildServer } from './server.js';
import { UrlSigner } from './signed-url.js';
import { StatsCollector, type SandboxStats } from './stats.js';
import { SubmissionStore } from './submissions.js';
import { TenantStore } from './tenants.js';
import { MemoryBudget } from './upload-store.js';
import { WebhookDispatcher } from './webhooks.js';

export type { SandboxConfig, DeepPartial } from './config.js';
export { defaultConfig, applyConfigPatch, SandboxConfigError, DEFAULT_CLIENT } from './config.js';
export type { SandboxStats } from './stats.js';

export interface Sandbox {
  baseUrl: string;
  tokenUrl: string;
  /** Same as `POST /_sandbox/config`; throws SandboxConfigError naming a bad field. */
  configure(patch: DeepPartial<SandboxConfig>): void;
  /** Same as `GET /_sandbox/stats`. */
  stats(): SandboxStats;
  /** The effective configuration (including secrets: this is the in-process API). */
  config(): SandboxConfig;
  close(): Promise<void>;
}

interface SandboxOptions {
  logger?: Logger;
}

/** Knobs fixed once the server listens. */
const FIXED_AFTER_START = ['host', 'port', 'storageDir'] as const;

/** Starts a sandbox. Unlike the CLI (8080), the programmatic default port is 0: a free port. */
export async function startSandbox(
  config: DeepPartial<SandboxConfig> = {},
  options: SandboxOptions = {},
): Promise<Sandbox> {
  let current = applyConfigPatch({ ...defaultConfig(), port: 0 }, config);
  let random: Random = createRandom(current.seed);
  const logger = options.logger ?? silentLogger;
  const ownsStorage = current.storageDir === null;
  const storageDir = current.storageDir ?? (await mkdtemp(join(tmpdir(), 'docstream-sandbox-')));
  if (!ownsStorage) await mkdir(storageDir, { recursive: true });

  let baseUrl = '';
  const scheduler = new Scheduler();
  const stats = new StatsCollector();
  const getConfig = () => current;
  const webhooks = new WebhookDispatcher(getConfig, scheduler, () => random, stats, logger);
  const ctx: SandboxContext = {
    config: getConfig,
    random: () => random,
    baseUrl: () => baseUrl,
    auth: new AuthServer(getConfig),
    limiter: new RateLimiter(),
    signer: new UrlSigner(),
    scheduler,
    stats,
    submissions: new SubmissionStore(getConfig, () => random, {
      decisionReady(s, at) {
        scheduler.at(at, () => {
          if (ctx.submissions.get(s.id) !== s || !s.decision) return;
          webhooks.decisionFinished({
            submissionId: s.id,
            status: s.decision.status,
            analysisTime: new Date(s.decision.readyAt).toISOString(),
            queryId: s.queryId,
          });
        });
      },
    }),
    facts: new FactsCache(),
    tenants: new TenantStore(),
    webhooks,
    storageDir,
    uploadMemory: new MemoryBudget(() => current.inMemoryUploads.maxTotalBytes),
    stormUntil: 0,
    logger,
  };

  const configure = (patch: unknown): void => {
    const next = applyConfigPatch(current, patch);
    for (const key of FIXED_AFTER_START) {
      if (next[key] !== current[key])
        throw new SandboxConfigError(`${key}: cannot change while the sandbox runs`);
    }
    const p = patch as DeepPartial<SandboxConfig>;
    if (p.seed !== undefined && next.seed !== current.seed) random = createRandom(next.seed);
    if (p.faults?.storm429 && next.faults.storm429)
      ctx.stormUntil = Date.now() + next.faults.storm429.durationMs;
    if (p.rateLimit !== undefined) ctx.limiter.reset();
    current = next;
  };
  if (current.faults.storm429) ctx.stormUntil = Date.now() + current.faults.storm429.durationMs;

  const app = buildServer(ctx, { configure });
  await app.listen({ host: current.host, port: current.port });
  const address = app.server.address() as AddressInfo;
  const host = current.host === '0.0.0.0' || current.host === '::' ? '127.0.0.1' : current.host;
  baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  logger.info({ baseUrl }, 'sandbox listening');

  let closing: Promise<void> | null = null;
  return {
    baseUrl,
    tokenUrl: `${baseUrl}${PATHS.token}`,
    configure: (patch) => configure(patch),
    stats: () => stats.snapshot(),
    config: () => structuredClone(current),
    close() {
      closing ??= (async () => {
        scheduler.close();
        webhooks.close();
        await app.close();
        if (ownsStorage) await rm(storageDir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
