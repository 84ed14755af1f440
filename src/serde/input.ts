/**
 * Reading input values: `documents.arrived` (DocumentArrived) and `documents.feedback` (FeedbackEvent).
 *
 * A value is Avro in the Confluent wire format when it starts with the magic byte 0 (a JSON text
 * never does), and UTF-8 JSON otherwise. Either way it is validated against the event contract
 * and the outcome is a value, never an exception: bad data becomes `{ ok: false, code, message }`
 * for a DeadLetter event. Only a registry that cannot be reached throws (a RegistryError with
 * `retriable`), because then the data is not at fault and the record must be retried, not dropped.
 * Nothing recurses into a value before its size and depth are bounded (`json-bounds.ts`): a
 * deeply nested value becomes a dead letter (`value_too_deep`), not a stack overflow.
 */
import { z } from 'zod';
import {
  describeZodError,
  FeedbackRequest,
  LIMITS,
  PipelineConfiguration,
  SubmissionCharacteristics,
} from '../api/schemas.js';
import type { AvroSchemaName } from './avro-schemas.js';
import { jsonDepthProblem, MAX_INPUT_BYTES, sizeProblem, valueDepthProblem } from './json-bounds.js';
import { DecodeError, MAGIC_BYTE } from './registry.js';

/** What input decoding needs from the registry (an interface so unit tests need no server). */
export interface AvroDecoder {
  decode(buffer: Buffer, reader?: AvroSchemaName): Promise<unknown>;
}

export type InputErrorCode =
  | 'empty_value'
  | 'invalid_json'
  | 'invalid_avro'
  | 'unknown_schema'
  | 'schema_rejected'
  | 'schema_invalid'
  | 'characteristics_too_large'
  | 'value_too_deep'
  | 'value_too_large';

export type InputFormat = 'json' | 'avro';

export interface DocumentArrived {
  event_id: string;
  blob: { url: string; content_type: string | null; size_bytes: number | null; sha256: string | null };
  query_id: string | null;
  pipeline_configuration: PipelineConfiguration;
  enable_decision: boolean;
  submission_characteristics: SubmissionCharacteristics | null;
  attributes: Record<string, string>;
  reprocess: boolean;
  /** The tenant the document is analysed for (`tenants/`); absent: the default credentials. */
  tenant?: string;
}

interface FeedbackEvent {
  submission_id: string;
  feedback: FeedbackRequest;
  event_id: string | null;
  attributes: Record<string, string>;
}

export type InputResult<T> =
  | { ok: true; event: T; format: InputFormat }
  | {
      ok: false;
      code: InputErrorCode;
      message: string;
      format: InputFormat | null;
      /** Whatever could be read for correlation in the DeadLetter event. */
      event_id: string | null;
      attributes: Record<string, string>;
    };

interface InputOptions {
  /** Upper bound of the serialised submission characteristics; larger ones are rejected. */
  maxCharacteristicsBytes?: number;
  /** Upper bound of the record's value; larger ones are not read (`MAX_INPUT_BYTES`). */
  maxValueBytes?: number;
}

const DEFAULT_MAX_CHARACTERISTICS_BYTES = 256 * 1024;
/** Longest reason a decoding failure gives (dead letters and logs carry it). */
const MAX_MESSAGE = 2000;
export const EVENT_ID_MAX = 256;
/** A tenant's name, as the spec's tenant-management API allows it. */
export const TENANT_NAME = /^[a-z0-9]{1,61}$/;
export const BLOB_SCHEMES = ['file:', 'http:', 'https:', 's3:'] as const;

const BlobUrl = z.string().superRefine((value, ctx) => {
  const problem = blobUrlProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

function blobUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL (file://, http://, https:// or s3://bucket/key)';
  }
  if (!(BLOB_SCHEMES as readonly string[]).includes(url.protocol)) {
    return `scheme ${url.protocol.replace(/:$/, '')} is not allowed; use file, http, https or s3`;
  }
  if (url.protocol === 's3:' && (url.hostname === '' || url.pathname.length <= 1)) {
    return 'must name a bucket and a key: s3://bucket/key';
  }
  if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname === '') {
    return 'must name a host';
  }
  if (url.protocol === 'file:' && url.pathname.length <= 1) return 'must name a file';
  return null;
}

const Attributes = z.record(z.string(), z.string());

