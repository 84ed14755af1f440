/**
 * What both clients share: options validation, address resolution, and the wiring of one
 * limiter, one token source and one request sender.
 */
import { z } from 'zod';
import { describeZodError, PATHS, TokenResponse } from '../api/schemas.js';
import type { Logger } from '../observability/logger.js';
import { CachedTokenSource, type TokenRequester } from './auth.js';
import { resolveAddress } from './cells.js';
import { HttpSender, type OnCall } from './http.js';
import { AdaptiveRateLimiter, type Clock } from './limiter.js';
import { ApiHealth, type ApiHealthOptions } from './health.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
import type { Egress } from './wire.js';

const isFunction = (v: unknown) => typeof v === 'function';

/** Options common to both clients. Unknown keys are rejected, never ignored. */
export const CommonOptionsShape = {
  baseUrl: z.string().optional(),
  cell: z.string().optional(),
  tokenUrl: z.string().optional(),
  cells: z
    .record(z.string(), z.strictObject({ baseUrl: z.string(), tokenUrl: z.string().optional() }))
    .optional(),
  scopes: z.array(z.string().min(1)).optional(),
  rateLimit: z
    .strictObject({
      ratePerSecond: z.number().positive().optional(),
      min: z.number().positive().optional(),
      burst: z.number().int().positive().optional(),
      initial: z.number().positive().optional(),
    })
    .optional(),
  retry: z
    .strictObject({
      maxTotalMs: z.number().int().min(0).optional(),
      minDelayMs: z.number().min(0).optional(),
      maxDelayMs: z.number().min(0).optional(),
    })
    .optional(),
  health: z
    .strictObject({
      failuresToTrip: z.number().int().positive().optional(),
      tripAfterMs: z.number().int().min(0).optional(),
      probeMinMs: z.number().int().positive().optional(),
      probeMaxMs: z.number().int().positive().optional(),
    })
    .optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxSockets: z.number().int().positive().optional(),
  egress: z
    .strictObject({
      routes: z.strictObject({ https: z.string(), http: z.string(), noProxy: z.string() }),
      ca: z.array(z.string()).optional(),
    })
    .optional(),
  logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null, 'must be a logger').optional(),
  onCall: z.custom<OnCall>(isFunction, 'must be a function').optional(),
  clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null, 'must be a clock').optional(),
};

const DEFAULT_RATE_PER_SECOND = 20;
const DEFAULT_TIMEOUT_MS = 30_000;

export interface CommonOptions {
  baseUrl?: string;
  /** A cell name (`eu-1`, ..., `testing`) looked up in `cells`; exclusive with `baseUrl`. */
  cell?: string;
  /** Defaults to the cell's token URL, else `${baseUrl}/oauth2/token`. */
  tokenUrl?: string;
  cells?: Record<string, { baseUrl: string; tokenUrl?: string }>;
  scopes?: string[];
  /** `initial`: where slow start begins (limiter.ts). */
  rateLimit?: { ratePerSecond?: number; min?: number; burst?: number; initial?: number };
  retry?: Partial<RetryPolicy>;
  /** When the API counts as unavailable and how often it is probed then (health.ts). */
  health?: Omit<ApiHealthOptions, 'clock' | 'random'>;
  timeoutMs?: number;
  /** Keep-alive connections per origin (default 256); requests beyond wait for a free one. */
  maxSockets?: number;
  /**
   * The proxy of every request (API, token endpoint, upload URLs) and the CAs trusted for them
   * (`proxyRoutes`, `trustedCas` of src/util/proxy.ts); default: direct, Node's CAs.
   */
  egress?: Egress;
  logger?: Logger;
  onCall?: OnCall;
  clock?: Clock;
}

export function parseOptions<T>(schema: z.ZodType<T>, options: unknown, what: string): T {
  const parsed = schema.safeParse(options);
  if (!parsed.success) throw new TypeError(`${what}: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

export interface Transport {
  baseUrl: string;
  tokenUrl: string;
  sender: HttpSender;
  limiter: AdaptiveRateLimiter;
  health: ApiHealth;
  tokens: CachedTokenSource;
}

/** A submission id no submission has: the health's probe asks for it and expects a 404. */
const PROBE_SUBMISSION_ID = '00000000-0000-4000-8000-000000000000';

export function createTransport(
  options: CommonOptions,
  credentials: (tokenUrl: string) => ConstructorParameters<typeof CachedTokenSource>[1],
): Transport {
  const { baseUrl, tokenUrl } = resolveAddress(options);
  const limiter = new AdaptiveRateLimiter({
    ratePerSecond: options.rateLimit?.ratePerSecond ?? DEFAULT_RATE_PER_SECOND,
    minRatePerSecond: options.rateLimit?.min,
    burst: options.rateLimit?.burst,
    initialRatePerSecond: options.rateLimit?.initial,
    clock: options.clock,
  });
  const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(options.retry ?? {}) };
  const health = new ApiHealth({
    ...stripUndefined(options.health ?? {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const sender = new HttpSender({
    limiter,
    health,
    retry,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxSockets: options.maxSockets,
    egress: options.egress,
    logger: options.logger,
    onCall: options.onCall,
    clock: options.clock,
  });
  // The authorization server is not the API: token requests skip the API's rate limiter, and are
  // tried once each: the call that needs the token retries (its tries then count the token's).
  const requestToken: TokenRequester = (form, headers) =>
    sender.send({
      method: 'POST',
      route: PATHS.token,
      url: tokenUrl,
      form,
      headers,
      auth: false,
      retry: 'never',
      limited: false,
      schema: TokenResponse,
    });
  const tokens = new CachedTokenSource(requestToken, credentials(tokenUrl), options.clock);
  sender.setTokenSource(tokens);
  // Any answer but a 5xx says the API is back (a 404 here is the expected one).
  health.probe = () =>
    sender.send({
      method: 'GET',
      route: '/v2/submission/{id}/fraud (health probe)',
      url: `${baseUrl}${PATHS.result(PROBE_SUBMISSION_ID, 'fraud')}`,
      auth: true,
      retry: 'never',
      limited: true,
      probe: true,
    });
  return { baseUrl, tokenUrl, sender, limiter, health, tokens };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
