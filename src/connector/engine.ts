/**
 * Drives each document through the API: admission (blob check, create, durable state) happens while
 * the consumer holds the record; everything slow (upload, waiting for results, publishing) runs in
 * the background under one poll scheduler, bounded by `maxInFlight`.
 *
 * Guarantees this module provides to the consumer loop:
 * - `admit` resolves only once the record's outcome is durable: its state (with the submission id)
 *   acknowledged by Kafka, or a dead letter produced. Its offset may then be committed.
 * - A document whose state exists is never submitted again (unless the event says `reprocess`);
 *   unfinished ones are resumed from their state, finished ones have their results re-emitted.
 * - Every failure ends in a dead letter with stage, code, message, HTTP status and attempts.
 */
import type { Logger } from '../observability/logger.js';
import { pollDelay } from './backoff.js';
import { ReadinessEstimator } from './readiness.js';
import type { PollScheduler } from '../util/scheduler.js';
import {
  ResultNotReady,
  type ApiPort,
  type ArrivalEvent,
  type Awaitable,
  type BlobPort,
  type DocumentIdentity,
  type DocumentState,
  type FailureInfo,
  type OpenedBlob,
  type OutputPort,
  type SourceRecord,
} from './types.js';
import { awaitedResults, type AwaitedOverride } from './awaited.js';

export interface EngineOptions {
  maxInFlight: number;
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
  scheduler: PollScheduler;
  logger: Logger;
  now?: () => number;
  random?: () => number;
  /** True when another path (a webhook, on any instance) already published this submission's decision. */
  decisionDelivered?: (submissionId: string) => boolean;
}

export type AdmitOutcome = 'started' | 'resumed' | 'replayed' | 'running' | 'dead-lettered' | 'skipped';

/** What the engine reports for metrics and the demo. */
export interface EngineEvents {
  onPublished?(kind: Awaitable, doc: DocumentIdentity, body: Record<string, unknown>): void;
  onFinished?(state: DocumentState, outcome: 'done' | 'failed' | 'replayed'): void;
  onDeadLetter?(stage: string, code: string): void;
  onStage?(stage: string, durationMs: number): void;
  /** A slot was released: the consumer may resume paused partitions. */
  onRoom?(): void;
}

class Run {
  cancelled = false;
  /** Set synchronously by the first caller that sees every result published, so only one finishes. */
  finishing = false;
  readonly published: Set<Awaitable>;
  readonly attempts = new Map<Awaitable, number>();
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
}

function failureOf(err: unknown): FailureInfo & { message: string } {
  const e = (err ?? {}) as FailureInfo & { message?: string };
  return {
    status: typeof e.status === 'number' ? e.status : undefined,
    retriable: e.retriable,
    code: e.code,
    attempts: e.attempts,
    message: err instanceof Error ? err.message : String(err),
  };
}

export class DocumentEngine {
  private readonly runs = new Map<string, Run>();
  private readonly bySubmission = new Map<string, Run>();
  private readonly estimators = new Map<Awaitable, ReadinessEstimator>();
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly tasks = new Set<Promise<unknown>>();
  /** Submissions created whose state Kafka did not acknowledge: reused when the record comes back. */
  private readonly unrecorded = new Map<string, DocumentState>();

  constructor(
    private readonly ports: EnginePorts,
    private readonly options: EngineOptions,
    private readonly events: EngineEvents = {},
  ) {
    this.now = ports.now ?? Date.now;
    this.random = ports.random ?? Math.random;
  }

  get inFlight(): number {
    return this.runs.size;
  }

  hasRoom(): boolean {
    return this.runs.size < this.options.maxInFlight;
  }

  isRunning(eventId: string): boolean {
    return this.runs.has(eventId);
  }

