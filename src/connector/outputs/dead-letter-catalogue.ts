/**
 * Every stage and code a dead letter can carry, each declared once with its meaning (as fastify keeps
 * its error codes in one file). A dead letter's code comes from here and nowhere else: `deadLetterOf`
 * writes a failure's own code only when it is one of these, and callers name their fallback by these
 * names. docs/consuming.md's "Every stage and code" section is this catalogue, checked by
 * `dead-letter-catalogue.test.ts`; operators filter `docstream dlq list` by these names.
 */
import type { BlobErrorCode } from '../../blobs/errors.js';
import type { InputErrorCode } from '../../serde/input.js';
import type { DeadLetterStage } from '../../serde/types.js';

/** What each stage of a dead letter says went wrong (the Avro enum is `DEAD_LETTER_STAGES`). */
export const DEAD_LETTER_STAGE_MEANINGS = {
  decode: 'an input or feedback record’s bytes could not be read (JSON, Avro, the registry’s schema)',
  validate: 'an arrival event was read but breaks the event contract or a size limit',
  blob: 'the event’s file could not be opened or checked (confinement, size, sha256, transfer)',
  create: 'the API did not create the submission',
  upload: 'the file, or its resumption, did not reach the API',
  characteristics: 'the submission characteristics did not reach the API',
  poll: 'a result was not fetched, or not final by the deadline',
  decision: 'the Adaptive Decision did not arrive by the deadline',
  publish: 'a result could not be written to its topic',
  feedback: 'a feedback record could not be read or sent to the API',
  delete: 'a finished submission could not be deleted (`connector.deleteAfterPublish`)',
} as const satisfies Record<DeadLetterStage, string>;

/** Each code: its meaning and the stages it is met at. */
interface CodeEntry {
  stages: readonly DeadLetterStage[];
  meaning: string;
}

export const DEAD_LETTER_CODES = {
  // The input record (serde/input.ts).
  empty_value: { stages: ['decode', 'feedback'], meaning: 'the record has no value' },
  invalid_json: { stages: ['decode', 'feedback'], meaning: 'the value is not UTF-8 JSON' },
  invalid_avro: {
    stages: ['decode', 'feedback'],
    meaning: 'the value is Confluent wire format but not valid Avro of its schema',
  },
  unknown_schema: {
    stages: ['decode', 'feedback'],
    meaning: 'the schema id of the value is not in the registry',
  },
  schema_rejected: {
    stages: ['decode', 'feedback'],
    meaning: 'the registry refused the schema id, or it is not an Avro schema',
  },
  schema_invalid: {
    stages: ['validate', 'feedback'],
    meaning: 'the event breaks the event contract (the message names the field)',
  },
  characteristics_too_large: {
    stages: ['validate'],
    meaning: 'the serialised submission characteristics exceed their limit (the message names it)',
  },
  value_too_deep: {
    stages: ['decode', 'feedback'],
    meaning: 'the value (or the characteristics’ JSON text) nests deeper than 64 levels',
  },
  value_too_large: { stages: ['decode', 'feedback'], meaning: 'the value is larger than 4 MiB' },
  attributes_too_large: {
    stages: ['validate'],
    meaning: 'the attributes exceed `connector.maxAttributesBytes` (they are echoed into every output)',
  },
  event_id_reused: {
    stages: ['validate'],
    meaning:
      'a copy of an event already submitted points at another blob: not analysed (send it with `reprocess: true`, or under a new `event_id`)',
  },
  event_too_large: {
    stages: ['validate'],
    meaning: 'the document’s state record would not fit the state topic',
  },
  unknown_tenant: {
    stages: ['validate', 'create', 'upload', 'characteristics'],
    meaning:
      'the event’s tenant is not in the tenant directory (`tenants.directoryFile`): after `tenants.unknownGraceMs` for a new document, or removed while it was being submitted; re-drive it once the tenant is added',
  },
  tenant_mismatch: {
    stages: ['validate'],
    meaning: 'the event’s `tenant` field and its tenant header (`tenants.header`) name different tenants',
  },
  handler_error: {
    stages: ['decode', 'feedback'],
    meaning: 'handling the record failed in a way no retry can change (a fault of the record, or a bug)',
  },
  // The file (blobs/errors.ts).
  blob_not_allowed: { stages: ['blob'], meaning: 'the URL is outside what `blobs.*` allows' },
  blob_not_found: { stages: ['blob'], meaning: 'there is no file at the URL' },
  blob_too_large: { stages: ['blob'], meaning: 'the file is larger than `blobs.maxBytes`' },
  sha256_mismatch: { stages: ['blob'], meaning: 'the file’s sha256 is not the event’s `blob.sha256`' },
  blob_unreadable: { stages: ['blob'], meaning: 'the file could not be read' },
  blob_invalid_url: { stages: ['blob'], meaning: 'the URL is not a `file://`, `http(s)://` or `s3://` URL' },
  blob_timeout: { stages: ['blob'], meaning: 'the transfer took longer than `blobs.transferTimeoutMs`' },
  blob_too_slow: { stages: ['blob'], meaning: 'the transfer was slower than `blobs.minBytesPerSecond`' },
  blob_failed: {
    stages: ['blob'],
    meaning: 'a resumed document’s file could not be opened again, for no reason of the above',
  },
  // The API.
  api_error: { stages: ['create'], meaning: 'the API failed the call without an HTTP status' },
  characteristics_failed: {
    stages: ['characteristics'],
    meaning: 'sending the characteristics failed without an HTTP status',
  },
  upload_failed: { stages: ['upload'], meaning: 'the upload failed without an HTTP status' },
  input_gone: {
    stages: ['upload'],
    meaning: 'a resumed document’s input record left the input topic: its file is unknown',
  },
  poll_failed: { stages: ['poll'], meaning: 'fetching a result failed without an HTTP status' },
  deadline: {
    stages: ['blob', 'create', 'decision'],
    meaning:
      'by `connector.deadlineMs`: the blob store’s transient failure outlasted it (the last error and the tries named), the API did not accept the submission, or the decision never came',
  },
  deadline_exceeded: {
    stages: ['upload', 'poll'],
    meaning: 'by `connector.deadlineMs`: the file was not uploaded, or a result was not final (named)',
  },
  result_too_large: { stages: ['publish'], meaning: 'the result event exceeds its topic’s message size' },
  feedback_failed: { stages: ['feedback'], meaning: 'sending the feedback failed without an HTTP status' },
  delete_failed: { stages: ['delete'], meaning: 'deleting the submission failed without an HTTP status' },
} as const satisfies Record<string, CodeEntry>;

