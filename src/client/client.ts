/**
 * The typed client of the submission API: one method per endpoint of the spec, each a thin
 * description of the call (path, body, schema, retry mode) handed to the one request sender.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { z } from 'zod';
import {
  ClassificationResult,
  ContentResult,
  DecisionResult,
  FeedbackRequest,
  FeedbackResponse,
  FraudResult,
  PATHS,
  QualityResult,
  ReportResponse,
  SubmissionCharacteristics,
  SubmissionRequest,
  SubmissionResponse,
} from '../api/schemas.js';
import type { CryptoKey, KeyObject } from 'jose';
import { clientSecretBasic, privateKeyJwt } from './auth.js';
import { NotFoundError } from './errors.js';
import type { BodyFactory, HttpMethod, RetryMode } from './http.js';
import type { AdaptiveRateLimiter } from './limiter.js';
import type { ApiHealth } from './health.js';
import {
  type CommonOptions,
  CommonOptionsShape,
  createTransport,
  parseOptions,
  type Transport,
} from './transport.js';
import { fail, validateBody, validateSubmissionId } from './validate.js';

/**
 * The application's credentials: a client secret (HTTP Basic), or a private-key JWT (RS256 client
 * assertion with a registered `kid`), as a tenant's applications have.
 */
export interface ClientOptions extends CommonOptions {
  clientId: string;
  clientSecret?: string;
  /** PKCS#8 PEM or an imported key; with `kid`, instead of `clientSecret`. */
  privateKey?: string | CryptoKey | KeyObject;
  kid?: string;
}

const ClientOptionsSchema = z
  .strictObject({
    ...CommonOptionsShape,
    clientId: z.string().min(1),
    clientSecret: z.string().min(1).optional(),
    privateKey: z
      .custom<string | CryptoKey | KeyObject>(
        (v) => (typeof v === 'string' && v.includes('PRIVATE KEY')) || (typeof v === 'object' && v !== null),
        'must be a PKCS#8 PEM private key or a key object',
      )
      .optional(),
    kid: z.string().min(1).optional(),
  })
  .refine((o) => (o.clientSecret === undefined) !== (o.privateKey === undefined), {
    message: 'give clientSecret, or privateKey with kid',
  })
  .refine((o) => o.privateKey === undefined || o.kid !== undefined, {
    message: 'kid: required with privateKey',
    path: ['kid'],
  });

/** A file path, a buffer, a stream (sent once, never retried) or a factory of fresh streams. */
export type UploadBody = string | Buffer | Readable | (() => Readable);

export interface UploadOptions {
  /** Sent as Content-Length; known automatically for paths and buffers. */
  contentLength?: number;
}

/** The API's routes as templates (what metrics and traces name a call by, never its address). */
export const ROUTES = {
  submission: '/v2/submission',
  submissionById: '/v2/submission/{id}',
  characteristics: '/v2/submission/{id}/characteristics',
  result: (kind: string) => `/v2/submission/{id}/${kind}`,
  upload: '{upload_url}',
} as const;

/** A submission id no submission has (version 4, all zeros): `checkAccess` expects its 404. */
const NO_SUCH_SUBMISSION = '00000000-0000-4000-8000-000000000000';

const CHARACTERISTICS_PATH = /\/v2\/submission\/([^/]+)\/characteristics\/?$/;

/** How a result GET takes its turn: `spare`, behind creates (a poll placed early for freshness). */
export interface ResultCallOptions {
  spare?: boolean;
}

export class DocumentAnalysisClient {
  private readonly transport: Transport;

  constructor(options: ClientOptions) {
    const parsed = parseOptions(ClientOptionsSchema, options, 'DocumentAnalysisClient options');
    const { clientId, clientSecret, privateKey, kid, scopes } = parsed;
    this.transport = createTransport(parsed, (tokenUrl) =>
      privateKey !== undefined
        ? privateKeyJwt({ clientId, privateKey, kid: kid ?? '', tokenUrl, scopes })
        : clientSecretBasic(clientId, clientSecret ?? '', scopes),
    );
  }

  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  get tokenUrl(): string {
    return this.transport.tokenUrl;
  }

  /** The shared limiter, for metrics (`currentRate()`). */
  get limiter(): AdaptiveRateLimiter {
    return this.transport.limiter;
  }

  /** Whether the API answers (the connector pauses its input while it does not). */
  get health(): ApiHealth {
    return this.transport.health;
  }

