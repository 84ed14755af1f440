/** What the engine and its lifecycle are given (ports, options) and report (events). */
import type { Logger } from '../observability/logger.js';
import type { PollScheduler } from '../util/scheduler.js';
import type { AwaitedOverride } from './awaited.js';
import type { DeadLetterStage } from './dead-letters.js';
import type { StatePort } from './state/writer.js';
import type { ApiPort, Awaitable, BlobPort, DocumentIdentity, InputPort, OutputPort } from './types.js';

export interface EngineOptions {
  pollInitialMs: number;
  pollMaxMs: number;
  deadlineMs: number;
  decisionPolling: boolean;
  deleteAfterPublish: boolean;
  attachReportUrl: boolean;
  awaitedOverride?: AwaitedOverride;
}

export interface EnginePorts {
  api: ApiPort;
  blobs: BlobPort;
  out: OutputPort;
  states: StatePort;
  inputs: InputPort;
  scheduler: PollScheduler;
  logger: Logger;
  /** Decision webhook deliveries recorded recently (any instance's receiver): their decision is ready. */
  deliveries?: { has(submissionId: string): boolean };
  now?: () => number;
  random?: () => number;
}

/** What the engine reports for metrics and the demo. */
export interface EngineEvents {
  onPublished?(kind: Awaitable, doc: DocumentIdentity, body: Record<string, unknown>): void;
  onFinished?(doc: FinishedDoc, outcome: 'done' | 'failed' | 'replayed'): void;
  onDeadLetter?(stage: DeadLetterStage, code: string): void;
  onStage?(stage: string, durationMs: number): void;
  /** A slot was released: the consumer may resume paused partitions. */
  onRoom?(): void;
}

/** A document that left the engine, as metrics see it. */
export interface FinishedDoc {
  event_id: string;
  submission_id: string;
  created_at: number;
}