/** `api_<status>`: the API answered with an HTTP status no retry changes (the dead letter's `http_status`). */
export const API_STATUS_CODE = {
  pattern: 'api_<status>',
  stages: ['create', 'upload', 'characteristics', 'poll', 'feedback', 'delete'],
  meaning: 'the API answered with this HTTP status, and no retry can change it (e.g. `api_400`, `api_413`)',
} as const;

/**
 * A connection's own failure, as Node names it: a system error (`ECONNRESET`, `ETIMEDOUT`,
 * `ECONNREFUSED`, ...) or one of its HTTP stack (`ERR_*`, `HPE_*`); met when the API client gave up
 * on a call that never got an answer.
 */
export const CONNECTION_CODE = {
  pattern: 'E<NAME>, ERR_<NAME>, HPE_<NAME>',
  stages: ['create', 'upload', 'characteristics', 'poll', 'feedback', 'delete'],
  meaning:
    'the call got no HTTP answer, and Node named why (e.g. `ECONNRESET`, `ETIMEDOUT`, `ERR_STREAM_PREMATURE_CLOSE`)',
  test: /^(E[A-Z0-9]+|ERR_[A-Z0-9_]+|HPE_[A-Z0-9_]+)$/,
} as const;

export type CatalogueCode = keyof typeof DEAD_LETTER_CODES;
export type DeadLetterCode = CatalogueCode | `api_${number}` | `E${string}` | `HPE_${string}`;

/** The input's and the blobs' own codes are dead-letter codes: a new one fails to compile until it is here. */
const declared: Record<InputErrorCode | BlobErrorCode, CatalogueCode> = {
  empty_value: 'empty_value',
  invalid_json: 'invalid_json',
  invalid_avro: 'invalid_avro',
  unknown_schema: 'unknown_schema',
  schema_rejected: 'schema_rejected',
  schema_invalid: 'schema_invalid',
  characteristics_too_large: 'characteristics_too_large',
  value_too_deep: 'value_too_deep',
  value_too_large: 'value_too_large',
  blob_not_allowed: 'blob_not_allowed',
  blob_not_found: 'blob_not_found',
  blob_too_large: 'blob_too_large',
  sha256_mismatch: 'sha256_mismatch',
  blob_unreadable: 'blob_unreadable',
  blob_invalid_url: 'blob_invalid_url',
  blob_timeout: 'blob_timeout',
  blob_too_slow: 'blob_too_slow',
};
void declared;

/** True for a code the catalogue declares: one of `DEAD_LETTER_CODES`, or a connection's (`CONNECTION_CODE`). */
export function isDeadLetterCode(code: string): code is DeadLetterCode {
  return Object.hasOwn(DEAD_LETTER_CODES, code) || CONNECTION_CODE.test.test(code);
}

/** The code of a failure at `stage` that has no code or status of its own. */
export const FAILED_AT = {
  blob: 'blob_failed',
  characteristics: 'characteristics_failed',
  upload: 'upload_failed',
} as const satisfies Partial<Record<DeadLetterStage, CatalogueCode>>;

/** The catalogue as docs/consuming.md shows it (two tables). */
export function catalogueMarkdown(): string {
  const stages = Object.entries(DEAD_LETTER_STAGE_MEANINGS).map(
    ([stage, meaning]) => `| \`${stage}\` | ${meaning} |`,
  );
  const codes = Object.entries(DEAD_LETTER_CODES as Record<string, CodeEntry>).map(
    ([code, e]) => `| \`${code}\` | ${e.stages.map((s) => `\`${s}\``).join(', ')} | ${e.meaning} |`,
  );
  const family = (f: { pattern: string; stages: readonly string[]; meaning: string }) =>
    `| \`${f.pattern}\` | ${f.stages.map((s) => `\`${s}\``).join(', ')} | ${f.meaning} |`;
  return [
    '| stage | what went wrong |',
    '|---|---|',
    ...stages,
    '',
    '| code | stages | meaning |',
    '|---|---|---|',
    ...codes,
    family(API_STATUS_CODE),
    family(CONNECTION_CODE),
  ].join('\n');
}