  /** Token requests made so far (tests, metrics). */
  get tokenRequests(): number {
    return this.transport.tokens.stats.requests;
  }

  /**
   * A token from the token endpoint for this client's credentials, then one result GET of a
   * submission that does not exist: a 404 says the API accepts the token. Throws the ApiError of
   * the step that failed (AuthenticationError from the token endpoint or the API, PermissionError).
   */
  async checkAccess(): Promise<void> {
    await this.transport.tokens.getToken();
    try {
      await this.getFraud(NO_SUCH_SUBMISSION);
    } catch (error) {
      if (error instanceof NotFoundError) return;
      throw error;
    }
  }

  /**
   * POST /v2/submission. Not idempotent: resent only on 429 or a connection refused before
   * sending (see http.ts). The characteristics URL, when present, is made absolute. `beforeSend`
   * runs right before each attempt leaves (after the rate limiter's wait): what it throws ends the
   * call with that error, the request unsent. `onLimited` runs when an attempt
   * waits for the rate limiter.
   */
  async createSubmission(
    request: SubmissionRequest = {},
    options: { beforeSend?: () => void; onLimited?: () => void } = {},
  ): Promise<SubmissionResponse> {
    const context = this.context('POST', ROUTES.submission);
    const body = validateBody(SubmissionRequest, request, context);
    const response = await this.transport.sender.send({
      ...this.base('POST', ROUTES.submission, PATHS.submission, 'create'),
      json: body,
      schema: SubmissionResponse,
      ...(options.beforeSend ? { beforeSend: options.beforeSend } : {}),
      ...(options.onLimited ? { onLimited: options.onLimited } : {}),
    });
    const characteristicsUrl = response.submission_characteristics_upload_url;
    return characteristicsUrl === undefined
      ? response
      : {
          ...response,
          submission_characteristics_upload_url: new URL(characteristicsUrl, `${this.baseUrl}/`).href,
        };
  }

