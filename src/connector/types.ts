/**
 * The connector's own vocabulary: the arrival event it consumes, dead letters, and the narrow ports
 * through which it reaches the API, the blobs and Kafka (the document state is in `state/record.ts`).
 * The workflow depends only on these, so it is tested in isolation and wired to the real modules in
 * `wiring.ts`.
 */
import type { SubmissionCharacteristics, SubmissionRequest } from '../api/schemas.js';
import type { BlobRef, OpenedBlob } from '../blobs/index.js';
import type { DocumentArrived } from '../serde/input.js';
import type { DeadLetterStage } from '../serde/types.js';
import type { Awaitable, InputPointer } from './state/document-state.js';

export type { BlobRef, OpenedBlob };

export { AWAITABLE, type Awaitable } from './state/document-state.js';

/** A validated arrival event (the event contract's input), as input decoding yields it. */
export type ArrivalEvent = DocumentArrived;

/** Where an input record came from, for dead letters and state. */
export interface SourceRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  traceparent: string | null;
}

/**
 * The input records of admitted documents, read back by their pointer: the state keeps no copy of
 * them. null when the record is no longer in the input topic (retention) or cannot be read back.
 */
export interface InputPort {
  /** The record and its event, for a document resumed after a crash or a rebalance. */
  recall(pointers: InputPointer[]): Promise<Array<{ source: SourceRecord; event: ArrivalEvent } | null>>;
  /** The record's bytes, for a dead letter raised after admission. */
  read(pointer: InputPointer): Promise<SourceRecord | null>;
}

export interface BlobPort {
  resolve(ref: BlobRef): Promise<OpenedBlob>;
}

/** The dead-letter event before serialisation. */
export interface DeadLetter {
  source: SourceRecord | null;
  event_id: string | null;
  submission_id: string | null;
  stage: DeadLetterStage;
  error_code: string;
  message: string;
  http_status: number | null;
  attempts: number;
  attributes: Record<string, string>;
}

/** Common identity of every output event of a document. */
export interface DocumentIdentity {
  submission_id: string;
  event_id: string;
  query_id: string | null;
  attributes: Record<string, string>;
  traceparent: string | null;
}

export interface OutputPort {
  /** Publishes one final result to its topic (key = submission id). Resolves once acknowledged. */
  publishResult(
    kind: Awaitable,
    doc: DocumentIdentity,
    body: Record<string, unknown>,
    extra?: ResultExtra,
  ): Promise<void>;
  /** `stateFollows`: the caller records the document's state next (exactly-once: one transaction). */
  deadLetter(letter: DeadLetter, options?: { stateFollows?: boolean }): Promise<void>;
}

export interface ResultExtra {
  report_url?: string | null;
  source?: 'poll' | 'webhook';
  /** The document's input partition: exactly-once writes the result in its transaction. */
  inputPartition?: number;
}

/** Thrown by `ApiPort.getResult` while a result is not final yet (404 before the verdict). */
export class ResultNotReady extends Error {
  override name = 'ResultNotReady';
}

export interface CreatedSubmission {
  submission_id: string;
  upload_url: string;
  submission_characteristics_upload_url?: string | undefined;
}

/** The subset of the API client the workflow uses (adapted in `api-port.ts`). */
export interface ApiPort {
  createSubmission(req: SubmissionRequest): Promise<CreatedSubmission>;
  upload(uploadUrl: string, blob: OpenedBlob, submissionId: string): Promise<void>;
  putCharacteristics(
    submissionId: string,
    url: string | null,
    body: SubmissionCharacteristics,
  ): Promise<void>;
  getResult(kind: Awaitable, submissionId: string): Promise<Record<string, unknown>>;
  getReportUrl(submissionId: string): Promise<string>;
  deleteSubmission(submissionId: string): Promise<void>;
}
