/**
 * Everything that happens to an admitted document in the background: upload, polling each awaited
 * result, publishing it, recording progress, finishing (or failing into a dead letter) and deleting
 * the submission. The engine (`engine.ts`) decides which documents run; this module moves one along.
 */
import type { Logger } from '../observability/logger.js';
import type { PollScheduler } from '../util/scheduler.js';
import { isMessageTooLarge } from '../kafka/errors.js';
import { backoffDelay } from '../util/backoff.js';
import type { AwaitedOverride } from './awaited.js';
import {
  deadLetterOf,
  failureOf,
  type DeadLetterStage,
  type LetterContext,
  type LetterSubject,
} from './dead-letters.js';
import { ReadinessEstimator } from './readiness.js';
import type { Run } from './run.js';
import type { FinishedState, UnfinishedState } from './state/record.js';
import type { StatePort } from './state/writer.js';
import {
  ResultNotReady,
  type ApiPort,
  type Awaitable,
  type BlobPort,
  type DeadLetter,
  type DocumentIdentity,
  type InputPort,
  type OutputPort,
  type SourceRecord,
} from './types.js';

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

export class Lifecycle {
  private readonly estimators = new Map<Awaitable, ReadinessEstimator>();
  private readonly tasks = new Set<Promise<unknown>>();
  readonly now: () => number;
  private readonly random: () => number;

  constructor(
    private readonly ports: EnginePorts,
    private readonly options: EngineOptions,
    private readonly events: EngineEvents,
    /** Takes a run out of the engine (finished, failed, or cancelled). */
    private readonly release: (run: Run, cancelled: boolean) => void,
  ) {
    this.now = ports.now ?? Date.now;
    this.random = ports.random ?? Math.random;
  }

  /** Runs a background step; its unexpected failure is logged, and `settle` waits for it. */
  track(p: Promise<unknown>): void {
    const guarded = p.catch((err: unknown) => this.ports.logger.error({ err }, 'unexpected connector error'));
    this.tasks.add(guarded);
    void guarded.finally(() => this.tasks.delete(guarded));
  }

  /** Resolves when every step in progress settled, or after `timeoutMs`. */
  async settle(timeoutMs: number): Promise<void> {
    const settle = Promise.allSettled([...this.tasks]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settle, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** Writes the dead letter of a failure and counts it. */
  async deadLetter(err: unknown, subject: LetterSubject, context: LetterContext): Promise<DeadLetter> {
    const letter = deadLetterOf(err, subject, context);
    await this.ports.out.deadLetter(letter);
    this.events.onDeadLetter?.(context.stage, letter.error_code);
    return letter;
  }

  async advance(run: Run): Promise<void> {
    if (run.state.status === 'CREATED') {
      const ok = await this.upload(run);
      if (!ok) return;
    }
    if (run.cancelled) return;
    run.uploadedAt ||= this.now();
    for (const kind of run.state.awaited) {
      if (run.published.has(kind)) continue;
      if (kind === 'decision' && run.mode === 'process' && !this.options.decisionPolling) continue;
      this.schedulePoll(run, kind, 0);
    }
    await this.maybeFinish(run);
  }

  async markPublished(run: Run, kind: Awaitable): Promise<void> {
    run.published.add(kind);
    const s = run.state;
    if (s.status === 'CREATED' || s.status === 'UPLOADED')
      run.state = { ...s, published: [...run.published], updated_at: this.now() };
    if (!this.isComplete(run)) await this.record(run);
    await this.maybeFinish(run);
  }

  /**
   * Writes the run's latest state, retrying until Kafka acknowledges it (e.g. through a broker
   * restart): a background step that gave up here would leave the document in flight forever.
   */
  private async record(run: Run): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.ports.states.writeState(run.state);
        return;
      } catch (err) {
        // A revoked or stopped run: the next owner resumes from the last state that was recorded.
        if (run.cancelled) return;
        this.ports.logger.warn(
          { event_id: run.state.event_id, attempt, err: failureOf(err).message },
          'recording state failed; retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, this.delay(attempt, this.options.pollInitialMs)));
      }
    }
  }

  private delay(attempt: number, initialMs: number): number {
    return backoffDelay(attempt, { initialMs, maxMs: this.options.pollMaxMs }, this.random);
  }

