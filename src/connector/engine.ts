/**
 * Decides which documents run on this instance and admits new ones: admission (blob check, create,
 * durable state) happens while the consumer holds the record; everything slow (upload, waiting for
 * results, publishing) runs in the background (`lifecycle.ts`) under one poll scheduler. How many
 * documents may be in flight is the consumer loop's limit (`consumer-loop.ts`), read from `inFlight`.
 *
 * Guarantees this module provides to the consumer loop:
 * - `admit` resolves only once the record's outcome is durable: its state (with the submission id)
 *   acknowledged by Kafka, or a dead letter produced. Its offset may then be committed.
 * - A document whose state exists is never submitted again (unless the event says `reprocess`);
 *   unfinished ones are resumed from their state. A finished one's redelivered input publishes
 *   nothing again, unless `docstream replay` moved the group back over it (its partition's replay
 *   marker): then its results are re-emitted, once per replay.
 * - Every failure ends in a dead letter (`dead-letters.ts`) with stage, code, message, HTTP status
 *   and attempts.
 */
import type { EngineEvents, EngineOptions, EnginePorts } from './engine-ports.js';
import { Lifecycle } from './lifecycle.js';
import { createdState, finishedOf, identityOf, inputOf, Run } from './run.js';
import type { Recorded } from './state/store.js';
import type { UnfinishedState } from './state/document-state.js';
import type { ReplayMarker } from './state/replay-marker.js';
import type { ArrivalEvent, CreatedSubmission, DocumentIdentity, OpenedBlob, SourceRecord } from './types.js';

export type { EngineOptions };

export type AdmitOutcome =
  'started' | 'resumed' | 'replayed' | 'running' | 'dead-lettered' | 'skipped' | 'published-before';

/** What the engine knows of an arriving record's document: its state and its partition's replay marker. */
export interface Existing {
  recorded: Recorded | undefined;
  marker: ReplayMarker | undefined;
}

export class DocumentEngine {
  private readonly runs = new Map<string, Run>();
  private readonly bySubmission = new Map<string, Run>();
  /** Documents running, by input partition (what the group's API share is told: `unfinishedOn`). */
  private readonly byPartition = new Map<number, number>();
  /** Submissions created whose state Kafka did not acknowledge: reused when the record comes back. */
  private readonly unrecorded = new Map<string, UnfinishedState>();
  private readonly lifecycle: Lifecycle;

  constructor(
    private readonly ports: EnginePorts,
    private readonly options: EngineOptions,
    private readonly events: EngineEvents = {},
  ) {
    this.lifecycle = new Lifecycle(ports, options, events, (run, cancelled) => this.release(run, cancelled));
  }

  get inFlight(): number {
    return this.runs.size;
  }

  /** Documents of this input partition still running here. */
  unfinishedOn(partition: number): number {
    return this.byPartition.get(partition) ?? 0;
  }

  /**
   * Takes one input record. Resolves once its outcome is durable; throws only when Kafka itself could
   * not record it (state or dead letter not acknowledged), so the consumer retries the record.
   */
  async admit(
    source: SourceRecord,
    event: ArrivalEvent,
    existing: Existing = { recorded: undefined, marker: undefined },
  ): Promise<AdmitOutcome> {
    const recorded = existing.recorded;
    if (recorded && !event.reprocess) {
      if (this.runs.has(event.event_id)) return 'running';
      if ('unfinished' in recorded) {
        const s = recorded.unfinished;
        this.start(this.run(s, 'process', identityOf(event, source, s.submission_id), event));
        return 'resumed';
      }
      const done = recorded.finished;
      if (done.status === 'FAILED') {
        this.ports.logger.info(
          { event_id: event.event_id, submission_id: done.submission_id },
          'document failed before; its dead letter stands (set reprocess to submit it again)',
        );
        return 'skipped';
      }
      const marker = existing.marker;
      // Redelivered after a crash (or published again upstream): its results were published already.
      if (
        !marker ||
        BigInt(source.offset) >= BigInt(marker.until_offset) ||
        done.generation >= marker.generation
      ) {
        this.ports.logger.debug({ event_id: event.event_id }, 'finished before; results not published again');
        return 'published-before';
      }
      // The replay takes the document's identity from the replayed event.
      const run = new Run(
        finishedOf(done, source),
        'replay',
        identityOf(event, source, done.submission_id),
        null,
        null,
        this.lifecycle.now(),
      );
      run.replayGeneration = marker.generation;
      this.start(run);
      return 'replayed';
    }
    const earlier = this.unrecorded.get(event.event_id);
    if (earlier) {
      // Created before, but the state write failed and the record came back: record that submission.
      await this.ports.states.writeState(earlier);
      this.unrecorded.delete(event.event_id);
      this.start(this.run(earlier, 'process', identityOf(event, source, earlier.submission_id), event));
      return 'started';
    }

    const now = this.lifecycle.now;
    const subject = { source, event_id: event.event_id, submission_id: null, attributes: event.attributes };
    let blob: OpenedBlob;
    const blobStarted = now();
    try {
      blob = await this.ports.blobs.resolve(event.blob);
      this.events.onStage?.('blob', now() - blobStarted);
    } catch (err) {
      // A blob error's own code names the problem; its retry count is not the API's.
      await this.lifecycle.deadLetter(err, subject, {
        stage: 'blob',
        fallbackCode: 'blob_unreadable',
        attempts: 1,
      });
      return 'dead-lettered';
    }

    let created: CreatedSubmission;
    const createStarted = now();
    try {
      created = await this.ports.api.createSubmission({
        query_id: event.query_id,
        pipeline_configuration: event.pipeline_configuration,
        enable_decision: event.enable_decision,
        enable_submission_characteristics: event.submission_characteristics !== null,
      });
      this.events.onStage?.('create', now() - createStarted);
    } catch (err) {
      await blob.cleanup();
      await this.lifecycle.deadLetter(err, subject, { stage: 'create', fallbackCode: 'api_error' });
      return 'dead-lettered';
    }

    const state = createdState(source, event, created, now(), this.options.awaitedOverride);
    // The submission exists from here on: record it before anything else can fail.
    try {
      await this.ports.states.writeState(state);
    } catch (err) {
      this.unrecorded.set(event.event_id, state);
      await blob.cleanup();
      throw err;
    }
    const run = this.run(state, 'process', identityOf(event, source, created.submission_id), event);
    run.blob = blob;
    this.start(run);
    return 'started';
  }

