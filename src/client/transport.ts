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
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';

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
      increasePerSecond: z.number().positive().optional(),
    })
    .optional(),
  retry: z
    .strictObject({
      attempts: z.number().int().min(1).optional(),
      maxTotalMs: z.number().int().min(0).optional(),
      minDelayMs: z.number().min(0).optional(),
      maxDelayMs: z.number().min(0).optional(),
      ambiguousCreateAttempts: z.number().int().min(1).optional(),
    })
    .optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxSockets: z.number().int().positive().optional(),
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
  rateLimit?: { ratePerSecond?: number; min?: number; burst?: number; increasePerSecond?: number };
  retry?: Partial<RetryPolicy>;
  timeoutMs?: number;
  /** Keep-alive connections per origin (default 256); requests beyond wait for a free one. */
  maxSockets?: number;
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
  tokens: CachedTokenSource;
}

export function createTransport(
  options: CommonOptions,
  credentials: (tokenUrl: string) => ConstructorParameters<typeof CachedTokenSource>[1],
): Transport {
  const { baseUrl, tokenUrl } = resolveAddress(options);
  const limiter = new AdaptiveRateLimiter({
    ratePerSecond: options.rateLimit?.ratePerSecond ?? DEFAULT_RATE_PER_SECOND,
    minRatePerSecond: options.rateLimit?.min,
    burst: options.rateLimit?.burst,
    increasePerSecond: options.rateLimit?.increasePerSecond,
    clock: options.clock,
  });
  const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(options.retry ?? {}) };
  const sender = new HttpSender({
    limiter,
    retry,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxSockets: options.maxSockets,
    logger: options.logger,
    onCall: options.onCall,
    clock: options.clock,
  });
  // The authorization server is not the API: token requests skip the API's rate limiter but
  // share the retry rule (a token request is safe to resend).
  const requestToken: TokenRequester = (form, headers) =>
    sender.send({
      method: 'POST',
      route: PATHS.token,
      url: tokenUrl,
      form,
      headers,
      auth: false,
      retry: 'idempotent',
      limited: false,
      schema: TokenResponse,
    });
  const tokens = new CachedTokenSource(requestToken, credentials(tokenUrl), options.clock);
  sender.setTokenSource(tokens);
  return { baseUrl, tokenUrl, sender, limiter, tokens };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
