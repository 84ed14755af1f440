/**
 * The one way any failure becomes a dead letter: API client errors (status, attempts), blob errors
 * (code), decode failures (code) and anything else (the stage's fallback code). The stage named in
 * the dead letter is the stage counted in the failure metric.
 */
import type { InputErrorCode } from '../../serde/input.js';
import { redactText } from '../../observability/redact.js';
import { jsonDepthProblem } from '../../serde/json-bounds.js';
import type { DeadLetterStage } from '../../serde/types.js';
import { isDeadLetterCode, type CatalogueCode } from './dead-letter-catalogue.js';
import type { DeadLetter, SourceRecord } from '../types.js';

export type { DeadLetterStage };

/** What every failure is read for; the API client's and the blob sources' errors carry these. */
interface FailureInfo {
  status?: number | undefined;
  retriable?: boolean | undefined;
  code?: string | undefined;
  attempts?: number | undefined;
}

interface Failure {
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

/** Which document, and which record, a dead letter is about. */
export interface DeadLetterSubject {
  source: SourceRecord | null;
  event_id: string | null;
  submission_id: string | null;
  attributes: Record<string, string>;
  /** The document's tenant, when known. */
  tenant?: string | null;
}

/** How the caller knows the failure beyond the error itself. */
export interface DeadLetterContext {
  stage: DeadLetterStage;
  /** The code when the failure has neither an HTTP status nor a catalogue code of its own. */
  fallbackCode: CatalogueCode;
  /** Attempts counted by the caller (polls, deletes); otherwise the error's own count, else 1. */
  attempts?: number;
}

/**
 * A failure as a dead letter. The code is `api_<status>` when an HTTP status is known, else the
 * failure's own code when the catalogue (`dead-letter-catalogue.ts`) declares it, else the fallback; `err` may be an error, a decode failure, or a plain
 * `{ code, message }` (a deadline). The message is redacted: an error may quote a server that
 * echoed credentials, or a URL with a password.
 */
export function deadLetterOf(
  err: unknown,
  subject: DeadLetterSubject,
  context: DeadLetterContext,
): DeadLetter {
  const f = failureOf(err);
  return {
    ...subject,
    stage: context.stage,
    error_code:
      f.status !== undefined
        ? `api_${f.status}`
        : f.code !== undefined && isDeadLetterCode(f.code)
          ? f.code
          : context.fallbackCode,
    message: redactText(f.message),
    http_status: f.status ?? null,
    attempts: context.attempts ?? f.attempts ?? 1,
  };
}

/**
 * The stage of an input record that could not be read: unreadable bytes (or too large or too deep to
 * be read at all), or a readable but invalid event.
 */
export function decodeStage(code: InputErrorCode): DeadLetterStage {
  return code === 'schema_invalid' || code === 'characteristics_too_large' ? 'validate' : 'decode';
}

/** Writes a dead letter (resolves once Kafka acknowledged it). */
export type DeadLetterSink = (deadLetter: DeadLetter) => Promise<void>;

/** Fields always removed from the copy of a record a dead letter carries: personal data. */
const ALWAYS_REDACTED = ['submission_characteristics'] as const;

/** Why a dead letter's copy of the original value was changed; null when it was kept byte for byte. */
type Redaction = 'fields_removed' | 'value_withheld' | null;

/**
 * The source record as a dead letter may carry it: without `submission_characteristics` and the
 * configured fields (dotted paths, e.g. `blob.url` or `attributes.email`). A JSON object is parsed,
 * stripped and written again. A value that cannot be read without the registry (Avro, magic byte 0)
 * or is no JSON object is withheld when it could hold a redacted field, because a dead letter must never
 * need a working registry, or a parser that understands broken input, to be safe: the pointer
 * (topic, partition, offset) still leads to the original, which stays in the input topic. A text
 * nested too deep to strip and write again without recursing that deep counts as unreadable.
 */
export function redactSource(
  source: SourceRecord,
  fields: readonly string[] = [],
): { source: SourceRecord; redaction: Redaction } {
  const value = source.value;
  if (value === null || value.length === 0) return { source, redaction: null };
  const paths = [...ALWAYS_REDACTED, ...fields].map((f) => f.split('.'));
  if (value[0] === 0) return { source: { ...source, value: null }, redaction: 'value_withheld' };
  let parsed: unknown;
  const text = value.toString('utf8');
  try {
    parsed = jsonDepthProblem(text) === null ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!isRecord(parsed)) {
    // Unreadable text: kept only when no redacted field's name occurs in it.
    const latin1 = value.toString('latin1');
    const risky = paths.some((p) => latin1.includes(p[p.length - 1]!));
    return risky
      ? { source: { ...source, value: null }, redaction: 'value_withheld' }
      : { source, redaction: null };
  }
  let removed = false;
  for (const path of paths) removed = removePath(parsed, path) || removed;
  if (!removed) return { source, redaction: null };
  return {
    source: { ...source, value: Buffer.from(JSON.stringify(parsed), 'utf8') },
    redaction: 'fields_removed',
  };
}

/** The dead letter's attributes without those named `attributes.<name>` in the redacted fields. */
export function redactAttributes(
  attributes: Record<string, string>,
  fields: readonly string[] = [],
): Record<string, string> {
  const names = fields.filter((f) => f.startsWith('attributes.')).map((f) => f.slice('attributes.'.length));
  if (names.length === 0) return attributes;
  const kept = { ...attributes };
  for (const name of names) delete kept[name];
  return kept;
}

function removePath(object: Record<string, unknown>, path: string[]): boolean {
  const [head, ...rest] = path;
  if (head === undefined || !Object.hasOwn(object, head)) return false;
  if (rest.length === 0) {
    delete object[head];
    return true;
  }
  const child = object[head];
  return isRecord(child) ? removePath(child, rest) : false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
