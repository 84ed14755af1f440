/**
 * What one document's life (`document-life.ts`) reaches outside itself, and nothing more:
 * - over HTTP, the API (`ApiPort`, adapted from the client in `api-port.ts`) and the blobs
 *   (`BlobPort`, `../blobs/`);
 * - in Kafka, its results and dead letters (`OutputPort`, `output.ts`), its state (`StatePort`,
 *   `state/writer.ts`) and its input record read back by pointer (`InputPort`, `inputs.ts`);
 * - the poll scheduler and the clock.
 * The life depends only on these, so it is tested in isolation (`engine.test.ts`) and wired to the
 * real modules in `wiring.ts`. Also here: the options it runs by and the events it reports.
 */
import type { DocumentTraces } from '../../observability/tracing.js';
import type { SubmissionCharacteristics, SubmissionRequest } from '../../api/schemas.js';
import type { Logger } from '../../observability/logger.js';
import type { PollScheduler } from '../../util/scheduler.js';
import type { DeadLetterStage } from '../outputs/dead-letters.js';
import type { AwaitedOverride } from './awaited-results.js';
import type { PollBudget } from './poll-timing.js';
import type { OutputPort } from '../outputs/output-port.js';
import type { StatePort } from '../state/writer.js';
import type { InputPointer } from '../state/document-state.js';
import type {
  ArrivalEvent,
  Awaitable,
  BlobRef,
  DocumentIdentity,
  OpenedBlob,
  SourceRecord,
} from '../types.js';

// ---- HTTP: the API and the blobs ----

export interface CreatedSubmission {
  submission_id: string;
  upload_url: string;
  submission_characteristics_upload_url?: string | undefined;
}

/** The subset of the API client a document's life uses (adapted in `api-port.ts`). */
export interface ApiPort {
  /** `beforeSend` runs right before each attempt leaves; what it throws ends the call unsent. */
  createSubmission(
    req: SubmissionRequest,
    options?: { beforeSend?: () => void; onLimited?: () => void },
  ): Promise<CreatedSubmission>;
  upload(uploadUrl: string, blob: OpenedBlob, submissionId: string): Promise<void>;
  putCharacteristics(
    submissionId: string,
    url: string | null,
    body: SubmissionCharacteristics,
  ): Promise<void>;
  /** `spare`: a poll placed early for freshness, which waits behind creates at the limiter. */
  getResult(
    kind: Awaitable,
    submissionId: string,
    call?: { spare?: boolean },
  ): Promise<Record<string, unknown>>;
  getReportUrl(submissionId: string): Promise<string>;
  deleteSubmission(submissionId: string): Promise<void>;
}

/** Thrown by `ApiPort.getResult` while a result is not final yet (404 before the verdict). */
export class ResultNotReady extends Error {
  override name = 'ResultNotReady';
}

/**
 * The tenants this deployment serves (`../../tenants/`): whether the directory knows a tenant now,
 * and the API of its application (its cell, its token), undefined when it does not.
 */
export interface TenantPorts {
  known(tenant: string): boolean;
  api(tenant: string): ApiPort | undefined;
  /** The API's id of the tenant (the directory's `tenantId`, what webhook deliveries name); null when not given. */
  tenantId?(tenant: string): string | null;
}

/** A call for a tenant the directory does not know (now): transient, the tenant may be added back. */
export class UnknownTenantError extends Error {
  override name = 'UnknownTenantError';
  readonly code = 'unknown_tenant';
  readonly retriable = true;
  constructor(readonly tenant: string) {
    super(`tenant ${tenant} is not in the tenant directory (tenants.directoryFile)`);
  }
}

export interface BlobPort {
  resolve(ref: BlobRef): Promise<OpenedBlob>;
}

// ---- Kafka: results and dead letters, the state (`../outputs/output-port.ts`, `../state/writer.ts`), the input read back ----

export type { OutputPort, ResultExtra } from '../outputs/output-port.js';
export type { StatePort } from '../state/writer.js';

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

// ---- all of them, the options and the events ----

export interface EnginePorts {
  /** The API of the default credentials (`api.*`): documents without a tenant. */
  api: ApiPort;
  /** The tenant directory's applications; absent: no directory, every tenant is unknown. */
  tenants?: TenantPorts;
  blobs: BlobPort;
  out: OutputPort;
  states: StatePort;
  inputs: InputPort;
  scheduler: PollScheduler;
  logger: Logger;
  /** What the API's rate limiter has free: polls spend it for freshness (`poll-timing.ts`). */
  budget?: PollBudget;
  /**
   * Decision webhook deliveries recorded recently (any instance's receiver): their decision is ready.
   * The tenant ids they named (null: none); undefined when there was none.
   */
  deliveries?: { tenantIdsOf(submissionId: string): ReadonlyArray<string | null> | undefined };
  /** Documents' traces (`observability/tracing.ts`); absent: not traced. */
  traces?: DocumentTraces;
  now?: () => number;
  random?: () => number;
}

export interface EngineOptions {
  pollInitialMs: number;
  pollMaxMs: number;
  deadlineMs: number;
  decisionPolling: boolean;
  deleteAfterPublish: boolean;
  attachReportUrl: boolean;
  awaitedOverride?: AwaitedOverride;
  /** How long a new document of a tenant the directory does not know waits for it (default 0). */
  unknownTenantGraceMs?: number;
  /** The output topics that traces name (`send <topic>`). */
  traceTopics?: Record<Awaitable | 'dlq', string>;
  /** With a tenant directory: each tenant's share of the in-flight slots (`tenant-shares.ts`). */
  tenantShares?: { maxInFlight: number; share: number; maxWaiting: number };
}

/** What an admission tells the consumer while it runs. */
export interface AdmissionHooks {
  /**
   * It waits for what no batch should wait for: its tenant's share of the slots, or its
   * application's rate limit. The consumer need not hold the batch for it (`connector.admissionWaitMs`).
   */
  waiting(): void;
}

/** What the engine reports for metrics and the demo. */
export interface EngineEvents {
  onPublished?(kind: Awaitable, doc: DocumentIdentity, body: Record<string, unknown>): void;
  onFinished?(doc: FinishedDoc, outcome: 'done' | 'failed' | 'replayed'): void;
  onDeadLetter?(stage: DeadLetterStage, code: string): void;
  /** A webhook delivery was not acted on for a document (once per delivery and document). */
  onDeliveryRefused?(reason: 'tenant_mismatch'): void;
  onStage?(stage: string, durationMs: number): void;
  /** Submissions created but not recorded before their partition was released: left empty. */
  onSubmissionsLeftEmpty?(count: number): void;
}

/** A document that left the engine, as metrics see it. */
export interface FinishedDoc {
  event_id: string;
  submission_id: string;
  created_at: number;
}
