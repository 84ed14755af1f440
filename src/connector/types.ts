/**
 * The connector's own vocabulary: the arrival event it consumes, where a record came from, a
 * document's identity on its output events, and dead letters. The ports through which a document
 * reaches the API, the blobs and Kafka are in `ports.ts`; the document state in
 * `state/document-state.ts`.
 */
import type { BlobRef, OpenedBlob } from '../blobs/index.js';
import type { DocumentArrived } from '../serde/input.js';
import type { DeadLetterStage } from '../serde/types.js';
import type { DeadLetterCode } from './outputs/dead-letter-catalogue.js';

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

/** The dead-letter event before serialisation. */
export interface DeadLetter {
  source: SourceRecord | null;
  event_id: string | null;
  submission_id: string | null;
  stage: DeadLetterStage;
  /** One of the catalogue's (`dead-letter-catalogue.ts`). */
  error_code: DeadLetterCode;
  message: string;
  http_status: number | null;
  attempts: number;
  attributes: Record<string, string>;
  /** The document's tenant when known (its event's, or its state's); absent: the default credentials. */
  tenant?: string | null;
}

/** Common identity of every output event of a document. */
export interface DocumentIdentity {
  submission_id: string;
  event_id: string;
  query_id: string | null;
  attributes: Record<string, string>;
  traceparent: string | null;
  /** The tenant whose application analyses it (`tenants/`); absent or null: the default credentials. */
  tenant?: string | null;
}