  /**
   * PUT the raw file to the pre-signed upload URL: streamed, `application/octet-stream`, no
   * Authorization header (the URL carries its own signature and must not receive our token).
   * Retried only when the body can be produced again (a path, a buffer or a factory).
   */
  async upload(uploadUrl: string, body: UploadBody, options: UploadOptions = {}): Promise<void> {
    const context = this.context('PUT', ROUTES.upload);
    if (!/^https?:\/\//.test(uploadUrl))
      fail(`${context.endpoint}: upload_url must be an absolute http(s) URL`, 'upload_url', context);
    const { factory, retry } = await uploadBodyFactory(body, options.contentLength, context);
    await this.transport.sender.send({
      method: 'PUT',
      route: ROUTES.upload,
      url: uploadUrl,
      body: factory,
      headers: { 'content-type': 'application/octet-stream' },
      auth: false,
      retry,
      // The pre-signed URL is object storage, not the API: its calls do not spend the API's rate budget.
      limited: false,
    });
  }

  /**
   * PUT characteristics. `submission` is a submission id or the characteristics URL from the
   * create response (which may be relative to the base URL).
   */
  async putCharacteristics(submission: string, characteristics: SubmissionCharacteristics): Promise<void> {
    const { url, id } = this.characteristicsTarget(submission);
    const context = this.context('PUT', ROUTES.characteristics, id);
    validateSubmissionId(id, context);
    const body = validateBody(SubmissionCharacteristics, characteristics, context);
    await this.transport.sender.send({
      ...this.base('PUT', ROUTES.characteristics, url, 'idempotent', id),
      json: body,
    });
  }

  getFraud(id: string, options: { withMetadata?: boolean } & ResultCallOptions = {}): Promise<FraudResult> {
    return this.getResult(
      'fraud',
      id,
      FraudResult,
      options.withMetadata ? { with_metadata: 'true' } : undefined,
      options.spare,
    );
  }

  getQuality(id: string, options: ResultCallOptions = {}): Promise<QualityResult> {
    return this.getResult('quality', id, QualityResult, undefined, options.spare);
  }

  getClassification(id: string, options: ResultCallOptions = {}): Promise<ClassificationResult> {
    return this.getResult('classification', id, ClassificationResult, undefined, options.spare);
  }

  getContent(id: string): Promise<ContentResult> {
    return this.getResult('content', id, ContentResult);
  }

  /**
   * GET .../decision. 404 throws NotReadyError: the spec uses 404 both for "no such submission"
   * and "verdict not ready" (see errors.ts); 400 means decision was not enabled.
   */
  getDecision(
    id: string,
    options: { embed?: string | readonly string[] } & ResultCallOptions = {},
  ): Promise<DecisionResult> {
    const embed = typeof options.embed === 'string' ? options.embed : options.embed?.join(',');
    return this.getResult('decision', id, DecisionResult, embed ? { embed } : undefined, options.spare);
  }

  getReport(id: string, options: { includeDecision?: boolean } = {}): Promise<ReportResponse> {
    return this.getResult(
      'report',
      id,
      ReportResponse,
      options.includeDecision === undefined
        ? undefined
        : { include_decision: String(options.includeDecision) },
    );
  }

  async deleteSubmission(id: string): Promise<void> {
    const context = this.context('DELETE', ROUTES.submissionById, id);
    validateSubmissionId(id, context);
    await this.transport.sender.send(
      this.base('DELETE', ROUTES.submissionById, PATHS.submissionById(id), 'idempotent', id),
    );
  }

  async putFeedback(id: string, feedback: FeedbackRequest): Promise<FeedbackResponse> {
    const route = ROUTES.result('feedback');
    const context = this.context('PUT', route, id);
    validateSubmissionId(id, context);
    const body = validateBody(FeedbackRequest, feedback, context);
    return this.transport.sender.send({
      ...this.base('PUT', route, PATHS.result(id, 'feedback'), 'idempotent', id),
      json: body,
      schema: FeedbackResponse,
    });
  }

  async getFeedback(id: string): Promise<FeedbackResponse> {
    return this.getResult('feedback', id, FeedbackResponse);
  }

  private async getResult<T>(
    kind: 'fraud' | 'quality' | 'classification' | 'content' | 'decision' | 'report' | 'feedback',
    id: string,
    schema: z.ZodType<T>,
    searchParams?: Record<string, string>,
    spare?: boolean,
  ): Promise<T> {
    const route = ROUTES.result(kind);
    validateSubmissionId(id, this.context('GET', route, id));
    return this.transport.sender.send({
      ...this.base('GET', route, PATHS.result(id, kind), 'idempotent', id),
      searchParams,
      schema,
      ...(spare ? { priority: 'spare' as const } : {}),
    });
  }

  private characteristicsTarget(submission: string): { url: string; id: string } {
    if (/^https?:\/\//.test(submission) || submission.startsWith('/')) {
      const url = new URL(submission, `${this.baseUrl}/`);
      const match = CHARACTERISTICS_PATH.exec(url.pathname);
      const context = this.context('PUT', ROUTES.characteristics);
      if (!match?.[1])
        fail(`${context.endpoint}: not a characteristics URL: ${url.pathname}`, 'submission', context);
      return { url: url.href, id: decodeURIComponent(match[1]) };
    }
    return { url: `${this.baseUrl}${PATHS.characteristics(submission)}`, id: submission };
  }

  private context(method: HttpMethod, route: string, submissionId?: string) {
    return { method, endpoint: `${method} ${route}`, submissionId };
  }

  private base(
    method: HttpMethod,
    route: string,
    pathOrUrl: string,
    retry: RetryMode,
    submissionId?: string,
  ) {
    const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${this.baseUrl}${pathOrUrl}`;
    return { method, route, url, auth: true, retry, limited: true, submissionId };
  }
}

async function uploadBodyFactory(
  body: UploadBody,
  contentLength: number | undefined,
  context: { method: string; endpoint: string },
): Promise<{ factory: BodyFactory; retry: RetryMode }> {
  if (typeof body === 'string') {
    let size: number;
    try {
      const info = await stat(body);
      if (!info.isFile()) throw new Error('not a regular file');
      size = contentLength ?? info.size;
    } catch (error) {
      return fail(
        `${context.endpoint}: cannot read ${body}: ${error instanceof Error ? error.message : String(error)}`,
        'body',
        context,
      );
    }
    return {
      factory: async () => ({ body: createReadStream(body), contentLength: size }),
      retry: 'idempotent',
    };
  }
  if (Buffer.isBuffer(body)) {
    return {
      factory: async () => ({ body, contentLength: contentLength ?? body.length }),
      retry: 'idempotent',
    };
  }
  if (body instanceof Readable) {
    // A stream can be read once: after a failed attempt there is nothing left to resend.
    let used = false;
    return {
      factory: async () => {
        if (used) throw new TypeError('upload stream already consumed');
        used = true;
        return { body, contentLength };
      },
      retry: 'never',
    };
  }
  return { factory: async () => ({ body: body(), contentLength }), retry: 'idempotent' };
}