  private async upload(run: Run): Promise<boolean> {
    const s = run.state as UnfinishedState;
    const pending = s.pending;
    if (!pending) return true;
    const started = this.now();
    let stage: DeadLetterStage = 'blob';
    const input = run.input;
    if (!input) {
      // Resumed, but its input record left the input topic: the blob and characteristics are unknown.
      const message = `input record ${s.input.topic}[${s.input.partition}]@${s.input.offset} is gone; the upload cannot be resumed`;
      await this.fail(run, { code: 'input_gone', message }, 'upload', 'input_gone');
      return false;
    }
    try {
      run.blob ??= await this.ports.blobs.resolve(input.blob);
      if (pending.characteristics_pending && input.characteristics) {
        stage = 'characteristics';
        await this.ports.api.putCharacteristics(
          s.submission_id,
          pending.characteristics_url,
          input.characteristics,
        );
      }
      stage = 'upload';
      if (pending.upload_url) await this.ports.api.upload(pending.upload_url, run.blob, s.submission_id);
    } catch (err) {
      // A resumed upload that the server already has (409) is done, not failed.
      if (!(stage === 'upload' && failureOf(err).status === 409)) {
        await run.blob?.cleanup();
        await this.fail(run, err, stage, `${stage}_failed`);
        return false;
      }
    }
    await run.blob?.cleanup();
    run.blob = null;
    this.events.onStage?.('upload', this.now() - started);
    if (run.cancelled) return false;
    run.uploadedAt = this.now();
    run.input = null;
    run.state = { ...s, status: 'UPLOADED', pending: undefined, updated_at: this.now() };
    await this.record(run);
    return true;
  }

  private estimator(kind: Awaitable): ReadinessEstimator {
    let e = this.estimators.get(kind);
    if (!e) {
      e = new ReadinessEstimator(this.options.pollInitialMs, 10, this.options.pollMaxMs);
      this.estimators.set(kind, e);
    }
    return e;
  }

  private schedulePoll(run: Run, kind: Awaitable, attempt: number): void {
    const { pollInitialMs } = this.options;
    let delay: number;
    if (run.mode === 'replay') delay = attempt === 0 ? 0 : this.delay(attempt - 1, pollInitialMs);
    else if (attempt === 0) {
      // First poll: when this kind of result is usually ready, counted from the upload.
      delay = Math.max(0, run.uploadedAt + this.estimator(kind).value - this.now());
    } else delay = this.delay(attempt - 1, Math.max(pollInitialMs, this.estimator(kind).value / 4));
    run.attempts.set(kind, attempt);
    this.ports.scheduler.schedule(run.key(kind), this.now() + delay, () =>
      this.track(this.poll(run, kind, attempt)),
    );
  }

  private async poll(run: Run, kind: Awaitable, attempt: number): Promise<void> {
    if (run.cancelled || run.published.has(kind)) return;
    if (this.now() > run.createdAt + this.options.deadlineMs) {
      const message = `${kind} result not final after ${this.options.deadlineMs} ms`;
      await this.fail(run, { code: 'deadline_exceeded', message }, 'poll', 'deadline_exceeded', attempt);
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = await this.ports.api.getResult(kind, run.state.submission_id);
    } catch (err) {
      if (run.cancelled) return;
      if (err instanceof ResultNotReady) {
        if (attempt === 0 && run.mode === 'process') this.estimator(kind).observe(false, this.now());
        this.schedulePoll(run, kind, attempt + 1);
        return;
      }
      const f = failureOf(err);
      if (f.retriable !== false) {
        this.ports.logger.warn(
          { submission_id: run.state.submission_id, kind, err: f.message },
          'poll failed; retrying',
        );
        this.schedulePoll(run, kind, attempt + 1);
        return;
      }
      await this.fail(run, err, 'poll', 'poll_failed', attempt + 1);
      return;
    }
    if (attempt === 0 && run.mode === 'process') this.estimator(kind).observe(true, this.now());
    if (run.cancelled) return;
    await this.publish(run, kind, body, 'poll');
  }

  async publish(
    run: Run,
    kind: Awaitable,
    body: Record<string, unknown>,
    source: 'poll' | 'webhook',
  ): Promise<void> {
    let reportUrl: string | null = null;
    if (kind === 'fraud' && this.options.attachReportUrl) {
      try {
        reportUrl = await this.ports.api.getReportUrl(run.state.submission_id);
      } catch (err) {
        // 409: the report does not exist for this result (not successful or skipped); publish without it.
        if (failureOf(err).status !== 409)
          this.ports.logger.warn({ err: failureOf(err).message }, 'report URL unavailable');
      }
    }
    try {
      await this.ports.out.publishResult(kind, run.identity, body, { report_url: reportUrl, source });
    } catch (err) {
      // Too large for its topic: retrying cannot help, the document ends in a letter.
      if (isMessageTooLarge(err)) {
        await this.fail(run, err, 'publish', 'result_too_large');
        return;
      }
      this.ports.logger.warn({ kind, err: failureOf(err).message }, 'publishing a result failed; retrying');
      this.schedulePoll(run, kind, (run.attempts.get(kind) ?? 0) + 1);
      return;
    }
    this.events.onPublished?.(kind, run.identity, body);
    if (run.mode === 'process' && !run.cancelled) {
      await this.markPublished(run, kind);
      return;
    }
    run.published.add(kind);
    await this.maybeFinish(run);
  }