/**
 * C0/C1 control characters and lone UTF-16 surrogates: an idempotency key that holds them breaks
 * log lines, headers and any store that re-encodes it as UTF-8 (a lone surrogate becomes U+FFFD, so
 * two different keys could meet), so they are refused rather than carried along.
 */
const CONTROL_OR_LONE_SURROGATE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a text cannot be an event id's characters (control characters, lone surrogates), or null. */
export function eventIdProblem(value: string): string | null {
  const found = CONTROL_OR_LONE_SURROGATE.exec(value);
  if (found === null) return null;
  const unit = found[0].charCodeAt(0);
  const code = unit.toString(16).toUpperCase().padStart(4, '0');
  return unit >= 0xd800 && unit <= 0xdfff
    ? `must not contain a lone surrogate (U+${code} at position ${found.index})`
    : `must not contain control characters (U+${code} at position ${found.index})`;
}

function eventIdCharacters(value: string, ctx: z.RefinementCtx): void {
  const problem = eventIdProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
}

/** Unknown top-level fields are ignored (a newer producer may send more); known ones are checked. */
const DocumentArrivedInput = z.looseObject({
  event_id: z.string().min(1).max(EVENT_ID_MAX).superRefine(eventIdCharacters),
  blob: z.looseObject({
    url: BlobUrl,
    content_type: z.string().max(LIMITS.mimeType).nullable().optional(),
    size_bytes: z.number().int().nonnegative().nullable().optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal digits')
      .nullable()
      .optional(),
  }),
  query_id: z.string().max(LIMITS.queryIdRequest).nullable().optional(),
  pipeline_configuration: PipelineConfiguration.optional(),
  enable_decision: z.boolean().optional(),
  submission_characteristics: SubmissionCharacteristics.nullable().optional(),
  attributes: Attributes.optional(),
  reprocess: z.boolean().optional(),
  tenant: z
    .string()
    .regex(TENANT_NAME, 'must be a tenant name: 1..61 characters a-z and 0-9')
    .nullable()
    .optional(),
});

const FeedbackInput = z.looseObject({
  submission_id: z.string().min(LIMITS.submissionIdMin).max(LIMITS.submissionIdMax),
  feedback: FeedbackRequest,
  event_id: z.string().max(EVENT_ID_MAX).superRefine(eventIdCharacters).nullable().optional(),
  attributes: Attributes.optional(),
});

type Raw = { ok: true; value: unknown; format: InputFormat } | Extract<InputResult<never>, { ok: false }>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

async function readRaw(
  buffer: Buffer | null,
  decoder: AvroDecoder,
  reader: AvroSchemaName,
  maxBytes = MAX_INPUT_BYTES,
): Promise<Raw> {
  if (buffer === null || buffer.length === 0) {
    return failure('empty_value', 'the record has no value', null, undefined);
  }
  const format: InputFormat = buffer[0] === MAGIC_BYTE ? 'avro' : 'json';
  const tooLarge = sizeProblem(buffer.length, 'the value', maxBytes);
  if (tooLarge) return failure(tooLarge.code, tooLarge.message, format, undefined);
  if (format === 'avro') {
    let value: unknown;
    try {
      value = await decoder.decode(buffer, reader);
    } catch (error) {
      if (error instanceof DecodeError) return failure(error.code, error.message, 'avro', undefined);
      throw error;
    }
    // The bounded reader (`avro-bounds.ts`) allows deep values of recursive writer schemas.
    const tooDeep = valueDepthProblem(value);
    if (tooDeep) return failure(tooDeep.code, tooDeep.message, 'avro', undefined);
    return { ok: true, value, format };
  }
  let text: string;
  try {
    text = utf8.decode(buffer);
  } catch {
    return failure(
      'invalid_json',
      'the value is neither Avro (magic byte 0) nor UTF-8 text',
      null,
      undefined,
    );
  }
  const tooDeep = jsonDepthProblem(text);
  if (tooDeep) return failure(tooDeep.code, tooDeep.message, 'json', parsedForCorrelation(text));
  try {
    return { ok: true, value: JSON.parse(text) as unknown, format: 'json' };
  } catch (error) {
    return failure(
      'invalid_json',
      `the value is not valid JSON: ${(error as Error).message}`,
      'json',
      undefined,
    );
  }
}

/**
 * A too deep text parsed only to read its top-level `event_id` and `attributes` for the dead letter:
 * V8's JSON.parse does not recurse, and `failure` reads no deeper than those two fields.
 */
