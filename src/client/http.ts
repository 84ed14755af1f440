/**
 * The one request sender. Every call of the client goes through `send`, which alone does
 * rate limiting, authentication (bearer token, one refresh on 401), retries, error mapping,
 * response validation and instrumentation. The resource methods in client.ts only say what to
 * send and what to expect. Its retry rule is told at `HttpSender` (and in docs/client.md).
 */
import type { Readable } from 'node:stream';
import { ZodUnion, type z } from 'zod';
import { describeZodError, ErrorBody } from '../api/schemas.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { redactText } from '../observability/redact.js';
import type { TokenSource } from './auth.js';
import type { ApiError } from './errors.js';
import {
  ConnectionError,
  errorFromStatus,
  RateLimitError,
  ResponseValidationError,
  ServerError,
} from './errors.js';
import type { AdaptiveRateLimiter, CallPriority, Clock } from './limiter.js';
import { systemClock } from './limiter.js';
import { Wire, WireError, type Egress, type WireResponse } from './wire.js';
import { GotWire } from './got-wire.js';
import { optimisationOn } from '../util/optimisations.js';
import { parseRetryAfter, type RetryPolicy } from './retry.js';
import { GateClosedError, type ApiHealth } from './health.js';
import { retry, type RetryVerdict } from '../util/retry.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** The text each validated response body was parsed from (weakly held: it lives as long as the body). */
const responseTexts = new WeakMap<object, string>();

/**
 * The exact JSON text the API answered for a body this client returned, so that a caller that
 * passes the whole answer on (the result records' `response_json`) need not serialise it again;
 * undefined for any other value.
 */
export function responseText(body: unknown): string | undefined {
  return typeof body === 'object' && body !== null ? responseTexts.get(body) : undefined;
}

/**
 * How a call may be retried; see the rule at the top of this file. `create` is retried like
 * `idempotent` but waits behind the calls of documents already submitted.
 */
export type RetryMode = 'idempotent' | 'create' | 'never';

export interface CallEvent {
  method: HttpMethod;
  /** Path template, e.g. `/v2/submission/{id}/fraud`: bounded cardinality for metrics. */
  endpoint: string;
  /** Undefined when no HTTP answer arrived. */
  status?: number;
  durationMs: number;
  /** 1 for the first attempt of a call. */
  attempt: number;
  /** A resend: a later attempt, or the resend after a token refresh. */
  retried: boolean;
}

export type OnCall = (event: CallEvent) => void;

/** A body the sender can produce again for every attempt. */
export type BodyFactory = () => Promise<{ body: Readable | Buffer; contentLength?: number }>;

export interface SendRequest<T> {
  method: HttpMethod;
  /** Path template for errors, logs and metrics. */
  route: string;
  url: string;
  searchParams?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string>;
  body?: BodyFactory;
  headers?: Record<string, string>;
  /** Send the bearer token (and refresh it once on 401). */
  auth: boolean;
  retry: RetryMode;
  /** Go through the shared rate limiter (everything but the token endpoint). */
  limited: boolean;
  submissionId?: string;
  /** Schema of a 2xx body; without one the body is ignored. */
  schema?: z.ZodType<T>;
  /** The health's own probe: it goes while the API is unavailable and is never retried. */
  probe?: boolean;
  /** Runs right before each attempt is sent (after the limiter); what it throws ends the call unsent. */
  beforeSend?: () => void;
  /** Runs when an attempt has to wait for the rate limiter (no call free now). */
  onLimited?: () => void;
  /** Its turn at the limiter (default: `new` for a create, `submitted` for the rest). */
  priority?: CallPriority;
}

export interface SenderOptions {
  limiter: AdaptiveRateLimiter;
  health: ApiHealth;
  retry: RetryPolicy;
  timeoutMs: number;
  /** Connections kept per origin (API, token endpoint, upload host); more requests queue. */
  maxSockets?: number;
  /** Proxy and CAs of every request (API, token endpoint, upload URLs); default: direct, Node's CAs. */
  egress?: Egress;
  tokens?: TokenSource;
  logger?: Logger;
  onCall?: OnCall;
  clock?: Clock;
}

