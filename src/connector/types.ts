/**
 * The connector's own vocabulary: the arrival event it consumes, the state it records per document,
 * and the narrow ports through which it reaches the API, the blobs and Kafka. The workflow depends
 * only on these, so it is tested in isolation and wired to the real modules in `connector.ts`.
 */
import type { PipelineConfiguration, SubmissionCharacteristics, SubmissionRequest } from '../api/schemas.js';
import type { BlobRef, OpenedBlob } from '../blobs/index.js';
import type { DocumentArrived } from '../serde/input.js';

export type { BlobRef, OpenedBlob };

/** Results a document can wait for, each published to its own topic. */
export const AWAITABLE = ['fraud', 'quality', 'classification', 'decision'] as const;
export type Awaitable = (typeof AWAITABLE)[number];

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

export type DocumentStatus = 'CREATED' | 'UPLOADED' | 'DONE' | 'FAILED';

/**
 * One document's durable progress, the value of the compacted state topic (key = event_id, partition =
 * the input partition). `pending` carries what is needed to finish the upload after a crash and is
 * dropped once the file is uploaded: it holds a pre-signed URL and the characteristics.
 */
export interface DocumentState {
  v: 1;
  event_id: string;
  submission_id: string;
  status: DocumentStatus;
  /** Input topic of the record (absent in states written before it was recorded). */
  topic?: string;
  /**
   * The input record's key and value (base64) while the document is unfinished, so a dead letter
   * raised after admission still carries the original bytes; dropped once the document is done.
   */
  input?: { key: string | null; value: string | null } | undefined;
  partition: number;
  offset: string;
  query_id: string | null;
  pipeline: PipelineConfiguration;
  enable_decision: boolean;
  attributes: Record<string, string>;
  traceparent: string | null;
  awaited: Awaitable[];
  published: Awaitable[];
  created_at: number;
  updated_at: number;
  error?: { stage: string; code: string; message: string } | undefined;
  pending?:
    | {
        blob: BlobRef;
        upload_url: string;
        characteristics_url: string | null;
        characteristics: SubmissionCharacteristics | null;
      }
    | undefined;
}

export interface BlobPort {
  resolve(ref: BlobRef): Promise<OpenedBlob>;
}

/** The dead-letter event before serialisation. */
export interface DeadLetter {
  source: SourceRecord | null;
  event_id: string | null;
  submission_id: string | null;
  stage: string;
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
  deadLetter(letter: DeadLetter): Promise<void>;
  /** Writes the state record to the state topic partition `state.partition`. Resolves once acknowledged. */
  writeState(state: DocumentState): Promise<void>;
}

export interface ResultExtra {
  report_url?: string | null;
  source?: 'poll' | 'webhook';
}

/** Thrown by `ApiPort.getResult` while a result is not final yet (404 before the verdict). */
export class ResultNotReady extends Error {
  override name = 'ResultNotReady';
}

/** What the workflow needs to know about any failure: the API client's errors carry these. */
export interface FailureInfo {
  status?: number | undefined;
  retriable?: boolean | undefined;
  code?: string | undefined;
  attempts?: number | undefined;
}

/** The subset of the API client the workflow uses (adapted in `api-port.ts`). */
export interface ApiPort {
  createSubmission(req: SubmissionRequest): Promise<{
    submission_id: string;
    upload_url: string;
    submission_characteristics_upload_url?: string | undefined;
  }>;
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
