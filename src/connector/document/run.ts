/**
 * One document in flight on this instance: its latest durable state, its identity and input (held in
 * memory only: neither is written to the state topic), what was published, and the blob held open
 * until the upload. `mode` says whether it is processed (state recorded at every step) or replayed (a
 * finished document's results emitted again; only the replay generation is recorded). Also the
 * states a document passes through (created, finished) and which results it awaits.
 */
import type { DocumentTrace } from '../../observability/tracing.js';
import type { SubmissionCharacteristics } from '../../api/schemas.js';
import { awaitedResults, type AwaitedOverride } from './awaited-results.js';
import type { CreatedSubmission } from './ports.js';
import type { ResultTraits } from './poll-timing.js';
import { blobFingerprint } from '../state/blob-fingerprint.js';
import type { FinishedEntry } from '../state/partition-index.js';
import type { FinishedState, InputPointer, UnfinishedState } from '../state/document-state.js';
import {
  type ArrivalEvent,
  type Awaitable,
  type BlobRef,
  type DocumentIdentity,
  type OpenedBlob,
  type SourceRecord,
} from '../types.js';

/** What the upload needs from the input event; dropped once the file is uploaded. */
interface DocumentInput {
  blob: BlobRef;
  characteristics: SubmissionCharacteristics | null;
}

/**
 * Where a document's life on this instance is. `running`: its steps go on. `finishing`: the first
 * caller that ends it (every result published, or a failure such as its deadline) moved it here
 * synchronously, so only one ends it and later steps record nothing. `ended`: it left, done or failed.
 * `stopped` (the instance stops) and `revoked` (its partition has a new owner already, so nothing
 * more of it is recorded here): no new step starts, and it does not end here.
 */
export type RunPhase = 'running' | 'finishing' | 'ended' | 'stopped' | 'revoked';

/** The moves a document may make; any other is a bug, refused by `transitionTo`. */
const MOVES: Record<RunPhase, readonly RunPhase[]> = {
  running: ['finishing', 'stopped', 'revoked'],
  // Stopped or revoked while its end is being recorded: the end's state write gives up.
  finishing: ['ended', 'stopped', 'revoked'],
  ended: [],
  stopped: [],
  revoked: [],
};

export class IllegalTransition extends Error {
  constructor(
    readonly from: RunPhase,
    readonly to: RunPhase,
  ) {
    super(`a document ${from} cannot become ${to}`);
    this.name = 'IllegalTransition';
  }
}

export class Run {
  private current: RunPhase = 'running';
  /** An end began (it went through `finishing`), whether it then ended or was stopped or revoked. */
  private endBegun = false;
  readonly published: Set<Awaitable>;
  readonly attempts = new Map<Awaitable, number>();
  /** Results being published now: a second fetch of one (a poll and a webhook at once) is dropped. */
  readonly publishing = new Set<Awaitable>();
  /** Results being fetched now: one fetched waits for these before it is published (`document-life`). */
  readonly fetching = new Map<Awaitable, Promise<unknown>>();
  /**
   * When each result was last found not ready (ms after the upload; made on the first such poll):
   * with the poll that finds it, the interval the poll schedule learns from.
   */
  notReadyAt: Map<Awaitable, number> | undefined;
  /** Polls placed early for freshness (spare): they go only while the API has spare capacity. */
  spare: Set<Awaitable> | undefined;
  /** A webhook delivery said the decision is ready: it is fetched now, polling or not. */
  decisionDelivered = false;
  /** Tenant ids of the deliveries refused for this document (not its tenant's): each is logged once. */
  refusedTenantIds: Set<string> | undefined;
  /** When the document fails if its results are not all published (epoch ms). */
  deadlineAt = Infinity;
  uploadedAt = 0;
  /** The upload was made by this run (`uploadedAt` is its time): its polls teach the schedule. */
  uploadedHere = false;
  /**
   * What the poll schedule learns this document's processing times by besides the result's kind
   * (`poll-timing.ts`): its pipeline, from the input event, and its file's size, from the upload
   * made here. In memory only; a document resumed without its input event has neither.
   */
  readonly traits: ResultTraits = {};
  /** A resumed document's blob store answered with a transient failure: how often, and its last error (for the dead letter). */
  blobRetries: { tries: number; last: string } | null = null;
  /** A replay's generation (its marker's), recorded once every result was re-emitted. */
  replayGeneration = 0;
  /** Its trace (`observability/tracing.ts`); unset until the engine traces it. */
  trace: DocumentTrace | undefined;
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