function parsedForCorrelation(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function failure(
  code: InputErrorCode,
  message: string,
  format: InputFormat | null,
  value: unknown,
): Extract<InputResult<never>, { ok: false }> {
  const object = isObject(value) ? value : {};
  const eventId =
    typeof object.event_id === 'string' &&
    object.event_id.length > 0 &&
    object.event_id.length <= EVENT_ID_MAX &&
    eventIdProblem(object.event_id) === null
      ? object.event_id
      : null;
  const attributes = Attributes.safeParse(object.attributes);
  return {
    ok: false,
    code,
    // A wide value (thousands of unknown keys) would make a message as large as the value itself.
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}… (cut)` : message,
    format,
    event_id: eventId,
    attributes: attributes.success ? attributes.data : {},
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/** Decodes and validates a `documents.arrived` value. */
export async function decodeDocumentArrived(
  buffer: Buffer | null,
  decoder: AvroDecoder,
  options: InputOptions = {},
): Promise<InputResult<DocumentArrived>> {
  const raw = await readRaw(buffer, decoder, 'DocumentArrived', options.maxValueBytes);
  if (!raw.ok) return raw;
  const { value, format } = raw;
  if (!isObject(value)) {
    return failure('schema_invalid', `the value must be a JSON object, not ${kindOf(value)}`, format, value);
  }
  const maxBytes = options.maxCharacteristicsBytes ?? DEFAULT_MAX_CHARACTERISTICS_BYTES;
  const characteristics = value.submission_characteristics;
  // Avro carries the characteristics as a JSON string (see DocumentArrived.avsc); JSON as an object.
  const serialised =
    typeof characteristics === 'string'
      ? characteristics
      : isObject(characteristics)
        ? JSON.stringify(characteristics)
        : null;
  if (serialised !== null && Buffer.byteLength(serialised) > maxBytes) {
    return failure(
      'characteristics_too_large',
      `submission_characteristics: ${Buffer.byteLength(serialised)} bytes exceed the limit of ${maxBytes}`,
      format,
      value,
    );
  }
  let candidate: Record<string, unknown> = value;
  if (format === 'avro' && typeof characteristics === 'string') {
    const tooDeep = jsonDepthProblem(characteristics, 'submission_characteristics');
    if (tooDeep) return failure(tooDeep.code, tooDeep.message, format, value);
    try {
      candidate = { ...value, submission_characteristics: JSON.parse(characteristics) as unknown };
    } catch {
      return failure('schema_invalid', 'submission_characteristics: not a JSON text', format, value);
    }
  }
  const parsed = DocumentArrivedInput.safeParse(candidate);
  if (!parsed.success) {
    return failure('schema_invalid', describeZodError(parsed.error), format, value);
  }
  const input = parsed.data;
  return {
    ok: true,
    format,
    event: {
      event_id: input.event_id,
      blob: {
        url: input.blob.url,
        content_type: input.blob.content_type ?? null,
        size_bytes: input.blob.size_bytes ?? null,
        sha256: input.blob.sha256?.toLowerCase() ?? null,
      },
      query_id: input.query_id ?? null,
      pipeline_configuration: input.pipeline_configuration ?? 'FRAUD_ONLY',
      enable_decision: input.enable_decision ?? false,
      submission_characteristics: input.submission_characteristics ?? null,
      attributes: input.attributes ?? {},
      reprocess: input.reprocess ?? false,
      ...(typeof input.tenant === 'string' ? { tenant: input.tenant } : {}),
    },
  };
}

/** Decodes and validates a `documents.feedback` value: `{ submission_id, feedback: {...} }`. */
export async function decodeFeedbackEvent(
  buffer: Buffer | null,
  decoder: AvroDecoder,
  options: Pick<InputOptions, 'maxValueBytes'> = {},
): Promise<InputResult<FeedbackEvent>> {
  const raw = await readRaw(buffer, decoder, 'FeedbackEvent', options.maxValueBytes);
  if (!raw.ok) return raw;
  const { value, format } = raw;
  if (!isObject(value)) {
    return failure('schema_invalid', `the value must be a JSON object, not ${kindOf(value)}`, format, value);
  }
  const parsed = FeedbackInput.safeParse(value);
  if (!parsed.success) return failure('schema_invalid', describeZodError(parsed.error), format, value);
  const { submission_id, feedback, event_id, attributes } = parsed.data;
  return {
    ok: true,
    format,
    event: { submission_id, feedback, event_id: event_id ?? null, attributes: attributes ?? {} },
  };
}
