/**
 * One document in flight on this instance: its latest durable state, its identity and input (held in
 * memory only: neither is written to the state topic), what was published, and the blob held open
 * until the upload. `mode` says whether it is processed (state recorded at every step) or replayed (a
 * finished document's results emitted again; only the replay generation is recorded).
 */
import { awaitedResults, type AwaitedOverride } from './awaited.js';
import type { FinishedEntry } from './state/partition-index.js';
import type { FinishedState, InputPointer, UnfinishedState } from './state/document-state.js';
import type {
  ArrivalEvent,
  Awaitable,
  BlobRef,
  CreatedSubmission,
  DocumentIdentity,
  OpenedBlob,
  SourceRecord,
} from './types.js';
import type { SubmissionCharacteristics } from '../api/schemas.js';

/** What the upload needs from the input event; dropped once the file is uploaded. */
interface DocumentInput {
  blob: BlobRef;
  characteristics: SubmissionCharacteristics | null;
}

export class Run {
  cancelled = false;
  /**
   * Set synchronously by the first caller that ends the document (every result published, or a
   * failure such as its deadline), so only one ends it and later steps record nothing.
   */
  finishing = false;
  readonly published: Set<Awaitable>;
  readonly attempts = new Map<Awaitable, number>();
  /** Results being published now: a second fetch of one (a poll and a webhook at once) is dropped. */
  readonly publishing = new Set<Awaitable>();
  /** A webhook delivery said the decision is ready: it is fetched now, polling or not. */
  decisionDelivered = false;
  /** When the document fails if its results are not all published (epoch ms). */
  deadlineAt = Infinity;
  uploadedAt = 0;
  /** A replay's generation (its marker's), recorded once every result was re-emitted. */
  replayGeneration = 0;
  /** When the document was created (replays: when the replay started); the deadline counts from it. */
  readonly createdAt: number;
  constructor(
    public state: UnfinishedState | FinishedState,
    public readonly mode: 'process' | 'replay',
    public readonly identity: DocumentIdentity,
    /** null once uploaded, or when a resumed document's input record is gone. */
    public input: DocumentInput | null,
    public blob: OpenedBlob | null,
    now: number,
  ) {
    this.published = new Set(mode === 'replay' ? [] : state.published);
    this.createdAt = 'created_at' in state ? state.created_at : now;
  }

  get eventId(): string {
    return this.state.event_id;
  }

  get pointer(): InputPointer {
    return this.state.input;
  }

  /** Scheduler key of this document's job `what` (a result kind, `deadline` or `delete`). */
  key(what: string): string {
    return `${this.state.event_id}\u0000${what}`;
  }
}

function pointerOf(source: SourceRecord): InputPointer {
  return { topic: source.topic, partition: source.partition, offset: source.offset };
}

export function identityOf(
  event: ArrivalEvent,
  source: SourceRecord,
  submissionId: string,
): DocumentIdentity {
  return {
    submission_id: submissionId,
    event_id: event.event_id,
    query_id: event.query_id,
    attributes: event.attributes,
    traceparent: source.traceparent,
  };
}

export function inputOf(event: ArrivalEvent): DocumentInput {
  return { blob: event.blob, characteristics: event.submission_characteristics };
}

/** The first state of a document whose submission was just created. */
export function createdState(
  source: SourceRecord,
  event: ArrivalEvent,
  created: CreatedSubmission,
  at: number,
  awaitedOverride: AwaitedOverride | undefined,
): UnfinishedState {
  return {
    v: 2,
    event_id: event.event_id,
    submission_id: created.submission_id,
    status: 'CREATED',
    input: pointerOf(source),
    awaited: awaitedResults(event.pipeline_configuration, event.enable_decision, awaitedOverride),
    published: [],
    created_at: at,
    updated_at: at,
    pending: {
      upload_url: created.upload_url,
      characteristics_url: created.submission_characteristics_upload_url ?? null,
      characteristics_pending: event.submission_characteristics !== null,
    },
  };
}

/** The finished state of a document, as recorded in the index, re-emitted from `source`. */
export function finishedOf(entry: FinishedEntry, source: SourceRecord): FinishedState {
  return {
    v: 2,
    event_id: entry.event_id,
    submission_id: entry.submission_id,
    status: entry.status,
    input: pointerOf(source),
    awaited: entry.awaited,
    published: entry.published,
    finished_at: entry.finished_at,
    generation: entry.generation,
  };
}