  /**
   * Takes one input record. Resolves once its outcome is durable; throws only when Kafka itself could
   * not record it (state or dead letter not acknowledged), so the consumer retries the record.
   */
  async admit(
    source: SourceRecord,
    event: ArrivalEvent,
    existing: DocumentState | undefined,
  ): Promise<AdmitOutcome> {
    if (existing && !event.reprocess) {
      if (this.runs.has(event.event_id)) return 'running';
      if (existing.status === 'DONE') {
        this.start(new Run(existing, 'replay', null));
        return 'replayed';
      }
      if (existing.status === 'FAILED') {
        this.ports.logger.info(
          { event_id: event.event_id, submission_id: existing.submission_id },
          'document failed before; its dead letter stands (set reprocess to submit it again)',
        );
        return 'skipped';
      }
      this.resume(existing);
      return 'resumed';
    }
    const earlier = this.unrecorded.get(event.event_id);
    if (earlier) {
      // Created before, but the state write failed and the record came back: record that submission.
      await this.ports.out.writeState(earlier);
      this.unrecorded.delete(event.event_id);
      this.start(new Run(earlier, 'process', null));
      return 'started';
    }

    const identityForLetters = { event_id: event.event_id, attributes: event.attributes };
    let blob: OpenedBlob;
    const blobStarted = this.now();
    try {
      blob = await this.ports.blobs.resolve(event.blob);
      this.events.onStage?.('blob', this.now() - blobStarted);
    } catch (err) {
      const f = failureOf(err);
      await this.deadLetter(
        source,
        identityForLetters,
        null,
        'blob',
        f.code ?? 'blob_unreadable',
        f.message,
        null,
        1,
      );
      return 'dead-lettered';
    }

    const characteristics = event.submission_characteristics;
    let created: Awaited<ReturnType<ApiPort['createSubmission']>>;
    const createStarted = this.now();
    try {
      created = await this.ports.api.createSubmission({
        query_id: event.query_id,
        pipeline_configuration: event.pipeline_configuration,
        enable_decision: event.enable_decision,
        enable_submission_characteristics: characteristics !== null,
      });
      this.events.onStage?.('create', this.now() - createStarted);
    } catch (err) {
      await blob.cleanup();
      const f = failureOf(err);
      const code = f.status ? `api_${f.status}` : (f.code ?? 'api_error');
      await this.deadLetter(
        source,
        identityForLetters,
        null,
        'create',
        code,
        f.message,
        f.status ?? null,
        f.attempts ?? 1,
      );
      return 'dead-lettered';
    }

    const at = this.now();
    const state: DocumentState = {
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
      awaited: awaitedResults(
        event.pipeline_configuration,
        event.enable_decision,
        this.options.awaitedOverride,
      ),
      published: [],
      created_at: at,
      updated_at: at,
      pending: {
        blob: event.blob,
        upload_url: created.upload_url,
        characteristics_url: created.submission_characteristics_upload_url ?? null,
        characteristics,
      },
    };
    // The submission exists from here on: record it before anything else can fail.
    try {
      await this.ports.out.writeState(state);
    } catch (err) {
      this.unrecorded.set(event.event_id, state);
      await blob.cleanup();
      throw err;
    }
    this.start(new Run(state, 'process', blob));
    return 'started';
  }

  /** Continues a document recorded in state but not finished (after a restart or a rebalance). */
  resume(state: DocumentState): void {
    if (this.runs.has(state.event_id) || state.status === 'DONE' || state.status === 'FAILED') return;
    this.start(new Run(state, 'process', null));
  }

  /** Stops the work of documents of the given partitions; their state is durable, the new owner resumes. */
  revoke(partitions: Iterable<number>): void {
    const set = new Set(partitions);
    for (const run of [...this.runs.values()]) {
      if (set.has(run.state.partition)) this.release(run, true);
    }
    for (const [eventId, state] of this.unrecorded) {
      if (set.has(state.partition)) this.unrecorded.delete(eventId);
    }
  }

