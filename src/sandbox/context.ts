/**
 * Everything a sandbox route can reach: one object per listener (the sandbox's own address and
 * each served cell), sharing the organisation's state (submissions, tenants, stats, call record);
 * no module state.
 */
import type { Logger } from 'pino';
import type { FactsCache } from './analysis/facts-cache.js';
import type { AuthServer, TokenGrant } from './auth.js';
import type { CallRecord } from './call-record.js';
import type { SandboxConfig } from './config.js';
import type { Random } from './random.js';
import type { RateLimiter } from './rate-limit.js';
import type { Scheduler } from './scheduler.js';
import type { UrlSigner } from './signed-url.js';
import type { StatsCollector } from './stats.js';
import type { SubmissionStore } from './submissions.js';
import type { CellUrls, TenantStore } from './tenants.js';
import type { MemoryBudget } from './upload-store.js';
import type { WebhookDispatcher } from './webhooks.js';

/** Where this sandbox serves what: its listeners by cell. */
export interface Cells {
  /** The cell a tenant of `cell` lives on: its own listener, or the sandbox's own when none serves it alone. */
  urlsOf(cell: string): CellUrls | null;
  /** The cells with a listener of their own; empty for a single-cell sandbox, which serves every cell. */
  served(): string[];
  /** The cell whose token endpoint issued a token that is not this listener's, else null. */
  issuerOf(token: string, except: string): string | null;
}

export interface SandboxContext {
  config(): SandboxConfig;
  random(): Random;
  /** This listener's cell: a served cell's name, or `testing` for the sandbox's own address. */
  cell: string;
  /** The interface this listener listens on (wildcard addresses hand out URLs by the Host header). */
  listenHost: string;
  /** Absolute base URL, known once the server listens. */
  baseUrl(): string;
  /** Token endpoint URLs a client assertion may name besides this listener's own. */
  tokenUrls(): string[];
  /** This listener's token endpoint: its cell's clients, its tokens. */
  auth: AuthServer;
  cells: Cells;
  /** The token bucket a client's calls take from: its own, or the sandbox's `rateLimit`; null = none. */
  rateLimitOf(clientId: string): SandboxConfig['rateLimit'];
  calls: CallRecord;
  limiter: RateLimiter;
  signer: UrlSigner;
  scheduler: Scheduler;
  stats: StatsCollector;
  submissions: SubmissionStore;
  /** File facts by SHA-256 of the bytes, so identical uploads are inspected once. */
  facts: FactsCache;
  tenants: TenantStore;
  webhooks: WebhookDispatcher;
  storageDir: string;
  /** Bytes of small uploads held in memory (inMemoryUploads.maxTotalBytes). */
  uploadMemory: MemoryBudget;
  /** Epoch ms until which every API request gets 429 (faults.storm429); shared by every listener. */
  storm: { until: number };
  logger: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    grant?: TokenGrant;
    /** For the call record: the submission a create made, the client the token endpoint authenticated. */
    recordSubmissionId?: string;
    recordClient?: { clientId: string; tenantId: string | null };
  }
  interface FastifyContextConfig {
    /** The OAuth scope the route needs; routes without one are outside the bearer-token API. */
    scope?: string;
  }
}
