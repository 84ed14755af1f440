/**
 * The one way any failure becomes a dead letter: API client errors (status, attempts), blob errors
 * (code), decode failures (code) and anything else (the stage's fallback code). The stage named in
 * the letter is the stage counted in the failure metric.
 */
import type { InputErrorCode } from '../serde/input.js';
import type { DeadLetterStage } from '../serde/types.js';
import type { DeadLetter, SourceRecord } from './types.js';

export type { DeadLetterStage };

/** What every failure is read for; the API client's and the blob sources' errors carry these. */
interface FailureInfo {
  status?: number | undefined;
  retriable?: boolean | undefined;
  code?: string | undefined;
  attempts?: number | undefined;
}

export interface Failure {
  status: number | undefined;
  retriable: boolean | undefined;
  code: string | undefined;
  attempts: number | undefined;
  message: string;
}

/** Reads any thrown value as a failure (errors of other libraries included). */
export function failureOf(err: unknown): Failure {
  const e = (err ?? {}) as FailureInfo & { message?: string };
  return {
    status: typeof e.status === 'number' ? e.status : undefined,
    retriable: typeof e.retriable === 'boolean' ? e.retriable : undefined,
    code: typeof e.code === 'string' ? e.code : undefined,
    attempts: typeof e.attempts === 'number' ? e.attempts : undefined,
    message: err instanceof Error ? err.message : typeof e.message === 'string' ? e.message : String(err),
  };
}

/** Which document, and which record, a letter is about. */
export interface LetterSubject {
  source: SourceRecord | null;
  event_id: string | null;
  submission_id: string | null;
  attributes: Record<string, string>;
}

/** How the caller knows the failure beyond the error itself. */
export interface LetterContext {
  stage: DeadLetterStage;
  /** The code when the failure has neither an HTTP status nor a code of its own. */
  fallbackCode: string;
  /** Attempts counted by the caller (polls, deletes); otherwise the error's own count, else 1. */
  attempts?: number;
}

/**
 * A failure as a dead letter. The code is `api_<status>` when an HTTP status is known, else the
 * failure's own code, else the fallback; `err` may be an error, a decode failure, or a plain
 * `{ code, message }` (a deadline).
 */
export function deadLetterOf(err: unknown, subject: LetterSubject, context: LetterContext): DeadLetter {
  const f = failureOf(err);
  return {
    ...subject,
    stage: context.stage,
    error_code: f.status !== undefined ? `api_${f.status}` : (f.code ?? context.fallbackCode),
    message: f.message,
    http_status: f.status ?? null,
    attempts: context.attempts ?? f.attempts ?? 1,
  };
}

/** The stage of an input record that could not be read: unreadable bytes, or a readable but invalid event. */
export function decodeStage(code: InputErrorCode): DeadLetterStage {
  return code === 'schema_invalid' || code === 'characteristics_too_large' ? 'validate' : 'decode';
}

/** Writes a dead letter (resolves once Kafka acknowledged it). */
export type DeadLetterSink = (letter: DeadLetter) => Promise<void>;
