/**
 * One document in flight on this instance: its latest state, what was published, and the blob held
 * open until the upload. `mode` says whether it is processed (state recorded at every step) or
 * replayed (a finished document's results emitted again, nothing recorded).
 */
import { awaitedResults, type AwaitedOverride } from './awaited.js';
import type { DocumentState } from './state/codec.js';
import type {
  ArrivalEvent,
  Awaitable,
  CreatedSubmission,
  DocumentIdentity,
  OpenedBlob,
  SourceRecord,
} from './types.js';

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
  constructor(
    public state: DocumentState,
    public readonly mode: 'process' | 'replay',
    public blob: OpenedBlob | null,
  ) {
    this.published = new Set(mode === 'replay' ? [] : state.published);
  }

  get identity(): DocumentIdentity {
    const s = this.state;
    return {
      submission_id: s.submission_id,
      event_id: s.event_id,
      query_id: s.query_id,
      attributes: s.attributes,
      traceparent: s.traceparent,
    };
  }

  /** The input record the document came from, rebuilt from its state for a dead letter. */
  get source(): SourceRecord {
    const s = this.state;
    return {
      topic: s.topic ?? '',
      partition: s.partition,
      offset: s.offset,
      key: s.input?.key ? Buffer.from(s.input.key, 'base64') : null,
      value: s.input?.value ? Buffer.from(s.input.value, 'base64') : null,
      traceparent: s.traceparent,
    };
  }

  /** Scheduler key of this document's job `what` (a result kind, `deadline` or `delete`). */
  key(what: string): string {
    return `${this.state.event_id}\u0000${what}`;
  }
}

/** The first state of a document whose submission was just created. */
export function createdState(
  source: SourceRecord,
  event: ArrivalEvent,
  created: CreatedSubmission,
  at: number,
  awaitedOverride: AwaitedOverride | undefined,
): DocumentState {
  return {
    v: 1,
    event_id: event.event_id,
    submission_id: created.submission_id,
    status: 'CREATED',
    topic: source.topic,
    input: { key: source.key?.toString('base64') ?? null, value: source.value?.toString('base64') ?? null },
    partition: source.partition,
    offset: source.offset,
    query_id: event.query_id,
    pipeline: event.pipeline_configuration,
    enable_decision: event.enable_decision,
    attributes: event.attributes,
    traceparent: source.traceparent,
    awaited: awaitedResults(event.pipeline_configuration, event.enable_decision, awaitedOverride),
    published: [],
    created_at: at,
    updated_at: at,
    pending: {
      blob: event.blob,
      upload_url: created.upload_url,
      characteristics_url: created.submission_characteristics_upload_url ?? null,
      characteristics: event.submission_characteristics,
    },
  };
}