/** Connection failures that happen before any request byte leaves this process. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL']);

/** A transient API failure: a failure that says "not now", not "not this". */
function isTransient(error: unknown): boolean {
  return error instanceof RateLimitError || error instanceof ServerError || error instanceof ConnectionError;
}

/**
 * Retry rule (also in docs/client.md): a transient API failure is not the call's fault.
 * - 429, 5xx, timeouts, refused or dropped connections, and the same failures of the token endpoint
 *   are retried, using up no attempt, until the call's time budget (`retry.maxTotalMs`; the connector
 *   sets it to a document's deadline) is spent. A 429's Retry-After is the earliest time for that call
 *   to go again (spread with jitter); the limiter lowers everyone's rate (limiter.ts).
 * - A create (POST /v2/submission) is retried like the rest: a resend after the server did work (a
 *   5xx other than 503, or a connection cut once the request was on the wire) may leave an empty
 *   submission behind (never analysed: nobody has its upload URL), which is better than a good
 *   document in the dead-letter topic. Creates wait behind calls for documents already submitted.
 * - While the API is unavailable (health.ts), calls wait at one gate and one probe at a time goes.
 * - Nothing else is retried: 4xx answers are final (401 aside: one token refresh and one resend,
 *   since the request was refused before any work). Uploads whose body cannot be made again are
 *   never resent.
 */
export class HttpSender {
  private readonly logger: Logger;
  private readonly clock: Clock;
  private tokens?: TokenSource;
  /** Its own HTTP layer, or got where that is switched off (`http-client-wire`). */
  readonly wire: Wire | GotWire;

  constructor(private readonly options: SenderOptions) {
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.tokens = options.tokens;
    this.wire = optimisationOn('http-client-wire')
      ? new Wire(options.maxSockets, options.egress)
      : new GotWire(options.maxSockets, options.egress);
  }

  /** Closes the pooled connections (idle ones at once, busy ones when their request ends) and the gate. */
  close(): void {
    this.wire.close();
    this.options.health.close();
  }

  /** The token source is set after construction because it requests tokens through `send`. */
  setTokenSource(tokens: TokenSource): void {
    this.tokens = tokens;
  }

  async send<T>(request: SendRequest<T>): Promise<T> {
    // One token refresh per call, however many tries it takes.
    const auth = { refreshed: false };
    const policy = this.options.retry;
    const until = this.clock.now() + policy.maxTotalMs;
    let transient: ApiError | undefined;
    return retry(
      async (tries) => {
        // While the API is unavailable, wait for it (or for this call's turn as the probe).
        if (request.limited && !request.probe) {
          await this.options.health.pass(until).catch((err: unknown) => {
            if (!(err instanceof GateClosedError)) throw err;
            throw transient ?? this.unavailable(request, err);
          });
        }
        return this.attempt(request, tries, auth);
      },
      {
        budgetMs: policy.maxTotalMs,
        backoff: { initialMs: policy.minDelayMs, maxMs: policy.maxDelayMs },
        clock: this.clock,
        classify: (error) => {
          const verdict = this.decide(request, error);
          if (verdict.retry) transient = error as ApiError;
          return verdict;
        },
        onRetry: (error, tries, delayMs) =>
          this.logger.debug(
            {
              endpoint: `${request.method} ${request.route}`,
              submissionId: request.submissionId,
              error: (error as Error).name,
              status: (error as ApiError).status,
              tries,
              delayMs,
            },
            'retrying API call',
          ),
        // The dead letter of a call that failed says how often it was tried, token requests included.
        onGiveUp: (error, tries, why) => {
          if (!(error instanceof Error) || !('attempts' in error)) return;
          const e = error as ApiError;
          e.attempts = tries;
          if (why === 'budget') e.budgetSpent = true;
        },
      },
    );
  }

