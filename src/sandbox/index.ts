/**
 * `startSandbox`: a faithful, in-process Document Analysis API for tries and tests: one listener
 * (the sandbox's own address), plus one per cell in `cells` (an organisation of tenants in several
 * cells), all over one shared state. See docs/sandbox.md for the decisions taken where the spec
 * says "not shown", and the knobs.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { PATHS, type Application } from '../api/schemas.js';
import { silentLogger } from '../observability/logger.js';
import { FactsCache } from './analysis/facts-cache.js';
import { AuthServer, type AuthClient, type ClientDirectory } from './auth.js';
import { CallRecord, type CallFilter, type CallList } from './call-record.js';
import {
  ApplicationPatch,
  applyConfigPatch,
  defaultConfig,
  SandboxConfigError,
  type DeepPartial,
  type SandboxConfig,
} from './config.js';
import type { Cells, SandboxContext } from './context.js';
import { HttpError, validate } from './http.js';
import { createRandom, type Random } from './random.js';
import { RateLimiter } from './rate-limit.js';
import { Scheduler } from './scheduler.js';
import { buildServer } from './server.js';
import { UrlSigner } from './signed-url.js';
import { StatsCollector, type SandboxStats } from './stats.js';
import { SubmissionStore } from './submissions.js';
import { applicationView, TenantStore, type CellUrls } from './tenants.js';
import { MemoryBudget } from './upload-store.js';
import { WebhookDispatcher } from './webhooks.js';

export type { SandboxConfig, DeepPartial } from './config.js';
export { defaultConfig, applyConfigPatch, SandboxConfigError, DEFAULT_CLIENT } from './config.js';
export type { SandboxStats } from './stats.js';
export type { CallEntry, CallFilter, CallList } from './call-record.js';
export type { ApplicationPatch } from './config.js';
export type { CellUrls } from './tenants.js';

export interface Sandbox {
  baseUrl: string;
  tokenUrl: string;
  /** Each cell served on a listener of its own, by name; empty for a single-cell sandbox. */
  cells: Record<string, CellUrls>;
  /** Same as `POST /_sandbox/config`; throws SandboxConfigError naming a bad field. */
  configure(patch: DeepPartial<SandboxConfig>): void;
  /** Same as `GET /_sandbox/stats`. */
  stats(): SandboxStats;
  /** Same as `GET /_sandbox/calls`: the record of API, token and upload calls. */
  calls(filter?: CallFilter): CallList;
  /** Same as `GET /_sandbox/tenants`: every tenant, its cell and its applications (no secrets). */
  tenants(): TenantSummary[];
  /**
   * Same as `PUT /_sandbox/applications/:clientId`: registers a tenant application's credentials
   * (a public key and kid, or a client secret) or its rate limit; throws naming the bad field.
   */
  setApplication(clientId: string, patch: ApplicationPatch): Application;
  /** The effective configuration (including secrets: this is the in-process API). */
  config(): SandboxConfig;
  close(): Promise<void>;
}

export interface TenantSummary {
  id: string;
  name: string;
  cell: string;
  applications: Array<{
    clientId: string;
    scopes: string[];
    credentials: 'private_key_jwt' | 'client_secret' | 'none';
  }>;
}

interface SandboxOptions {
  logger?: Logger;
}

/** Knobs fixed once the server listens. */
const FIXED_AFTER_START = ['host', 'port', 'storageDir', 'cells', 'tenants'] as const;

/** The sandbox's own listener, which serves every cell no listener of its own serves. */
export const OWN_CELL = 'testing';