  /**
   * Continues documents recorded in state but not finished (after a restart or a rebalance): each
   * one's input record is read back for its identity and, while its upload is pending, its blob and
   * characteristics. A document whose input is gone keeps going with what the state knows (its
   * pending upload then fails into a dead letter). Throws when the input topic cannot be read now.
   */
  async resume(states: UnfinishedState[]): Promise<void> {
    const toResume = states.filter((s) => !this.runs.has(s.event_id));
    if (toResume.length === 0) return;
    const inputs = await this.ports.inputs.recall(toResume.map((s) => s.input));
    toResume.forEach((s, i) => {
      // Its record may have arrived (and resumed it) while the input was read back.
      if (this.runs.has(s.event_id)) return;
      const recalled = inputs[i];
      if (recalled && recalled.event.event_id === s.event_id) {
        const { source, event } = recalled;
        this.start(this.run(s, 'process', identityOf(event, source, s.submission_id), event));
        return;
      }
      this.ports.logger.warn(
        { event_id: s.event_id, submission_id: s.submission_id, status: s.status },
        'input record of an unfinished document is gone; resuming with its state only',
      );
      const identity: DocumentIdentity = {
        submission_id: s.submission_id,
        event_id: s.event_id,
        query_id: null,
        attributes: {},
        traceparent: null,
      };
      this.start(new Run(s, 'process', identity, null, null, this.lifecycle.now()));
    });
  }

  /**
   * Stops the work of documents of the given partitions; their state is durable, the new owner
   * resumes. Returns how many were running.
   */
  revoke(partitions: Iterable<number>): number {
    const set = new Set(partitions);
    let stopped = 0;
    for (const run of [...this.runs.values()]) {
      if (!set.has(run.pointer.partition)) continue;
      this.release(run, true);
      stopped += 1;
    }
    for (const [eventId, state] of this.unrecorded) {
      if (set.has(state.input.partition)) this.unrecorded.delete(eventId);
    }
    return stopped;
  }

  private run(
    state: UnfinishedState,
    mode: 'process' | 'replay',
    identity: DocumentIdentity,
    event: ArrivalEvent,
  ): Run {
    // The input is needed only while the upload is pending.
    const input = state.status === 'CREATED' ? inputOf(event) : null;
    return new Run(state, mode, identity, input, null, this.lifecycle.now());
  }

  /** Stops everything; resolves when no step is half-way (an upload or a publish in progress). */
  async stop(timeoutMs: number): Promise<void> {
    for (const run of [...this.runs.values()]) this.release(run, true);
    await this.lifecycle.settle(timeoutMs);
  }

  /**
   * A webhook delivery (received by any instance) says this submission's decision is ready: fetched and
   * published here if this instance runs the document and still waits for it, else nothing.
   */
  decisionReady(submissionId: string): void {
    const run = this.bySubmission.get(submissionId);
    if (run) this.lifecycle.decisionDelivered(run);
  }

  private start(run: Run): void {
    const previous = this.runs.get(run.state.event_id);
    if (previous) this.count(previous, -1);
    this.runs.set(run.state.event_id, run);
    this.count(run, 1);
    this.bySubmission.set(run.state.submission_id, run);
    this.lifecycle.track(this.lifecycle.advance(run));
  }

  private release(run: Run, cancelled: boolean): void {
    if (cancelled) run.cancelled = true;
    for (const kind of run.state.awaited) this.ports.scheduler.cancel(run.key(kind));
    this.ports.scheduler.cancel(run.key('deadline'));
    if (this.runs.get(run.state.event_id) === run) {
      this.runs.delete(run.state.event_id);
      this.count(run, -1);
    }
    if (this.bySubmission.get(run.state.submission_id) === run)
      this.bySubmission.delete(run.state.submission_id);
    if (cancelled) void run.blob?.cleanup();
    this.events.onRoom?.();
  }

  private count(run: Run, delta: number): void {
    const partition = run.pointer.partition;
    const n = (this.byPartition.get(partition) ?? 0) + delta;
    if (n > 0) this.byPartition.set(partition, n);
    else this.byPartition.delete(partition);
  }
}