  /** A call that waited at the gate for its whole time: the API never answered it. */
  private unavailable(request: SendRequest<unknown>, cause: Error): ApiError {
    return new ConnectionError(`${request.method} ${request.route} not sent: the API is unavailable`, {
      method: request.method,
      endpoint: `${request.method} ${request.route}`,
      submissionId: request.submissionId,
      cause,
      requestSent: false,
    });
  }

  private decide(request: SendRequest<unknown>, error: unknown): RetryVerdict {
    if (request.retry === 'never' || request.probe || !isTransient(error)) return { retry: false };
    const retryAfterMs = error instanceof RateLimitError ? error.retryAfterMs : undefined;
    return {
      retry: true,
      counts: false,
      ...(retryAfterMs === undefined ? {} : { notBeforeMs: retryAfterMs }),
    };
  }

  private async attempt<T>(
    request: SendRequest<T>,
    attempt: number,
    auth: { refreshed: boolean },
  ): Promise<T> {
    for (;;) {
      const limiter = this.options.limiter;
      // The token first: a slot taken while the token is fetched would be spent late, all such calls
      // at once when it arrives (a wave of 429s at start-up).
      let token: string | Promise<string> | undefined = request.auth ? this.token(request) : undefined;
      if (typeof token === 'object') {
        try {
          token = await token;
        } catch (err) {
          // A token endpoint that is down is a transient API failure too.
          if (isTransient(err)) this.options.health.onTransientFailure();
          throw err;
        }
      }
      let releasedAt = request.limited ? limiter.tryAcquire() : 0;
      if (releasedAt === undefined) {
        request.onLimited?.();
        releasedAt = await limiter.acquire(
          request.priority ?? (request.retry === 'create' ? 'new' : 'submitted'),
        );
      }
      request.beforeSend?.();
      let response: WireResponse;
      try {
        response = await this.exchange(request, attempt, token, auth.refreshed);
      } catch (err) {
        if (request.limited) this.options.health.onTransientFailure();
        throw err;
      }
      const status = response.statusCode;
      if (request.limited) {
        if (status >= 500) this.options.health.onTransientFailure();
        else this.options.health.onAnswer();
      }

      if (status === 401 && token !== undefined && !auth.refreshed) {
        // A token can expire or be revoked between caching and use; the refused request did no
        // work, so one refresh and one resend are safe even for a create.
        auth.refreshed = true;
        this.requireTokens(request).invalidate(token);
        continue;
      }
      if (request.limited) {
        if (status === 429) limiter.onRateLimited(releasedAt);
        else if (status < 500) limiter.onSuccess();
      }
      if (status >= 200 && status < 300) return this.parse(request, response);
      if (status === 404 && request.method === 'DELETE' && attempt > 1) {
        // An earlier attempt whose answer was lost did the delete; the goal is reached.
        return undefined as T;
      }
      throw this.httpError(request, response);
    }
  }

  /** The cached token without waiting when it is valid, else the token source's answer. */
  private token(request: SendRequest<unknown>): string | Promise<string> {
    const tokens = this.requireTokens(request);
    return tokens.validToken?.() ?? tokens.getToken();
  }

  private requireTokens(request: SendRequest<unknown>): TokenSource {
    if (!this.tokens) throw new TypeError(`${request.method} ${request.route} needs a token source`);
    return this.tokens;
  }