  /** A document admitted or resumed from its input event (the input is kept while the upload is pending). */
  static process(state: UnfinishedState, event: ArrivalEvent, source: SourceRecord, now: number): Run {
    const input = state.status === 'CREATED' ? inputOf(event) : null;
    // The state's tenant, not the event's: a resumed document goes on where it was created.
    const identity = identityOf(event, source, state.submission_id, state.tenant);
    const run = new Run(state, 'process', identity, input, null, now);
    run.traits.pipeline = event.pipeline_configuration;
    return run;
  }

  get phase(): RunPhase {
    return this.current;
  }

  /** Moves the document to `next`; throws IllegalTransition for a move `MOVES` does not allow. */
  transitionTo(next: RunPhase): void {
    if (!MOVES[this.current].includes(next)) throw new IllegalTransition(this.current, next);
    this.current = next;
    if (next === 'finishing') this.endBegun = true;
  }

  /** The question every step asks before it goes on: is the document still running here? */
  get running(): boolean {
    return this.current === 'running';
  }

  /** Stopped or revoked: it does not end here; its next owner resumes it from the last recorded state. */
  get cancelled(): boolean {
    return this.current === 'stopped' || this.current === 'revoked';
  }

  /** Its end began here (a DONE or FAILED state is, or is being, recorded): nothing else is recorded. */
  get endStarted(): boolean {
    return this.endBegun;
  }

  get eventId(): string {
    return this.state.event_id;
  }

  get pointer(): InputPointer {
    return this.state.input;
  }

  get isComplete(): boolean {
    return this.state.awaited.every((k) => this.published.has(k));
  }

  /** Scheduler key of this document's job `what` (a result kind, `deadline`, `upload` or `delete`). */
  key(what: string): string {
    return `${this.state.event_id}\u0000${what}`;
  }

  /** What a dead letter of this document names. */
  subject(): {
    event_id: string;
    submission_id: string;
    attributes: Record<string, string>;
    tenant?: string | null;
  } {
    const subject = {
      event_id: this.eventId,
      submission_id: this.state.submission_id,
      attributes: this.identity.attributes,
    };
    return this.identity.tenant ? { ...subject, tenant: this.identity.tenant } : subject;
  }

  /** The document as metrics see it once it leaves. */
  summary(): { event_id: string; submission_id: string; created_at: number } {
    return { event_id: this.eventId, submission_id: this.state.submission_id, created_at: this.createdAt };
  }

  /** Its finished state: only what deduplication and replay need (`state/record.ts`). */
  finished(status: 'DONE' | 'FAILED', at: number): FinishedState {
    const s = this.state;
    return {
      v: 2,
      event_id: s.event_id,
      submission_id: s.submission_id,
      status,
      input: s.input,
      awaited: s.awaited,
      published: [...this.published],
      finished_at: at,
      ...(s.blob ? { blob: s.blob } : {}),
    };
  }
}

function pointerOf(source: SourceRecord): InputPointer {
  return { topic: source.topic, partition: source.partition, offset: source.offset };
}

/** `tenant`: the document's (its state's); the event's when not given (a replay, whose record is the original). */
export function identityOf(
  event: ArrivalEvent,
  source: SourceRecord,
  submissionId: string,
  tenant: string | undefined = event.tenant,
): DocumentIdentity {
  const identity: DocumentIdentity = {
    submission_id: submissionId,
    event_id: event.event_id,
    query_id: event.query_id,
    attributes: event.attributes,
    traceparent: source.traceparent,
  };
  if (tenant !== undefined) identity.tenant = tenant;
  return identity;
}

function inputOf(event: ArrivalEvent): DocumentInput {
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
    blob: blobFingerprint(event.blob),
    ...(event.tenant !== undefined ? { tenant: event.tenant } : {}),
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
    ...(entry.blob ? { blob: entry.blob } : {}),
  };
}
