/**
 * Everything that happens to an admitted document in the background: upload, polling each awaited
 * result, publishing it, recording progress, finishing (or failing into a dead letter) and deleting
 * the submission. The engine (`engine.ts`) decides which documents run; this module moves one along
 * (how one ends, from recording its state to deleting the submission: `run-ending.ts`).
 */
import { isMessageTooLarge } from '../kafka/errors.js';
import { failureOf, type DeadLetterStage } from './dead-letters.js';
import { ReadinessEstimator } from './readiness.js';
import type { Run } from './run.js';
import { RunEnding } from './run-ending.js';
import type { UnfinishedState } from './state/document-state.js';
import { ResultNotReady, type Awaitable } from './types.js';

export class Lifecycle extends RunEnding {
  private readonly estimators = new Map<Awaitable, ReadinessEstimator>();

  async advance(run: Run): Promise<void> {
    this.armDeadline(run);
    // A resumed document's decision may have been delivered while nobody ran it.
    if (this.awaitsDecision(run) && this.ports.deliveries?.has(run.state.submission_id))
      run.decisionDelivered = true;
    if (run.state.status === 'CREATED') {
      const ok = await this.upload(run);
      if (!ok) return;
    }
    if (run.cancelled || run.finishing) return;
    run.uploadedAt ||= this.now();
    for (const kind of run.state.awaited) {
      if (run.published.has(kind)) continue;
      if (kind === 'decision' && !this.pollsDecision(run)) continue;
      this.schedulePoll(run, kind, 0);
    }
    await this.maybeFinish(run);
  }

  /**
   * A webhook delivery says the document's decision is ready: fetch it now (then publish it like a
   * polled one, `source: webhook`). Retries after a failed fetch are the poll loop's, polling or not.
   */
  decisionDelivered(run: Run): void {
    if (!this.awaitsDecision(run) || run.decisionDelivered) return;
    run.decisionDelivered = true;
    // Not uploaded yet: `advance` schedules the fetch once it is.
    if (run.state.status === 'CREATED') return;
    this.schedulePoll(run, 'decision', 0);
  }

  private awaitsDecision(run: Run): boolean {
    return (
      run.mode === 'process' &&
      !run.cancelled &&
      !run.finishing &&
      run.state.awaited.includes('decision') &&
      !run.published.has('decision')
    );
  }

  private pollsDecision(run: Run): boolean {
    return run.mode === 'replay' || this.options.decisionPolling || run.decisionDelivered;
  }

  /**
   * Every document ends by its deadline, whatever polls or webhooks do: a timer of its own, at
   * creation + deadline (a replay: from the start of the replay, its results being final already).
   */
  private armDeadline(run: Run): void {
    const from = run.mode === 'replay' ? this.now() : run.createdAt;
    run.deadlineAt = from + this.options.deadlineMs;
    this.ports.scheduler.schedule(run.key('deadline'), run.deadlineAt, () => this.track(this.expire(run)));
  }

  /**
   * Fails a document past its deadline: `decision/deadline` when the decision is all that is missing,
   * else `poll/deadline_exceeded` naming every result that is not final.
   */
  private async expire(run: Run): Promise<void> {
    const missing = run.state.awaited.filter((k) => !run.published.has(k));
    if (missing.length === 0 || run.cancelled || run.finishing) return;
    const polls = Math.max(0, ...missing.map((k) => run.attempts.get(k) ?? 0));
    const after = `${this.options.deadlineMs} ms`;
    if (missing.length === 1 && missing[0] === 'decision') {
      const why = this.pollsDecision(run) ? '' : ' (decision polling is off and no webhook delivery arrived)';
      const message = `decision not received within ${after}${why}`;
      await this.fail(run, { code: 'deadline', message }, 'decision', 'deadline', polls);
      return;
    }
    const message = `${missing.join(', ')} result not final after ${after}`;
    await this.fail(run, { code: 'deadline_exceeded', message }, 'poll', 'deadline_exceeded', polls);
  }

  private async markPublished(run: Run, kind: Awaitable): Promise<void> {
    run.published.add(kind);
    // Failed at its deadline meanwhile: the FAILED state stands.
    if (run.finishing) return;
    const s = run.state;
    if (s.status === 'CREATED' || s.status === 'UPLOADED')
      run.state = { ...s, published: [...run.published], updated_at: this.now() };
    if (!this.isComplete(run)) await this.record(run);
    await this.maybeFinish(run);
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
    if (run.cancelled || run.finishing) return false;
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
    if (run.mode === 'replay' || (kind === 'decision' && run.decisionDelivered))
      delay = attempt === 0 ? 0 : this.delay(attempt - 1, pollInitialMs);
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
    if (run.cancelled || run.finishing || run.published.has(kind)) return;
    if (this.now() > run.deadlineAt) {
      await this.expire(run);
      return;
    }
    // A fetch prompted by a webhook says nothing of when this kind of result is usually ready.
    const timed = attempt === 0 && run.mode === 'process' && !(kind === 'decision' && run.decisionDelivered);
    let body: Record<string, unknown>;
    try {
      body = await this.ports.api.getResult(kind, run.state.submission_id);
    } catch (err) {
      if (run.cancelled || run.finishing) return;
      if (err instanceof ResultNotReady) {
        if (timed) this.estimator(kind).observe(false, this.now());
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
    if (timed) this.estimator(kind).observe(true, this.now());
    if (run.cancelled || run.finishing) return;
    await this.publish(run, kind, body, kind === 'decision' && run.decisionDelivered ? 'webhook' : 'poll');
  }

  private async publish(
    run: Run,
    kind: Awaitable,
    body: Record<string, unknown>,
    source: 'poll' | 'webhook',
  ): Promise<void> {
    if (run.published.has(kind) || run.publishing.has(kind)) return;
    run.publishing.add(kind);
    try {
      await this.publishOnce(run, kind, body, source);
    } finally {
      run.publishing.delete(kind);
    }
  }

  private async publishOnce(
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
      await this.ports.out.publishResult(kind, run.identity, body, {
        report_url: reportUrl,
        source,
        inputPartition: run.state.input.partition,
      });
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
}