  private async exchange(
    request: SendRequest<unknown>,
    attempt: number,
    token: string | undefined,
    afterRefresh: boolean,
  ): Promise<WireResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    let body: Readable | Buffer | undefined;
    if (request.body) {
      const made = await request.body();
      body = made.body;
      if (made.contentLength !== undefined) headers['content-length'] = String(made.contentLength);
    }
    const started = performance.now();
    const report = (status: number | undefined) =>
      this.options.onCall?.({
        method: request.method,
        endpoint: request.route,
        status,
        durationMs: performance.now() - started,
        attempt,
        retried: attempt > 1 || afterRefresh,
      });
    try {
      const response = await this.wire.exchange({
        method: request.method,
        url: request.url,
        headers,
        searchParams: request.searchParams,
        json: request.json,
        form: request.form,
        body,
        timeoutMs: this.options.timeoutMs,
      });
      report(response.statusCode);
      return response;
    } catch (error) {
      report(undefined);
      throw this.connectionError(request, error);
    }
  }

  private connectionError(request: SendRequest<unknown>, error: unknown): ApiError {
    const code = error instanceof WireError ? error.code : undefined;
    const reason = error instanceof Error ? error.message : String(error);
    return new ConnectionError(`${request.method} ${request.route} failed without an answer: ${reason}`, {
      method: request.method,
      endpoint: `${request.method} ${request.route}`,
      submissionId: request.submissionId,
      cause: error,
      code,
      requestSent: code === undefined || !NOT_SENT_CODES.has(code),
    });
  }

  private retryAfter(response: WireResponse): number | undefined {
    const header = response.headers['retry-after'];
    return parseRetryAfter(Array.isArray(header) ? header[0] : header);
  }

  private httpError(request: SendRequest<unknown>, response: WireResponse): ApiError {
    const body = parseJson(response.body);
    const parsed = ErrorBody.safeParse(body);
    // A server may echo the request it was sent (its Authorization header, a client secret).
    const detail = redactText(
      parsed.success ? parsed.data.message : (oauthError(body) ?? (response.statusMessage || 'no message')),
    );
    const requestId = response.headers['x-request-id'];
    return errorFromStatus({
      status: response.statusCode,
      message: `${request.method} ${request.route} answered ${response.statusCode}: ${detail}`,
      method: request.method,
      endpoint: `${request.method} ${request.route}`,
      submissionId: request.submissionId,
      body: body ?? response.body,
      requestId: typeof requestId === 'string' ? requestId : undefined,
      retryAfterMs: response.statusCode === 429 ? this.retryAfter(response) : undefined,
    });
  }

  private parse<T>(request: SendRequest<T>, response: WireResponse): T {
    if (!request.schema) return undefined as T;
    const body = parseJson(response.body);
    const result = request.schema.safeParse(body);
    if (!result.success) {
      throw new ResponseValidationError(
        `${request.method} ${request.route} answered ${response.statusCode} with an unexpected body: ${
          body === undefined ? 'not JSON' : describeResponseIssues(request.schema, body, result.error)
        }`,
        {
          method: request.method,
          endpoint: `${request.method} ${request.route}`,
          status: response.statusCode,
          submissionId: request.submissionId,
          body: body ?? response.body,
        },
      );
    }
    const data = result.data;
    if (typeof data === 'object' && data !== null) responseTexts.set(data, response.body);
    return data;
  }
}

/**
 * Result schemas are unions of a SUCCESS variant and the other variants, and zod reports only
 * the variant that failed last ("status must not be SUCCESS"), which hides the real problem.
 * Describe instead the variant the body claims to be: the one whose `status` it matches.
 */
function describeResponseIssues(schema: z.ZodType<unknown>, body: unknown, error: z.ZodError): string {
  if (schema instanceof ZodUnion) {
    for (const option of schema.options as readonly z.ZodType<unknown>[]) {
      const attempt = option.safeParse(body);
      if (!attempt.success && !attempt.error.issues.some((issue) => issue.path[0] === 'status')) {
        return describeZodError(attempt.error);
      }
    }
  }
  return describeZodError(error);
}

/** The token endpoint answers errors in the RFC 6749 §5.2 shape, not the API's `message`. */
function oauthError(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, error_description: description } = body as Record<string, unknown>;
  if (typeof error !== 'string') return undefined;
  return typeof description === 'string' ? `${error}: ${description}` : error;
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
