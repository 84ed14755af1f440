/**
 * How a document in the background ends (`lifecycle.ts` moves it there): its state recorded with
 * retries, finished (DONE, or a replay re-emitted), failed into a dead letter, its submission
 * deleted; and the background steps that `settle` waits for.
 */
import { backoffDelay } from '../util/backoff.js';
import {
  deadLetterOf,
  failureOf,
  type DeadLetterStage,
  type LetterContext,
  type LetterSubject,
} from './dead-letters.js';
import type { EngineEvents, EngineOptions, EnginePorts } from './engine-ports.js';
import type { Run } from './run.js';
import type { FinishedState } from './state/document-state.js';
import type { DeadLetter, SourceRecord } from './types.js';

export abstract class RunEnding {
  private readonly tasks = new Set<Promise<unknown>>();
  readonly now: () => number;
  private readonly random: () => number;

  constructor(
    protected readonly ports: EnginePorts,
    protected readonly options: EngineOptions,
    protected readonly events: EngineEvents,
    /** Takes a run out of the engine (finished, failed, or cancelled). */
    protected readonly release: (run: Run, cancelled: boolean) => void,
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
  async deadLetter(
    err: unknown,
    subject: LetterSubject,
    context: LetterContext,
    options: { stateFollows?: boolean } = {},
  ): Promise<DeadLetter> {
    const letter = deadLetterOf(err, subject, context);
    await this.ports.out.deadLetter(letter, options);
    this.events.onDeadLetter?.(context.stage, letter.error_code);
    return letter;
  }

  /**
   * Writes the run's latest state, retrying until Kafka acknowledges it (e.g. through a broker
   * restart): a background step that gave up here would leave the document in flight forever.
   */
  protected async record(run: Run): Promise<void> {
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

  protected delay(attempt: number, initialMs: number): number {
    return backoffDelay(attempt, { initialMs, maxMs: this.options.pollMaxMs }, this.random);
  }

  protected isComplete(run: Run): boolean {
    return run.state.awaited.every((k) => run.published.has(k));
  }

  protected async maybeFinish(run: Run): Promise<void> {
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
  protected async fail(
    run: Run,
    err: unknown,
    stage: DeadLetterStage,
    fallbackCode: string,
    attempts?: number,
  ): Promise<void> {
    // One end per document: a deadline and a failed poll at once write one letter.
    if (run.cancelled || run.finishing) return;
    run.finishing = true;
    await this.deadLetter(
      err,
      { source: await this.sourceOf(run), ...subjectOf(run) },
      { stage, fallbackCode, ...(attempts === undefined ? {} : { attempts }) },
      // Exactly-once: the letter and the FAILED state below go in one transaction.
      { stateFollows: run.mode === 'process' },
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