  private isComplete(run: Run): boolean {
    return run.state.awaited.every((k) => run.published.has(k));
  }

  private async maybeFinish(run: Run): Promise<void> {
    if (run.cancelled || run.finishing || !this.isComplete(run)) return;
    run.finishing = true;
    if (run.mode === 'replay') {
      // Recording the generation makes a replay re-emit once, also when it is itself interrupted.
      if (run.state.status === 'DONE' && run.replayGeneration > (run.state.generation ?? 0)) {
        run.state = { ...run.state, generation: run.replayGeneration };
        await this.record(run);
      }
      this.events.onFinished?.(finishedDoc(run), 'replayed');
      this.release(run, false);
      return;
    }
    run.state = finishedState(run, 'DONE', this.now());
    await this.record(run);
    this.events.onFinished?.(finishedDoc(run), 'done');
    this.release(run, false);
    if (this.options.deleteAfterPublish) this.track(this.deleteSubmission(run, 0));
  }

  private async deleteSubmission(run: Run, attempt: number): Promise<void> {
    const state = run.state;
    try {
      await this.ports.api.deleteSubmission(state.submission_id);
    } catch (err) {
      const f = failureOf(err);
      if (f.status === 404) return;
      if ((f.status === 409 || f.retriable) && attempt < 8) {
        const delay = this.delay(attempt, this.options.pollInitialMs);
        this.ports.scheduler.schedule(run.key('delete'), this.now() + delay, () =>
          this.track(this.deleteSubmission(run, attempt + 1)),
        );
        return;
      }
      const subject = { source: null, ...subjectOf(run) };
      await this.deadLetter(err, subject, {
        stage: 'delete',
        fallbackCode: 'delete_failed',
        attempts: attempt + 1,
      });
    }
  }

  /** Dead-letters a running document and records it FAILED (never submitted again unless reprocessed). */
  private async fail(
    run: Run,
    err: unknown,
    stage: DeadLetterStage,
    fallbackCode: string,
    attempts?: number,
  ): Promise<void> {
    if (run.cancelled) return;
    await this.deadLetter(
      err,
      { source: await this.sourceOf(run), ...subjectOf(run) },
      { stage, fallbackCode, ...(attempts === undefined ? {} : { attempts }) },
    );
    if (run.mode === 'process') {
      run.state = finishedState(run, 'FAILED', this.now());
      await this.record(run);
    }
    this.events.onFinished?.(finishedDoc(run), 'failed');
    this.release(run, false);
  }

  /**
   * The input record of a running document, read back by its pointer for a dead letter; when it is
   * gone (or cannot be read now) the letter still names it, without its bytes.
   */
  private async sourceOf(run: Run): Promise<SourceRecord> {
    const p = run.pointer;
    try {
      const record = await this.ports.inputs.read(p);
      if (record) return record;
    } catch (err) {
      this.ports.logger.warn(
        { event_id: run.eventId, err: failureOf(err).message },
        'input record not read back for a dead letter; it carries the pointer only',
      );
    }
    return { ...p, key: null, value: null, traceparent: run.identity.traceparent };
  }
}

function subjectOf(run: Run) {
  return {
    event_id: run.eventId,
    submission_id: run.state.submission_id,
    attributes: run.identity.attributes,
  };
}

function finishedDoc(run: Run) {
  return { event_id: run.eventId, submission_id: run.state.submission_id, created_at: run.createdAt };
}

/** A finished document keeps only what deduplication and replay need (`state/record.ts`). */
function finishedState(run: Run, status: 'DONE' | 'FAILED', at: number): FinishedState {
  const s = run.state;
  return {
    v: 2,
    event_id: s.event_id,
    submission_id: s.submission_id,
    status,
    input: s.input,
    awaited: s.awaited,
    published: [...run.published],
    finished_at: at,
  };
}
