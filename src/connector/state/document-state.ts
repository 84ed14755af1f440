/**
 * The document state, version 2: what finishing, deduplicating and replaying a document need (the
 * value of the compacted state topic, key = event_id, partition = the input partition). Its binary
 * record is `record.ts`.
 */

/** Results a document can wait for; the order fixes the bits of the record. */
export const AWAITABLE = ['fraud', 'quality', 'classification', 'decision'] as const;
export type Awaitable = (typeof AWAITABLE)[number];

export interface InputPointer {
  topic: string;
  partition: number;
  /** The input record's offset (decimal string, as Kafka gives it). */
  offset: string;
}

interface StateCommon {
  v: 2;
  event_id: string;
  submission_id: string;
  input: InputPointer;
  awaited: Awaitable[];
  published: Awaitable[];
  /** Fingerprint of the event's blob (`blob-fingerprint.ts`); absent or 0 in states written before it. */
  blob?: number | undefined;
}

export interface UnfinishedState extends StateCommon {
  status: 'CREATED' | 'UPLOADED';
  created_at: number;
  updated_at: number;
  /**
   * The tenant the document was created for (`tenants/`): a resumed document goes on with its
   * application, in its cell. Absent: the default credentials. Not kept once it finished (a replay
   * takes it from the replayed record, the one the document was created from).
   */
  tenant?: string | undefined;
  /** Present only while the file (or the characteristics) is still to be uploaded. */
  pending?: PendingUpload | undefined;
  error?: { stage: string; code: string; message: string } | undefined;
}

export interface PendingUpload {
  /** Pre-signed URL of the file upload; null once the file is uploaded. */
  upload_url: string | null;
  /** Where the characteristics go; they themselves are read again from the input record. */
  characteristics_url: string | null;
  characteristics_pending: boolean;
}

export interface FinishedState extends StateCommon {
  status: 'DONE' | 'FAILED';
  finished_at: number;
  /**
   * The replay generation whose re-emission this document last made (0: none, only its first
   * emission). A redelivered input re-emits only for a newer replay marker (`ReplayMarker`).
   */
  generation?: number | undefined;
}

export type DocumentStateV2 = UnfinishedState | FinishedState;

export function isFinished(state: DocumentStateV2): state is FinishedState {
  return state.status === 'DONE' || state.status === 'FAILED';
}

/** The statuses in record order: the index is the status byte of a record. */
export const STATUSES = ['CREATED', 'UPLOADED', 'DONE', 'FAILED'] as const;

export function awaitableBits(list: readonly Awaitable[]): number {
  let bits = 0;
  for (const kind of list) bits |= 1 << AWAITABLE.indexOf(kind);
  return bits;
}

export function awaitableList(bits: number): Awaitable[] {
  return AWAITABLE.filter((_, i) => (bits & (1 << i)) !== 0);
}

/** A state record that cannot be read. The state reader skips it and says so, without its contents. */
export class StateRecordError extends Error {
  override name = 'StateRecordError';
}
