/**
 * The one definition of a document's durable progress: the value of the compacted state topic
 * (JSON, key = event_id, partition = the input partition), and its encoding. Nothing else writes or
 * parses these bytes.
 */
import type { PipelineConfiguration, SubmissionCharacteristics } from '../../api/schemas.js';
import type { BlobRef } from '../../blobs/index.js';

export type DocumentStatus = 'CREATED' | 'UPLOADED' | 'DONE' | 'FAILED';

/**
 * One document's durable progress, the value of the compacted state topic (key = event_id, partition =
 * the input partition). `pending` carries what is needed to finish the upload after a crash and is
 * dropped once the file is uploaded: it holds a pre-signed URL and the characteristics.
 */
/** Results a document can wait for, each published to its own topic. */
export const AWAITABLE = ['fraud', 'quality', 'classification', 'decision'] as const;
export type Awaitable = (typeof AWAITABLE)[number];

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

/** The statuses of a document not finished yet: resumed when its partition is assigned. */
export function isUnfinished(state: DocumentState): boolean {
  return state.status === 'CREATED' || state.status === 'UPLOADED';
}

export function encodeState(state: DocumentState): Buffer {
  return Buffer.from(JSON.stringify(state), 'utf8');
}

/** The state in a record value, or null when it is not one this version understands. */
export function decodeState(value: Buffer): DocumentState | null {
  const parsed = JSON.parse(value.toString('utf8')) as DocumentState;
  return parsed && parsed.v === 1 && typeof parsed.event_id === 'string' ? parsed : null;
}