function urlOf(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

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

  const getConfig = () => current;
  const scheduler = new Scheduler();
  const stats = new StatsCollector();
  const tenants = new TenantStore(current.tenants);
  const calls = new CallRecord(() => current.maxCallRecords);
  const limiter = new RateLimiter();
  const storm = { until: 0 };
  const webhooks = new WebhookDispatcher(getConfig, scheduler, () => random, stats, logger);
  const served = Object.keys(current.cells);
  /** Listener name → its URLs and token endpoint, filled in as each listens. */
  const listeners = new Map<string, { urls: CellUrls; auth: AuthServer }>();
  const ownClient = (clientId: string): AuthClient | undefined => {
    const c = current.clients.find((x) => x.clientId === clientId);
    return c && { ...c, tenantId: null };
  };
  const tenantClient = (clientId: string): AuthClient | undefined => {
    const a = tenants.application(clientId);
    return a && { ...a, tenantId: a.tenantId };
  };
  /** Where a client is registered: the sandbox's own listener, or its tenant's cell's. */
  const homeOf = (clientId: string): string | null => {
    if (ownClient(clientId)) return OWN_CELL;
    const app = tenants.application(clientId);
    if (!app) return null;
    return served.includes(app.cell) ? app.cell : OWN_CELL;
  };
  const directoryOf = (cell: string): ClientDirectory => ({
    find: (clientId) =>
      homeOf(clientId) !== cell ? undefined : (ownClient(clientId) ?? tenantClient(clientId)),
    elsewhere: (clientId) => {
      const home = homeOf(clientId);
      return home !== null && home !== cell ? home : null;
    },
  });
  const cells: Cells = {
    urlsOf: (cell) => listeners.get(served.length === 0 ? OWN_CELL : cell)?.urls ?? null,
    served: () => [...served],
    issuerOf: (token, except) => {
      for (const [name, l] of listeners) if (name !== except && l.auth.lookup(token)) return name;
      return null;
    },
  };
  const rateLimitOf = (clientId: string): SandboxConfig['rateLimit'] => {
    const own = current.clients.find((x) => x.clientId === clientId)?.rateLimit;
    if (own !== undefined) return own;
    const app = tenants.application(clientId)?.rateLimit;
    return app !== undefined ? app : current.rateLimit;
  };

  const submissions: SubmissionStore = new SubmissionStore(getConfig, () => random, {
    decisionReady(s, at) {
      scheduler.at(at, () => {
        if (submissions.get(s.id) !== s || !s.decision) return;
        webhooks.decisionFinished({
          submissionId: s.id,
          status: s.decision.status,
          analysisTime: new Date(s.decision.readyAt).toISOString(),
          queryId: s.queryId,
          tenantId: s.tenantId,
        });
      });
    },
  });
  const shared = {
    config: getConfig,
    random: () => random,
    cells,
    rateLimitOf,
    calls,
    limiter,
    signer: new UrlSigner(),
    scheduler,
    stats,
    submissions,
    facts: new FactsCache(),
    tenants,
    webhooks,
    storageDir,
    uploadMemory: new MemoryBudget(() => current.inMemoryUploads.maxTotalBytes),
    storm,
    logger,
  };

  const configure = (patch: unknown): void => {
    const next = applyConfigPatch(current, patch);
    for (const key of FIXED_AFTER_START) {
      if (JSON.stringify(next[key]) !== JSON.stringify(current[key]))
        throw new SandboxConfigError(`${key}: cannot change while the sandbox runs`);
    }
    for (const [i, c] of next.clients.entries()) {
      if (tenants.application(c.clientId))
        throw new SandboxConfigError(
          `clients.${i}.clientId: ${c.clientId} is already the id of a tenant's application`,
        );
    }
    const p = patch as DeepPartial<SandboxConfig>;
    if (p.seed !== undefined && next.seed !== current.seed) random = createRandom(next.seed);
    if (p.faults?.storm429 && next.faults.storm429)
      storm.until = Date.now() + next.faults.storm429.durationMs;
    if (p.rateLimit !== undefined || p.clients !== undefined) limiter.reset();
    current = next;
  };
  const setApplication = (clientId: string, patch: unknown): Application => {
    const body = validate(ApplicationPatch, patch);
    const app = tenants.application(clientId);
    if (!app) throw new HttpError(404, `application ${clientId} does not exist (tenants' applications only)`);
    tenants.update(clientId, body);
    if (body.rateLimit !== undefined) limiter.forget(clientId);
    logger.info(
      {
        clientId,
        credentials: body.publicKeyPem ? 'public key' : body.clientSecret ? 'client secret' : 'unchanged',
      },
      'sandbox application updated',
    );
    return applicationView(app, cells.urlsOf(app.cell) as CellUrls);
  };
  if (current.faults.storm429) storm.until = Date.now() + current.faults.storm429.durationMs;

  const apps: FastifyInstance[] = [];
  const closeAll = async () => {
    for (const app of apps) await app.close();
  };
  const listen = async (cell: string, host: string, port: number, tokenUrls: () => string[]) => {
    let baseUrl = '';
    const auth = new AuthServer(getConfig, directoryOf(cell), cell);
    const ctx: SandboxContext = {
      ...shared,
      cell,
      listenHost: host,
      baseUrl: () => baseUrl,
      tokenUrls,
      auth,
    };
    const app = buildServer(ctx, { configure, setApplication });
    apps.push(app);
    try {
      await app.listen({ host, port });
    } catch (err) {
      const where = cell === OWN_CELL ? '' : `cells.${cell}: `;
      throw new SandboxConfigError(
        `${where}cannot listen on ${host}:${port}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    baseUrl = urlOf(host, (app.server.address() as AddressInfo).port);
    listeners.set(cell, { urls: { baseUrl, tokenUrl: `${baseUrl}${PATHS.token}` }, auth });
    logger.info({ cell, baseUrl }, 'sandbox listening');
    return baseUrl;
  };

  let baseUrl: string;
  const cellUrls: Record<string, CellUrls> = {};
  try {
    baseUrl = await listen(OWN_CELL, current.host, current.port, () => current.tokenUrls);
    for (const [name, cell] of Object.entries(current.cells)) {
      const cellBase = await listen(
        name,
        cell?.host ?? current.host,
        cell?.port ?? 0,
        () => cell?.tokenUrls ?? [],
      );
      cellUrls[name] = { baseUrl: cellBase, tokenUrl: `${cellBase}${PATHS.token}` };
    }
  } catch (err) {
    scheduler.close();
    webhooks.close();
    await closeAll();
    if (ownsStorage) await rm(storageDir, { recursive: true, force: true });
    throw err;
  }

  let closing: Promise<void> | null = null;
  return {
    baseUrl,
    tokenUrl: `${baseUrl}${PATHS.token}`,
    cells: cellUrls,
    configure: (patch) => configure(patch),
    stats: () => stats.snapshot(),
    calls: (filter) => calls.list(filter),
    tenants: () =>
      tenants.all().map((t) => ({
        id: t.id,
        name: t.name,
        cell: t.cell,
        applications: t.applications.map((a) => ({
          clientId: a.clientId,
          scopes: [...a.scopes],
          credentials: a.publicKeyPem ? 'private_key_jwt' : a.clientSecret ? 'client_secret' : 'none',
        })),
      })),
    setApplication: (clientId, patch) => setApplication(clientId, patch),
    config: () => structuredClone(current),
    close() {
      closing ??= (async () => {
        scheduler.close();
        webhooks.close();
        await closeAll();
        if (ownsStorage) await rm(storageDir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
