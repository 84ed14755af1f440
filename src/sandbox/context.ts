/** Everything a sandbox route can reach: one object per running sandbox, no module state. */
import type { Logger } from 'pino';
import type { FactsCache } from './analysis/facts-cache.js';
import type { AuthServer, TokenGrant } from './auth.js';
import type { SandboxConfig } from './config.js';
import type { Random } from './random.js';
import type { RateLimiter } from './rate-limit.js';
import type { Scheduler } from './scheduler.js';
import type { UrlSigner } from './signed-url.js';
import type { StatsCollector } from './stats.js';
import type { SubmissionStore } from './submissions.js';
import type { TenantStore } from './tenants.js';
import type { MemoryBudget } from './upload-store.js';
import type { WebhookDispatcher } from './webhooks.js';

export interface SandboxContext {
  config(): SandboxConfig;
  random(): Random;
  /** Absolute base URL, known once the server listens. */
  baseUrl(): string;
  auth: AuthServer;
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
  /** Epoch ms until which every API request gets 429 (faults.storm429). */
  stormUntil: number;
  logger: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    grant?: TokenGrant;
  }
  interface FastifyContextConfig {
    /** The OAuth scope the route needs; routes without one are outside the bearer-token API. */
    scope?: string;
  }
}