  /** Stops everything; resolves when no step is half-way (an upload or a publish in progress). */
  async stop(timeoutMs: number): Promise<void> {
    for (const run of [...this.runs.values()]) this.release(run, true);
    const settle = Promise.allSettled([...this.tasks]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settle, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /**
   * A decision delivered by a webhook for a document this instance is running: publish it now and stop
   * polling for it. Returns false when the document is not running here.
   */
  async deliverDecision(submissionId: string, body: Record<string, unknown>): Promise<boolean> {
    const run = this.bySubmission.get(submissionId);
    if (!run || !run.state.awaited.includes('decision')) return false;
    if (run.published.has('decision')) return true;
    this.ports.scheduler.cancel(`${run.state.event_id}\u0000decision`);
    await this.publish(run, 'decision', body, 'webhook');
    return true;
  }

  /**
   * Another instance published this submission's decision (seen in the shared webhook topic): stop
   * waiting for it here without publishing it again.
   */
  async decisionPublishedElsewhere(submissionId: string): Promise<void> {
    const run = this.bySubmission.get(submissionId);
    if (
      !run ||
      run.mode !== 'process' ||
      !run.state.awaited.includes('decision') ||
      run.published.has('decision')
    ) {
      return;
    }
    this.ports.scheduler.cancel(`${run.state.event_id}\u0000decision`);
    await this.markPublished(run, 'decision');
  }

  // ---------------------------------------------------------------------------------------------

  private async markPublished(run: Run, kind: Awaitable): Promise<void> {
    run.published.add(kind);
    run.state = { ...run.state, published: [...run.published], updated_at: this.now() };
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
        await this.ports.out.writeState(run.state);
        return;
      } catch (err) {
        // A revoked or stopped run: the next owner resumes from the last state that was recorded.
        if (run.cancelled) return;
        this.ports.logger.warn(
          { event_id: run.state.event_id, attempt, err: failureOf(err).message },
          'recording state failed; retrying',
        );
        const delay = pollDelay(attempt, this.options.pollInitialMs, this.options.pollMaxMs, this.random);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  private start(run: Run): void {
    this.runs.set(run.state.event_id, run);
    this.bySubmission.set(run.state.submission_id, run);
    this.track(this.advance(run));
  }

  private track(p: Promise<unknown>): void {
    const guarded = p.catch((err: unknown) => this.ports.logger.error({ err }, 'unexpected connector error'));
    this.tasks.add(guarded);
    void guarded.finally(() => this.tasks.delete(guarded));
  }

  private async advance(run: Run): Promise<void> {
    if (run.state.status === 'CREATED') {
      const ok = await this.upload(run);
      if (!ok) return;
    }
    if (run.cancelled) return;
    run.uploadedAt ||= this.now();
    for (const kind of run.state.awaited) {
      if (run.published.has(kind)) continue;
      if (kind === 'decision' && run.mode === 'process') {
        if (this.ports.decisionDelivered?.(run.state.submission_id)) {
          run.published.add('decision');
          continue;
        }
        if (!this.options.decisionPolling) continue;
      }
      this.schedulePoll(run, kind, 0);
    }
    await this.maybeFinish(run);
  }

  private async upload(run: Run): Promise<boolean> {
    const s = run.state;
    const pending = s.pending;
    if (!pending) return true;
    const started = this.now();
    let stage = 'blob';
    try {
      run.blob ??= await this.ports.blobs.resolve(pending.blob);
      if (pending.characteristics) {
        stage = 'characteristics';
        await this.ports.api.putCharacteristics(
          s.submission_id,
          pending.characteristics_url,
          pending.characteristics,
        );
      }
      stage = 'upload';
      await this.ports.api.upload(pending.upload_url, run.blob, s.submission_id);
    } catch (err) {
      const f = failureOf(err);
      // A resumed upload that the server already has (409) is done, not failed.
      if (!(stage === 'upload' && f.status === 409)) {
        await run.blob?.cleanup();
        const code = f.status ? `api_${f.status}` : (f.code ?? `${stage}_failed`);
        await this.fail(run, stage, code, f.message, f.status ?? null, f.attempts ?? 1);
        return false;
      }
    }
    await run.blob?.cleanup();
    run.blob = null;
    this.events.onStage?.('upload', this.now() - started);
    if (run.cancelled) return false;
    run.uploadedAt = this.now();
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
    const { pollInitialMs, pollMaxMs } = this.options;
    let delay: number;
    if (run.mode === 'replay')
      delay = attempt === 0 ? 0 : pollDelay(attempt - 1, pollInitialMs, pollMaxMs, this.random);
    else if (attempt === 0) {
      // First poll: when this kind of result is usually ready, counted from the upload.
      delay = Math.max(0, run.uploadedAt + this.estimator(kind).value - this.now());
    } else
      delay = pollDelay(
        attempt - 1,
        Math.max(pollInitialMs, this.estimator(kind).value / 4),
        pollMaxMs,
        this.random,
      );
    run.attempts.set(kind, attempt);
    this.ports.scheduler.schedule(`${run.state.event_id}\u0000${kind}`, this.now() + delay, () =>
      this.track(this.poll(run, kind, attempt)),
    );
  }

  private async poll(run: Run, kind: Awaitable, attempt: number): Promise<void> {
    if (run.cancelled || run.published.has(kind)) return;
    if (this.now() > run.state.created_at + this.options.deadlineMs) {
      await this.fail(
        run,
        'poll',
        'deadline_exceeded',
        `${kind} result not final after ${this.options.deadlineMs} ms`,
        null,
        attempt,
      );
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
      await this.fail(
        run,
        'poll',
        f.status ? `api_${f.status}` : 'poll_failed',
        f.message,
        f.status ?? null,
        attempt + 1,
      );
      return;
    }
    if (attempt === 0 && run.mode === 'process') this.estimator(kind).observe(true, this.now());
    if (run.cancelled) return;
    if (
      kind === 'decision' &&
      run.mode === 'process' &&
      this.ports.decisionDelivered?.(run.state.submission_id)
    ) {
      await this.markPublished(run, 'decision');
      return;
    }
    await this.publish(run, kind, body, 'poll');
  }

  private async publish(
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
      this.events.onFinished?.(run.state, 'replayed');
      this.release(run, false);
      return;
    }
    run.state = { ...run.state, status: 'DONE', input: undefined, updated_at: this.now() };
    await this.record(run);
    this.events.onFinished?.(run.state, 'done');
    this.release(run, false);
    if (this.options.deleteAfterPublish) this.track(this.deleteSubmission(run.state, 0));
  }

  private async deleteSubmission(state: DocumentState, attempt: number): Promise<void> {
    try {
      await this.ports.api.deleteSubmission(state.submission_id);
    } catch (err) {
      const f = failureOf(err);
      if (f.status === 404) return;
      if ((f.status === 409 || f.retriable) && attempt < 8) {
        const delay = pollDelay(attempt, this.options.pollInitialMs, this.options.pollMaxMs, this.random);
        this.ports.scheduler.schedule(`${state.event_id}\u0000delete`, this.now() + delay, () =>
          this.track(this.deleteSubmission(state, attempt + 1)),
        );
        return;
      }
      await this.deadLetter(
        null,
        state,
        state.submission_id,
        'delete',
        f.status ? `api_${f.status}` : 'delete_failed',
        f.message,
        f.status ?? null,
        attempt + 1,
      );
    }
  }

  private async fail(
    run: Run,
    stage: string,
    code: string,
    message: string,
    httpStatus: number | null,
    attempts: number,
  ): Promise<void> {
    if (run.cancelled) return;
    await this.deadLetter(
      null,
      run.state,
      run.state.submission_id,
      stage,
      code,
      message,
      httpStatus,
      attempts,
      run,
    );
    if (run.mode === 'process') {
      run.state = {
        ...run.state,
        status: 'FAILED',
        input: undefined,
        pending: undefined,
        error: { stage, code, message },
        updated_at: this.now(),
      };
      await this.record(run);
    }
    this.events.onFinished?.(run.state, 'failed');
    this.release(run, false);
  }

  private async deadLetter(
    source: SourceRecord | null,
    who: { event_id: string; attributes: Record<string, string> },
    submissionId: string | null,
    stage: string,
    code: string,
    message: string,
    httpStatus: number | null,
    attempts: number,
    run?: Run,
  ): Promise<void> {
    const src: SourceRecord | null =
      source ??
      (run
        ? {
            topic: run.state.topic ?? '',
            partition: run.state.partition,
            offset: run.state.offset,
            key: run.state.input?.key ? Buffer.from(run.state.input.key, 'base64') : null,
            value: run.state.input?.value ? Buffer.from(run.state.input.value, 'base64') : null,
            traceparent: run.state.traceparent,
          }
        : null);
    await this.ports.out.deadLetter({
      source: src,
      event_id: who.event_id,
      submission_id: submissionId,
      stage,
      error_code: code,
      message,
      http_status: httpStatus,
      attempts,
      attributes: who.attributes,
    });
    this.events.onDeadLetter?.(stage, code);
  }

  private release(run: Run, cancelled: boolean): void {
    if (cancelled) run.cancelled = true;
    for (const kind of run.state.awaited) this.ports.scheduler.cancel(`${run.state.event_id}\u0000${kind}`);
    if (this.runs.get(run.state.event_id) === run) this.runs.delete(run.state.event_id);
    if (this.bySubmission.get(run.state.submission_id) === run)
      this.bySubmission.delete(run.state.submission_id);
    if (cancelled) void run.blob?.cleanup();
    this.events.onRoom?.();
  }
}
