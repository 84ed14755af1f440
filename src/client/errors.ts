/**
 * One error hierarchy for everything the client can throw.
 *
 * Every error names the call it belongs to (`method`, `endpoint` as a path template such as
 * `GET /v2/submission/{id}/fraud`, and the submission id when there is one) and says whether
 * the same call may succeed later unchanged (`retriable`). The request sender retries only a
 * subset of the retriable errors by itself (429, 5xx, connection failures; see http.ts);
 * NotReadyError and the delete ConflictError are retriable in the sense that the caller
 * should try again later (poll), not that the sender loops on them.
 */

export interface ApiErrorContext {
  method: string;
  endpoint: string;
  status?: number;
  submissionId?: string;
  body?: unknown;
  requestId?: string;
  cause?: unknown;
  retriable?: boolean;
}

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status?: number;
  readonly method: string;
  readonly endpoint: string;
  readonly submissionId?: string;
  readonly retriable: boolean;
  readonly body?: unknown;
  readonly requestId?: string;
  /** How many times the call was sent before this error ended it (set by the retry loop). */
  attempts = 1;
  /** A transient API failure outlasted the call's time budget (for the connector: the document's deadline). */
  budgetSpent = false;

  constructor(message: string, context: ApiErrorContext) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.status = context.status;
    this.method = context.method;
    this.endpoint = context.endpoint;
    this.submissionId = context.submissionId;
    this.retriable = context.retriable ?? false;
    this.body = context.body;
    this.requestId = context.requestId;
  }
}

/** 400: the server rejected the request (for the decision endpoint: decision not enabled). */
export class InvalidRequestError extends ApiError {
  override name = 'InvalidRequestError';
}

/** 401: missing, invalid or expired token, or the token endpoint refused the credentials. */
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
}

/** 403: the token lacks the scope the endpoint needs. */
export class PermissionError extends ApiError {
  override name = 'PermissionError';
}

/** 404: the submission (or feedback, tenant) does not exist. */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}

/**
 * 404 from the decision endpoint. The spec gives one status for "submission does not exist"
 * and "verdict not ready", so the client cannot tell them apart from this answer alone; it
 * assumes "not ready" (the common case while polling). A caller that must distinguish them
 * checks the submission another way, e.g. GET .../fraud answers 404 only for an unknown id
 * once processing is done. A subclass of NotFoundError, so `instanceof NotFoundError` holds.
 */
export class NotReadyError extends NotFoundError {
  override name = 'NotReadyError';
}

/** 409: delete while processing (retriable later) or a report whose inputs did not succeed. */
export class ConflictError extends ApiError {
  override name = 'ConflictError';
}

/** 415: wrong Content-Type. */
export class UnsupportedMediaTypeError extends ApiError {
  override name = 'UnsupportedMediaTypeError';
}

/** 429: rate limited. `retryAfterMs` is the server's Retry-After, when it sent one. */
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
  readonly retryAfterMs?: number;
  constructor(message: string, context: ApiErrorContext & { retryAfterMs?: number }) {
    super(message, { ...context, retriable: true });
    this.retryAfterMs = context.retryAfterMs;
  }
}

/** 5xx. Retriable, except that a create is never resent after one (it may have done work). */
export class ServerError extends ApiError {
  override name = 'ServerError';
}

/**
 * No HTTP answer: connection refused, DNS failure, reset, timeout. `requestSent` is false only
 * when the failure provably happened before any byte of the request left this process
 * (refused connection, unresolvable host); only then may a non-idempotent call be resent.
 */
export class ConnectionError extends ApiError {
  override name = 'ConnectionError';
  readonly code?: string;
  readonly requestSent: boolean;
  constructor(message: string, context: ApiErrorContext & { code?: string; requestSent: boolean }) {
    super(message, { ...context, retriable: true });
    this.code = context.code;
    this.requestSent = context.requestSent;
  }
}

/** Client-side validation failed before sending; no request was made. `field` names the culprit. */
export class ValidationError extends ApiError {
  override name = 'ValidationError';
  readonly field: string;
  constructor(message: string, context: ApiErrorContext & { field: string }) {
    super(message, { ...context, retriable: false });
    this.field = context.field;
  }
}

/** The server answered with a success status but a body that does not match the spec. */
export class ResponseValidationError extends ApiError {
  override name = 'ResponseValidationError';
}

/** Any other non-success status the spec does not list. */
class UnexpectedStatusError extends ApiError {
  override name = 'UnexpectedStatusError';
}

export interface HttpErrorInput extends ApiErrorContext {
  status: number;
  message: string;
  retryAfterMs?: number;
}

/**
 * Maps an HTTP error status to its class. Endpoint-specific meanings: 404 on the decision
 * endpoint is NotReadyError; 409 on delete is retriable (the submission is still being
 * processed), 409 on the report is final.
 */
export function errorFromStatus(input: HttpErrorInput): ApiError {
  const { status, message } = input;
  const context: ApiErrorContext = { ...input };
  const isDecision = input.method === 'GET' && input.endpoint.endsWith('/decision');
  switch (status) {
    case 400:
      return new InvalidRequestError(message, { ...context, retriable: false });
    case 401:
      return new AuthenticationError(message, { ...context, retriable: false });
    case 403:
      return new PermissionError(message, { ...context, retriable: false });
    case 404:
      return isDecision
        ? new NotReadyError(message, { ...context, retriable: true })
        : new NotFoundError(message, { ...context, retriable: false });
    case 409:
      return new ConflictError(message, { ...context, retriable: input.method === 'DELETE' });
    case 415:
      return new UnsupportedMediaTypeError(message, { ...context, retriable: false });
    case 429:
      return new RateLimitError(message, { ...context, retryAfterMs: input.retryAfterMs });
    default:
      if (status >= 500) return new ServerError(message, { ...context, retriable: true });
      return new UnexpectedStatusError(message, { ...context, retriable: false });
  }
}
