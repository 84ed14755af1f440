/**
 * One document's life on this instance, in order (what may end it early, and where: `DocumentLife`):
 *   admit    its file is opened from the blob store (unreadable: the event's fault, a dead letter;
 *            a transient blob store failure: the record is tried again until the deadline)
 *   create   the API creates a submission
 *   record   its first state, with the submission id, acknowledged by Kafka: from here the input
 *            offset may be committed and the document is never submitted again
 *   upload   its characteristics, then the file; state UPLOADED
 *   poll     each awaited result: on a schedule from the learned distribution of that kind's
 *            processing time, as dense as the API's free capacity allows (`poll-timing.ts`); at
 *            once when a decision webhook delivery or the decision says it is final; the
 *            document's other results due within 50 ms are fetched with it
 *   publish  each result to its topic (fetched together: one Kafka request); its state records it
 *   finish   every result published: state DONE; the submission deleted when configured
 */
import { isMessageTooLarge, isTransientKafkaFailure, KafkaUnavailableError } from '../../kafka/errors.js';
import { CreateGate, RevocationInProgressError } from './create-gate.js';
import {
  deadLetterOf,
  failureOf,
  type DeadLetterStage,
  type DeadLetterContext,
  type DeadLetterSubject,
} from '../outputs/dead-letters.js';
import type { InFlight } from './in-flight.js';
import type { TenantShares } from './tenant-shares.js';
import {
  NO_TRACES,
  type DocumentTrace,
  type DocumentTraces,
  type TracedRecord,
} from '../../observability/tracing.js';
import type { Attributes } from '@opentelemetry/api';
import { FAILED_AT, type CatalogueCode } from '../outputs/dead-letter-catalogue.js';
import {
  ResultNotReady,
  UnknownTenantError,
  type AdmissionHooks,
  type ApiPort,
  type CreatedSubmission,
  type EngineEvents,
  type EngineOptions,
  type EnginePorts,
} from './ports.js';
import { PollTiming } from './poll-timing.js';
import { createdState, Run } from './run.js';
import { ROUTES } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import { retry } from '../../util/retry.js';
import { within } from '../../util/within.js';
import type { UnfinishedState } from '../state/document-state.js';
import type { ArrivalEvent, Awaitable, OpenedBlob, SourceRecord } from '../types.js';

/** A wait on the global timer (the one a unit test's fake clock replaces). */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The longest a fetched result waits for its document's other results being fetched with it. */
const SIBLING_WAIT_MS = 200;
/** How far ahead of its time a result's poll is started with a sibling's (not learned from: early). */
const SIBLING_PULL_MS = 50;
/** How often an event of an unknown tenant looks for it in the directory again. */
const TENANT_WAIT_STEP_MS = 250;

/** The API of a tenant the directory does not know (now): every call fails, as a transient failure. */
function unknownTenantApi(tenant: string): ApiPort {
  const refuse = () => Promise.reject(new UnknownTenantError(tenant));
  return {
    createSubmission: refuse,
    upload: refuse,
    putCharacteristics: refuse,
    getResult: refuse,
    getReportUrl: refuse,
    deleteSubmission: refuse,
  };
}

/**
 * A failure the document or its request is at fault for ends the document instead (`fail`): a dead letter
 * naming stage, code, HTTP status and attempts, and state FAILED; so does its deadline
 * (`expire`). A transient API failure (429, 5xx, no answer, token endpoint down) is never such a failure:
 * the client retries it until the document's deadline (`connector.deadlineMs`: from admission for the
 * create, from creation after it), so it ends a document only as a deadline dead letter. Nor is the blob
 * store's (a retriable `BlobError`): at admission the consumer tries the record again until the
 * deadline (from the first admission attempt); a resumed document's upload is scheduled again. A revoked or
 * stopped document just stops: its next owner resumes it from its last recorded state.
 *
 * admit, create and record run while the consumer holds the input record (`admit` resolves once the
 * outcome is durable); from upload on, the steps run in the background as scheduled jobs, tracked by
 * `InFlight`. Resumed and replayed documents join at `start`. Which documents run at all is the
 * engine's decision (`engine.ts`); the ports the steps reach out through (the API over HTTP, Kafka)
 * are in `ports.ts`.
 */
export class DocumentLife {
  /**
   * Submissions created whose first state Kafka has not acknowledged yet: written when the record is
   * tried again, or before its partition is released; never created again.
   */
  private readonly unrecorded = new Map<string, UnfinishedState>();
  /** Whether a create may be sent now, and the creates out (`create-gate.ts`). */
  readonly gate = new CreateGate();
  /** Events whose blob store answered with a transient failure at admission: since when, how often, where. */
  private readonly blobRetries = new Map<string, { since: number; tries: number; partition: number }>();
  private readonly timing: PollTiming;
  readonly now: () => number;
  /** The consumer waits for a slot (`wantCapacity`): no record lingers. */
  private capacityWanted = false;
  private readonly traces: DocumentTraces;

  constructor(
    private readonly ports: EnginePorts,
    private readonly options: EngineOptions,
    private readonly events: EngineEvents,
    private readonly inFlight: InFlight,
    private readonly shares?: TenantShares,
  ) {
    this.now = ports.now ?? Date.now;
    this.timing = new PollTiming(options, ports.random ?? Math.random, ports.budget);
    this.traces = ports.traces ?? NO_TRACES;
  }

  // ---- admit → create → record: while the consumer holds the input record ----

  /**
   * Submits a new document. Resolves once its outcome is durable: its first state acknowledged, or
   * its dead letter produced. Throws only when Kafka acknowledged neither, so the consumer retries
   * the record; the submission created meanwhile is then recorded, not created again.
   */
  async admit(
    source: SourceRecord,
    event: ArrivalEvent,
    hooks?: AdmissionHooks,
  ): Promise<'started' | 'dead-lettered'> {
    const earlier = this.unrecorded.get(event.event_id);
    if (earlier) {
      await this.recordCreated(earlier);
      // Recorded late (Kafka refused the write at first): the document goes on here only while its
      // partition is still this member's. After a crash or during a revoke another member may own
      // it by now; that owner resumes it from the state, and a run here would upload it twice.
      if (!this.gate.holds(source.partition)) throw new RevocationInProgressError(source.partition);
      this.start(Run.process(earlier, event, source, this.now()));
      return 'started';
    }
    // Nothing is read or created for a partition being revoked, or while Kafka takes no writes.
    this.gate.check(source.partition);
    // Tracing off: no trace, and `trace?.step(...)` builds none of its attributes.
    const trace = this.traces.enabled
      ? this.traces.start(tracedRecord(source, event), this.now())
      : undefined;
    try {
      return await this.admitTraced(source, event, trace, hooks);
    } catch (err) {
      // Thrown: the consumer tries the record again (a new trace then), or it was given up.
      trace?.end('tried again', failureOf(err).message);
      throw err;
    }
  }

  private async admitTraced(
    source: SourceRecord,
    event: ArrivalEvent,
    trace: DocumentTrace | undefined,
    hooks: AdmissionHooks | undefined,
  ): Promise<'started' | 'dead-lettered'> {
    const subject = {
      source,
      event_id: event.event_id,
      submission_id: null,
      attributes: event.attributes,
      ...(event.tenant !== undefined ? { tenant: event.tenant } : {}),
    };

    // A tenant the directory does not know (yet): its record waits for it, in the background once
    // the batch's admission wait is over, then ends in a dead letter to re-drive once it is added.
    if (event.tenant !== undefined && !(await this.tenantKnownWithin(event.tenant, source.partition))) {
      const grace = this.options.unknownTenantGraceMs ?? 0;
      const message = `tenant ${event.tenant} is not in the tenant directory (tenants.directoryFile) after ${grace} ms; re-drive this dead letter once it is added`;
      await this.deadLetter(
        { code: 'unknown_tenant', message },
        subject,
        { stage: 'validate', fallbackCode: 'unknown_tenant', attempts: 1 },
        { trace },
      );
      return 'dead-lettered';
    }
    if (!this.shares) return this.submit(source, event, subject, trace, hooks);
    // Within its tenant's share of the slots, else waiting for its turn (holding no slot meanwhile).
    const waitStarted = this.now();
    const release = await this.shares.acquire(event.tenant ?? '', source.partition, hooks?.waiting);
    if (this.now() > waitStarted)
      trace?.step('wait', waitStarted, { 'docstream.wait.reason': 'tenant_share' });
    try {
      // Waited: its partition may be being revoked by now, or Kafka away.
      this.gate.check(source.partition);
      return await this.submit(source, event, subject, trace, hooks);
    } finally {
      release();
    }
  }

  /** admit's blob → create → record, once the document may take a slot. */
  private async submit(
    source: SourceRecord,
    event: ArrivalEvent,
    subject: DeadLetterSubject,
    trace: DocumentTrace | undefined,
    hooks: AdmissionHooks | undefined,
  ): Promise<'started' | 'dead-lettered'> {
    // admit: the file must be readable before anything is submitted.
    let blob: OpenedBlob;
    const blobStarted = this.now();
    try {
      blob = await this.ports.blobs.resolve(event.blob);
      this.events.onStage?.('blob', this.now() - blobStarted);
      trace?.step('fetch blob', blobStarted, blobAttributes(event.blob.url, blob.size));
    } catch (err) {
      trace?.step('fetch blob', blobStarted, blobAttributes(event.blob.url), failureOf(err).message);
      const outcome = this.blobFailure(event.event_id, source.partition, blobStarted, err);
      // Transient failure before the deadline: thrown, the consumer tries the record again after a back-off.
      if (outcome === 'again') throw err;
      // A blob error's own code names the problem; its retry count is not the API's (a deadline
      // dead letter counts the admission attempts).
      const { failure, attempts } = outcome;
      await this.deadLetter(
        failure,
        subject,
        { stage: 'blob', fallbackCode: 'blob_unreadable', attempts },
        { trace },
      );
      return 'dead-lettered';
    }
    this.blobRetries.delete(event.event_id);

    // create: sent only while the gate is open (checked again right before the request leaves, after
    // the rate limiter's wait); once sent, the create is tracked until its state is recorded.
    let created: CreatedSubmission;
    const createStarted = this.now();
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    let tracked = false;
    let sentAt = 0;
    try {
      try {
        created = await this.apiOf(event.tenant).createSubmission(
          {
            query_id: event.query_id,
            pipeline_configuration: event.pipeline_configuration,
            enable_decision: event.enable_decision,
            enable_submission_characteristics: event.submission_characteristics !== null,
          },
          {
            beforeSend: () => {
              this.gate.check(source.partition);
              if (!tracked) this.gate.track(settled);
              tracked = true;
              sentAt ||= this.now();
            },
            ...(hooks ? { onLimited: hooks.waiting } : {}),
          },
        );
        this.events.onStage?.('create', this.now() - createStarted);
        trace?.step(
          'POST',
          createStarted,
          apiAttributes('POST', ROUTES.submission, 201, createStarted, sentAt),
          undefined,
          'client',
        );
      } catch (err) {
        const f = failureOf(err);
        trace?.step(
          'POST',
          createStarted,
          apiAttributes('POST', ROUTES.submission, f.status, createStarted, sentAt),
          f.message,
          'client',
        );
        await blob.cleanup();
        // Not sent (or not sent again) because the gate closed: the record is tried again later.
        if (err instanceof RevocationInProgressError || err instanceof KafkaUnavailableError) throw err;
        const failure = outlasted(err)
          ? deadlineFailure(err, `the API did not accept the submission within ${this.options.deadlineMs} ms`)
          : err;
        await this.deadLetter(failure, subject, { stage: 'create', fallbackCode: 'api_error' }, { trace });
        return 'dead-lettered';
      }

      // record: the submission exists from here on; its state goes before anything else can fail.
      const state = createdState(source, event, created, this.now(), this.options.awaitedOverride);
      this.unrecorded.set(event.event_id, state);
      try {
        await this.recordCreated(state);
      } catch (err) {
        // Kept: written by the record's next try (or before its partition is released), never
        // created again.
        await blob.cleanup();
        throw err;
      }
      const run = Run.process(state, event, source, this.now());
      run.blob = blob;
      if (trace) run.trace = trace;
      this.start(run);
      return 'started';
    } finally {
      settle();
    }
  }

  /** The API of this tenant's application (its cell, its token); the default credentials' without one. */
  private apiOf(tenant: string | null | undefined): ApiPort {
    if (tenant === undefined || tenant === null) return this.ports.api;
    return this.ports.tenants?.api(tenant) ?? unknownTenantApi(tenant);
  }

  /**
   * Whether the directory knows this tenant, waiting for it at most `unknownTenantGraceMs` (a tenant
   * being onboarded: its directory entry may come after its first events). The wait ends when the
   * partition is being revoked or Kafka takes no writes (`gate.check` throws): the record is then
   * its next owner's, or tried again.
   */
  private async tenantKnownWithin(tenant: string, partition: number): Promise<boolean> {
    const known = () => this.ports.tenants?.known(tenant) ?? false;
    if (known()) return true;
    const until = this.now() + (this.options.unknownTenantGraceMs ?? 0);
    while (!known()) {
      const left = until - this.now();
      if (left <= 0) return false;
      this.gate.check(partition);
      await sleep(Math.min(TENANT_WAIT_STEP_MS, left));
    }
    return true;
  }

  /**
   * Writes the first state of a created submission. A transient failure marks Kafka unavailable
   * (no new create until a write goes through) and keeps the state in `unrecorded`.
   */
  private async recordCreated(state: UnfinishedState): Promise<void> {
    try {
      await this.ports.states.writeState(state);
    } catch (err) {
      if (isTransientKafkaFailure(err))
        this.gate.kafkaUnavailable(`the state topic did not take a write: ${(err as Error).message}`);
      throw err;
    }
    this.unrecorded.delete(state.event_id);
    this.gate.kafkaAvailable();
  }

  /**
   * Before this member gives its partitions up: no create is sent from now on, and every create
   * already sent is recorded, each state written that could not be yet, all within `timeoutMs`.
   * Resolves with how many are still unrecorded then (`releaseUnrecorded` lets them go).
   */
  async recordBeforeRevocation(timeoutMs: number): Promise<number> {
    this.gate.revokeAll();
    const until = this.now() + timeoutMs;
    await within(this.gate.settled(), timeoutMs);
    // A write refused for good (the partition's transactional writer is closed or fenced) is not
    // tried again: only a transient failure is worth the wait.
    const refused = new Set<string>();
    for (;;) {
      const pending = [...this.unrecorded.values()].filter((s) => !refused.has(s.event_id));
      const left = until - this.now();
      if (pending.length === 0 || left <= 0) return this.unrecorded.size;
      await within(
        Promise.all(
          pending.map((s) =>
            this.recordCreated(s).catch((err: unknown) => {
              if (!isTransientKafkaFailure(err)) refused.add(s.event_id);
            }),
          ),
        ),
        left,
      );
      if (this.unrecorded.size > refused.size) await sleep(Math.min(500, Math.max(0, until - this.now())));
    }
  }

  /**
   * Tries to write the states of created submissions not recorded yet (a probe of Kafka while it is
   * taken as unavailable). Resolves once none is left, throws when Kafka still refuses.
   */
  async recordUnrecorded(): Promise<void> {
    const pending = [...this.unrecorded.values()];
    if (pending.length === 0) {
      this.gate.kafkaAvailable();
      return;
    }
    await Promise.all(pending.map((s) => this.recordCreated(s)));
  }

  /**
   * The group settled with these input partitions here: a submission created for another partition
   * whose state could still not be recorded is let go. Its next owner, finding no state, submits the
   * document again; this submission stays empty, as after a crash. Returns how many were let go.
   */
  releaseUnrecorded(owned: Set<number>): number {
    let leftEmpty = 0;
    for (const [eventId, state] of this.unrecorded) {
      if (owned.has(state.input.partition)) continue;
      this.unrecorded.delete(eventId);
      leftEmpty += 1;
      this.ports.logger.warn(
        { event_id: eventId, submission_id: state.submission_id, partition: state.input.partition },
        'partition released before the submission created for this event was recorded: its next owner submits the document again, and this submission stays empty',
      );
    }
    return leftEmpty;
  }

  /** Revoked partitions: their blob-retry bookkeeping goes (the new owner starts its own). */
  forget(partitions: Set<number>): void {
    for (const [eventId, transient] of this.blobRetries) {
      if (partitions.has(transient.partition)) this.blobRetries.delete(eventId);
    }
  }

  /**
   * What a blob error at admission means: `again` for a transient blob store failure while the document's
   * deadline, counted from the event's first admission attempt, is ahead; else the dead letter's failure:
   * the error itself, or past the deadline a deadline failure naming the last error and the tries.
   */
  private blobFailure(
    eventId: string,
    partition: number,
    started: number,
    err: unknown,
  ): 'again' | { failure: unknown; attempts: number } {
    const transient = this.blobRetries.get(eventId) ?? { since: started, tries: 0, partition };
    this.blobRetries.delete(eventId);
    const f = failureOf(err);
    if (f.retriable !== true) return { failure: err, attempts: 1 };
    transient.tries += 1;
    if (this.now() - transient.since < this.options.deadlineMs) {
      this.blobRetries.set(eventId, transient);
      return 'again';
    }
    const what = `the file could not be read within ${this.options.deadlineMs} ms`;
    const code: CatalogueCode = 'deadline';
    const message = `${what} (${transient.tries} tries; last: ${f.code ?? 'error'}: ${f.message})`;
    return { failure: { code, message }, attempts: transient.tries };
  }

  /** Sends the lazy state records still waiting, now: a stop or a revoke does not wait for them. */
  sendLingeringNow(): void {
    this.ports.states.sendLingeringNow?.();
  }

  /** A slot is wanted: ends are recorded at once (a lazy one would hold its slot) until one frees. */
  wantCapacity(): void {
    this.capacityWanted = true;
    this.sendLingeringNow();
  }

  capacityFreed(): void {
    this.capacityWanted = false;
  }

  // ---- from here on in the background: admitted, resumed and replayed documents ----

  start(run: Run): void {
    if (this.traces.enabled)
      run.trace ??= this.traces.start(
        { ...tracedRecord(run.pointer, run.identity), resumed: true, traceparent: run.identity.traceparent },
        this.now(),
      );
    this.inFlight.add(run);
    this.inFlight.track(this.live(run));
  }

  private async live(run: Run): Promise<void> {
    this.armDeadline(run);
    // A resumed document's decision may have been delivered while nobody ran it.
    const delivered = this.awaitsDecision(run)
      ? this.ports.deliveries?.tenantIdsOf(run.state.submission_id)
      : undefined;
    // Every delivery is looked at, so that each refused one is logged.
    if (delivered && delivered.map((tenantId) => this.deliveryFits(run, tenantId)).includes(true))
      run.decisionDelivered = true;
    await this.proceed(run, 0);
  }

  /** Uploads the file unless that was done (try number `uploadTry`), then awaits the results. */
  private async proceed(run: Run, uploadTry: number): Promise<void> {
    if (run.state.status === 'CREATED') {
      const ok = await this.upload(run, uploadTry);
      if (!ok) return;
    }
    if (!run.running) return;
    run.uploadedAt ||= this.now();
    for (const kind of run.state.awaited) {
      if (run.published.has(kind)) continue;
      if (kind === 'decision' && !this.pollsDecision(run)) continue;
      this.awaitResult(run, kind, 0);
    }
    // A resumed document may have published everything before it stopped.
    await this.finish(run);
  }

  // ---- upload ----

  private async upload(run: Run, attempt: number): Promise<boolean> {
    const s = run.state as UnfinishedState;
    const pending = s.pending;
    if (!pending) return true;
    if (!run.running) return false;
    const started = this.now();
    let stage: keyof typeof FAILED_AT = 'blob';
    let stepAt = started;
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
        stepAt = this.now();
        await this.apiOf(run.identity.tenant).putCharacteristics(
          s.submission_id,
          pending.characteristics_url,
          input.characteristics,
        );
        run.trace?.step(
          'PUT',
          stepAt,
          apiAttributes('PUT', ROUTES.characteristics, 200),
          undefined,
          'client',
        );
      }
      stage = 'upload';
      stepAt = this.now();
      if (pending.upload_url) {
        await this.apiOf(run.identity.tenant).upload(pending.upload_url, run.blob, s.submission_id);
        run.trace?.step('PUT', stepAt, apiAttributes('PUT', ROUTES.upload, 200), undefined, 'client');
      }
    } catch (err) {
      const f = failureOf(err);
      if (stage === 'blob') run.trace?.step('fetch blob', stepAt, blobAttributes(input.blob.url), f.message);
      else {
        const route = stage === 'upload' ? ROUTES.upload : ROUTES.characteristics;
        run.trace?.step('PUT', stepAt, apiAttributes('PUT', route, f.status), f.message, 'client');
      }
      // A resumed document's blob store answered with a transient failure: tried again until its deadline timer
      // ends it (`upload/deadline_exceeded`, naming the last blob error).
      if (stage === 'blob' && failureOf(err).retriable === true) {
        this.uploadAgain(run, attempt, err);
        return false;
      }
      // A resumed upload that the server already has (409) is done, not failed.
      if (!(stage === 'upload' && failureOf(err).status === 409)) {
        await run.blob?.cleanup();
        // A transient API failure lasted until the deadline: a deadline dead letter (unless the timer wrote it).
        if (outlasted(err)) await this.expire(run);
        else await this.fail(run, err, stage, FAILED_AT[stage]);
        return false;
      }
    }
    if (run.blob?.size !== undefined) run.traits.bytes = run.blob.size;
    await run.blob?.cleanup();
    run.blob = null;
    this.events.onStage?.('upload', this.now() - started);
    if (!run.running) return false;
    run.uploadedAt = this.now();
    run.uploadedHere = true;
    run.input = null;
    run.state = { ...s, status: 'UPLOADED', pending: undefined, updated_at: this.now() };
    // The polls do not wait for it: the record rides on the next request (or is replaced by the
    // results' state). A crash before it lands resumes from CREATED, and the upload's 409 says done.
    this.inFlight.track(this.record(run, 'lazy'));
    return true;
  }

  /** Schedules the upload of a resumed document whose blob could not be read now (back-off). */
  private uploadAgain(run: Run, attempt: number, err: unknown): void {
    if (!run.running) return;
    const f = failureOf(err);
    run.blobRetries = { tries: attempt + 1, last: `${f.code ?? 'error'}: ${f.message}` };
    const delay = this.timing.backoff(attempt, this.options.pollInitialMs);
    this.ports.logger.warn(
      { event_id: run.eventId, submission_id: run.state.submission_id, attempt: attempt + 1, err: f.message },
      'the file of a resumed document could not be read; retrying',
    );
    this.ports.scheduler.schedule(run.key('upload'), this.now() + delay, () =>
      this.inFlight.track(this.proceed(run, attempt + 1)),
    );
  }

  // ---- poll ----

  /**
   * Schedules poll number `attempt` of one result (`PollTiming` says when). `skipped`: a spare poll
   * found no spare capacity and is placed again.
   */
  private awaitResult(run: Run, kind: Awaitable, attempt: number, skipped = false): void {
    const now = this.now();
    const plan = this.timing.plan(
      kind,
      attempt,
      this.prompted(run, kind),
      run.uploadedAt,
      now,
      skipped,
      run.traits,
    );
    run.attempts.set(kind, attempt);
    if (plan.spare) (run.spare ??= new Set()).add(kind);
    else run.spare?.delete(kind);
    this.ports.scheduler.schedule(run.key(kind), now + plan.delayMs, () =>
      this.inFlight.track(this.poll(run, kind, attempt)),
    );
  }

  /**
   * The result is known to be final: a replay's; the decision once a webhook delivery says so, and the
   * fraud result then too (the decision is made from it).
   */
  private prompted(run: Run, kind: Awaitable): boolean {
    return run.mode === 'replay' || ((kind === 'decision' || kind === 'fraud') && run.decisionDelivered);
  }

  /**
   * A webhook delivery says the document's decision is ready: fetch it now (then publish it like a
   * polled one, `source: webhook`), and the fraud result it was made from. Retries after a failed
   * fetch are the poll loop's, polling or not. `tenantId`: the API's tenant id the delivery names
   * (null: none); one that is not the document's tenant's is refused (`deliveryFits`).
   */
  decisionDelivered(run: Run, tenantId: string | null): void {
    if (!this.awaitsDecision(run) || run.decisionDelivered) return;
    if (!this.deliveryFits(run, tenantId)) return;
    run.decisionDelivered = true;
    // Not uploaded yet: `live` schedules the fetches once it is.
    if (run.state.status === 'CREATED') return;
    this.awaitResult(run, 'decision', 0);
    this.pollNow(run, 'fraud');
  }

  /**
   * Whether a delivery naming `tenantId` may be acted on for this document: not when the directory
   * gives the document's tenant another tenant id, as the delivery is then about another tenant's
   * submission (the document goes on polling as without it). A document without a tenant, a tenant
   * without a `tenantId` or a delivery naming none: it may, as ever. A refusal is logged and counted
   * once per delivery (tenant id) and document; tenant ids are not secrets.
   */
  private deliveryFits(run: Run, tenantId: string | null): boolean {
    const tenant = run.identity.tenant;
    if (tenantId === null || !tenant) return true;
    const expected = this.ports.tenants?.tenantId?.(tenant) ?? null;
    if (expected === null || expected === tenantId) return true;
    const refused = (run.refusedTenantIds ??= new Set());
    if (!refused.has(tenantId)) {
      refused.add(tenantId);
      this.ports.logger.warn(
        {
          submission_id: run.state.submission_id,
          tenant,
          tenant_id: expected,
          delivery_tenant_id: tenantId,
        },
        `webhook delivery refused: it names tenant id ${tenantId}, the document's tenant ${tenant} is ${expected} in the tenant directory; the document goes on as without it`,
      );
      this.events.onDeliveryRefused?.('tenant_mismatch');
    }
    return false;
  }

  /**
   * Polls a result now that another answer says it is final (unless it is out or being fetched); should
   * it not be, its schedule goes on from there.
   */
  private pollNow(run: Run, kind: Awaitable): void {
    if (
      !run.running ||
      !run.state.awaited.includes(kind) ||
      run.published.has(kind) ||
      run.fetching.has(kind)
    )
      return;
    const attempt = run.attempts.get(kind) ?? 0;
    run.spare?.delete(kind);
    this.ports.scheduler.schedule(run.key(kind), this.now(), () =>
      this.inFlight.track(this.poll(run, kind, attempt)),
    );
  }

  private async poll(run: Run, kind: Awaitable, attempt: number, pulled = false): Promise<void> {
    if (!run.running || run.published.has(kind)) return;
    if (this.now() > run.deadlineAt) {
      await this.expire(run);
      return;
    }
    // A spare poll goes only while nobody waits at the limiter (then behind creates); else it is
    // placed again, a gap later.
    const spare = !pulled && (run.spare?.has(kind) ?? false);
    if (spare && !this.timing.hasSpareCapacity()) {
      this.awaitResult(run, kind, attempt, true);
      return;
    }
    run.spare?.delete(kind);
    // What the poll finds says when this kind of result is ready, counted from an upload made here
    // (a resumed document's was earlier, a replay's results were final long ago).
    const learns = run.mode === 'process' && run.uploadedHere;
    const askedAt = this.now() - run.uploadedAt;
    let body: Record<string, unknown>;
    const pollAt = this.now();
    const fetching = this.apiOf(run.identity.tenant).getResult(
      kind,
      run.state.submission_id,
      spare ? { spare } : undefined,
    );
    run.fetching.set(kind, fetching);
    this.pullSiblings(run);
    try {
      body = await fetching;
    } catch (err) {
      run.fetching.delete(kind);
      const notReady = err instanceof ResultNotReady;
      run.trace?.step(
        'GET',
        pollAt,
        pollAttributes(kind, notReady ? 'not_ready' : 'failed', failureOf(err).status, spare),
        notReady ? undefined : failureOf(err).message,
        'client',
      );
      if (!run.running) return;
      if (err instanceof ResultNotReady) {
        if (learns) (run.notReadyAt ??= new Map()).set(kind, askedAt);
        this.awaitResult(run, kind, attempt + 1);
        return;
      }
      const f = failureOf(err);
      if (f.retriable !== false) {
        this.ports.logger.warn(
          { submission_id: run.state.submission_id, kind, err: f.message },
          'poll failed; retrying',
        );
        this.awaitResult(run, kind, attempt + 1);
        return;
      }
      await this.fail(run, err, 'poll', 'poll_failed', attempt + 1);
      return;
    }
    run.fetching.delete(kind);
    run.trace?.step('GET', pollAt, pollAttributes(kind, 'ready', 200, spare), undefined, 'client');
    if (learns)
      this.timing.observe(kind, run.notReadyAt?.get(kind) ?? 0, this.now() - run.uploadedAt, run.traits);
    // The decision is made from the fraud result: that is final too.
    if (kind === 'decision') this.pollNow(run, 'fraud');
    await this.alongsideSiblings(run);
    if (!run.running) return;
    await this.publish(run, kind, body, kind === 'decision' && run.decisionDelivered ? 'webhook' : 'poll');
  }

  /** Starts the polls of this document's other results that are due within `SIBLING_PULL_MS`. */
  private pullSiblings(run: Run): void {
    for (const other of run.state.awaited) {
      if (run.published.has(other) || run.fetching.has(other)) continue;
      if (this.ports.scheduler.takeEarly(run.key(other), SIBLING_PULL_MS))
        this.inFlight.track(this.poll(run, other, run.attempts.get(other) ?? 0, true));
    }
  }

  /**
   * Results of one document usually become ready together and are then fetched together: each one
   * fetched waits (at most `SIBLING_WAIT_MS`) for the others still being fetched, so that all are
   * published in the same turn of the event loop. The sender puts what one turn sends in one Kafka
   * request, and the states recorded after them collapse into one record: at a trickle a document
   * costs two requests here instead of six (three results, each followed by its state).
   */
  private async alongsideSiblings(run: Run): Promise<void> {
    if (run.fetching.size > 0) await within(Promise.allSettled(run.fetching.values()), SIBLING_WAIT_MS);
  }

  private awaitsDecision(run: Run): boolean {
    return (
      run.mode === 'process' &&
      run.running &&
      run.state.awaited.includes('decision') &&
      !run.published.has('decision')
    );
  }

  private pollsDecision(run: Run): boolean {
    return run.mode === 'replay' || this.options.decisionPolling || run.decisionDelivered;
  }

  // ---- publish ----

  private async publish(
    run: Run,
    kind: Awaitable,
    body: Record<string, unknown>,
    source: 'poll' | 'webhook',
  ): Promise<void> {
    // A poll and a webhook fetch of one result at once: one publishes it.
    if (run.published.has(kind) || run.publishing.has(kind)) return;
    run.publishing.add(kind);
    try {
      const reportUrl = kind === 'fraud' && this.options.attachReportUrl ? await this.reportUrl(run) : null;
      const publishAt = this.now();
      const traceparent = run.trace?.traceparent;
      const topic = this.options.traceTopics?.[kind];
      try {
        await this.ports.out.publishResult(
          kind,
          traceparent ? { ...run.identity, traceparent } : run.identity,
          body,
          {
            report_url: reportUrl,
            source,
            inputPartition: run.state.input.partition,
          },
        );
        run.trace?.step(
          `send ${topic ?? kind}`,
          publishAt,
          sendAttributes(topic, { 'docstream.result': kind, 'docstream.result.via': source }),
          undefined,
          'producer',
        );
      } catch (err) {
        run.trace?.step(
          `send ${topic ?? kind}`,
          publishAt,
          sendAttributes(topic, { 'docstream.result': kind }),
          failureOf(err).message,
          'producer',
        );
        // Too large for its topic: retrying cannot help, the document ends in a dead letter.
        if (isMessageTooLarge(err)) {
          await this.fail(run, err, 'publish', 'result_too_large');
          return;
        }
        this.ports.logger.warn({ kind, err: failureOf(err).message }, 'publishing a result failed; retrying');
        this.awaitResult(run, kind, (run.attempts.get(kind) ?? 0) + 1);
        return;
      }
      this.events.onPublished?.(kind, run.identity, body);
      run.published.add(kind);
      // Stopping, the partition is still this instance's: what was just published is recorded, so its
      // next owner does not publish it again. Revoked, it has a new owner already: nothing is written.
      if (run.mode === 'process' && run.phase !== 'revoked') await this.recordPublished(run);
      await this.finish(run);
    } finally {
      run.publishing.delete(kind);
    }
  }

  /** The fraud report's URL; null when there is none for this result (409) or it cannot be had now. */
  private async reportUrl(run: Run): Promise<string | null> {
    try {
      return await this.apiOf(run.identity.tenant).getReportUrl(run.state.submission_id);
    } catch (err) {
      // 409: the report does not exist for this result (not successful or skipped); publish without it.
      if (failureOf(err).status !== 409)
        this.ports.logger.warn({ err: failureOf(err).message }, 'report URL unavailable');
      return null;
    }
  }

  /**
   * Records what was published so far, unless the document is complete and finishes now (its DONE
   * state says it). A stopped one does not finish here: its next owner finds everything published
   * and finishes it.
   */
  private async recordPublished(run: Run): Promise<void> {
    // Failed at its deadline meanwhile: the FAILED state stands.
    if (run.endStarted) return;
    const s = run.state;
    if (s.status === 'CREATED' || s.status === 'UPLOADED')
      run.state = { ...s, published: [...run.published], updated_at: this.now() };
    if (!run.isComplete || run.cancelled) await this.record(run, 'lazy');
  }

  // ---- finish ----

  /** Ends a document whose results are all published: DONE (a replay: its generation recorded). */
  private async finish(run: Run): Promise<void> {
    if (!run.running || !run.isComplete) return;
    run.transitionTo('finishing');
    if (run.mode === 'replay') {
      // Recording the generation makes a replay re-emit once, also when it is itself interrupted.
      if (run.state.status === 'DONE' && run.replayGeneration > (run.state.generation ?? 0)) {
        run.state = { ...run.state, generation: run.replayGeneration };
        await this.record(run);
      }
      this.events.onFinished?.(run.summary(), 'replayed');
      run.trace?.end('replayed');
      this.inFlight.remove(run, 'ended');
      return;
    }
    run.state = run.finished('DONE', this.now());
    await this.record(run, 'lazy');
    this.events.onFinished?.(run.summary(), 'done');
    run.trace?.end('done');
    this.inFlight.remove(run, 'ended');
    if (this.options.deleteAfterPublish) this.inFlight.track(this.deleteSubmission(run, 0));
  }

  private async deleteSubmission(run: Run, attempt: number): Promise<void> {
    try {
      await this.apiOf(run.identity.tenant).deleteSubmission(run.state.submission_id);
    } catch (err) {
      const f = failureOf(err);
      if (f.status === 404) return;
      if ((f.status === 409 || f.retriable) && attempt < 8) {
        const delay = this.timing.backoff(attempt, this.options.pollInitialMs);
        this.ports.scheduler.schedule(run.key('delete'), this.now() + delay, () =>
          this.inFlight.track(this.deleteSubmission(run, attempt + 1)),
        );
        return;
      }
      await this.deadLetter(
        err,
        { source: null, ...run.subject() },
        { stage: 'delete', fallbackCode: 'delete_failed', attempts: attempt + 1 },
      );
    }
  }

  // ---- or fail: a dead letter, state FAILED ----

  /**
   * Every document ends by its deadline, whatever polls or webhooks do: a timer of its own, at
   * creation + deadline (a replay: from the start of the replay, its results being final already).
   */
  private armDeadline(run: Run): void {
    const from = run.mode === 'replay' ? this.now() : run.createdAt;
    run.deadlineAt = from + this.options.deadlineMs;
    this.ports.scheduler.schedule(run.key('deadline'), run.deadlineAt, () =>
      this.inFlight.track(this.expire(run)),
    );
  }

  /**
   * Fails a document past its deadline: `upload/deadline_exceeded` when its file never reached the
   * API, `decision/deadline` when the decision is all that is missing, else `poll/deadline_exceeded`
   * naming every result that is not final.
   */
  private async expire(run: Run): Promise<void> {
    const missing = run.state.awaited.filter((k) => !run.published.has(k));
    if (missing.length === 0 || !run.running) return;
    const polls = Math.max(0, ...missing.map((k) => run.attempts.get(k) ?? 0));
    const after = `${this.options.deadlineMs} ms`;
    if (run.state.status === 'CREATED' && run.mode === 'process') {
      const transient = run.blobRetries;
      const why = transient
        ? `its blob could not be read: ${transient.tries} tries; last: ${transient.last}`
        : 'the API or its upload host did not answer';
      const message = `file not uploaded within ${after} (${why})`;
      await this.fail(run, { code: 'deadline_exceeded', message }, 'upload', 'deadline_exceeded');
      return;
    }
    if (missing.length === 1 && missing[0] === 'decision') {
      const refused = run.refusedTenantIds?.size
        ? ' (decision polling is off and the webhook deliveries named another tenant id than its tenant’s)'
        : ' (decision polling is off and no webhook delivery arrived)';
      const why = this.pollsDecision(run) ? '' : refused;
      const message = `decision not received within ${after}${why}`;
      await this.fail(run, { code: 'deadline', message }, 'decision', 'deadline', polls);
      return;
    }
    const message = `${missing.join(', ')} result not final after ${after}`;
    await this.fail(run, { code: 'deadline_exceeded', message }, 'poll', 'deadline_exceeded', polls);
  }

  /** Dead-letters a running document and records it FAILED (never submitted again unless reprocessed). */
  private async fail(
    run: Run,
    err: unknown,
    stage: DeadLetterStage,
    fallbackCode: CatalogueCode,
    attempts?: number,
  ): Promise<void> {
    // One end per document: a deadline and a failed poll at once write one dead letter.
    if (!run.running) return;
    run.transitionTo('finishing');
    await this.deadLetter(
      err,
      { source: await this.sourceOf(run), ...run.subject() },
      { stage, fallbackCode, ...(attempts === undefined ? {} : { attempts }) },
      // Exactly-once: the dead letter and the FAILED state below go in one transaction.
      { stateFollows: run.mode === 'process', trace: run.trace },
    );
    if (run.mode === 'process') {
      run.state = run.finished('FAILED', this.now());
      await this.record(run);
    }
    this.events.onFinished?.(run.summary(), 'failed');
    this.inFlight.remove(run, 'ended');
  }

  /** `trace`: the document's, which the dead letter's traceparent names and which ends with it. */
  private async deadLetter(
    err: unknown,
    subject: DeadLetterSubject,
    context: DeadLetterContext,
    options: { stateFollows?: boolean; trace?: DocumentTrace | undefined } = {},
  ): Promise<void> {
    const { trace, ...outOptions } = options;
    const traceparent = trace?.traceparent;
    const traced =
      traceparent && subject.source ? { ...subject, source: { ...subject.source, traceparent } } : subject;
    const deadLetter = deadLetterOf(err, traced, context);
    const topic = this.options.traceTopics?.dlq;
    const sentAt = this.now();
    const why = `${context.stage}/${deadLetter.error_code}`;
    const attributes = sendAttributes(topic, {
      'docstream.dead_letter.stage': context.stage,
      'docstream.dead_letter.code': deadLetter.error_code,
    });
    try {
      await this.ports.out.deadLetter(deadLetter, outOptions);
    } catch (sendErr) {
      trace?.step(
        `send ${topic ?? 'dead letter'}`,
        sentAt,
        attributes,
        failureOf(sendErr).message,
        'producer',
      );
      throw sendErr;
    }
    trace?.step(`send ${topic ?? 'dead letter'}`, sentAt, attributes, undefined, 'producer');
    trace?.end('dead-lettered', why);
    this.events.onDeadLetter?.(context.stage, deadLetter.error_code);
  }

  /**
   * The input record of a running document, read back by its pointer for a dead letter; when it is
   * gone (or cannot be read now) the dead letter still names it, without its bytes.
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

  // ---- record: every step's state, retried until Kafka acknowledges it ----

  /**
   * Writes the run's latest state, retrying until Kafka acknowledges it (e.g. through a broker
   * restart): a background step that gave up here would leave the document in flight forever.
   * `lazy`: a step past the document's first state, which nothing waits for soon (its end, results
   * published, the upload): it may wait a moment to go with other records (`StatePort`). A stopped
   * or revoked run's record never waits, nor one made while the consumer waits for a slot.
   */
  private async record(run: Run, pace: 'now' | 'lazy' = 'now'): Promise<void> {
    const lazy = () => pace === 'lazy' && !run.cancelled && !this.capacityWanted;
    // The first try on its own: nearly every record is acknowledged at once, and the retry loop's
    // closures and options, made for every record, were a measurable part of what a document allocates.
    let first: unknown;
    try {
      await this.ports.states.writeState(run.state, { lazy: lazy() });
      return;
    } catch (err) {
      // A revoked or stopped run: the next owner resumes from the last state that was recorded.
      if (run.cancelled) return;
      first = err;
    }
    const warn = (err: unknown, attempt: number) =>
      this.ports.logger.warn(
        { event_id: run.eventId, attempt, err: failureOf(err).message },
        'recording state failed; retrying',
      );
    warn(first, 0);
    // From the second try on, the same waits as one loop over every try: the first back-off, then longer.
    await retry(() => this.ports.states.writeState(run.state, { lazy: lazy() }), {
      backoff: { initialMs: this.options.pollInitialMs, maxMs: this.options.pollMaxMs },
      waitFirst: true,
      random: this.ports.random,
      classify: () => (run.cancelled ? { retry: false } : { retry: true }),
      onRetry: (err, tries) => warn(err, tries),
    }).catch((err: unknown) => {
      if (!run.cancelled) throw err;
    });
  }
}

/** A transient API failure outlasted the call: the client gave up at the document's deadline. */
function outlasted(err: unknown): err is ApiError {
  return err instanceof ApiError && err.budgetSpent;
}

/** A deadline dead letter's failure that names the API's last answer and how often it was tried. */
function deadlineFailure(
  err: ApiError,
  what: string,
): { code: CatalogueCode; message: string; attempts: number } {
  return {
    code: 'deadline',
    message: `${what} (${err.attempts} tries; last: ${err.message})`,
    attempts: err.attempts,
  };
}

/** What a document span names of its record (never the event's attributes or blob). */
function tracedRecord(
  where: { topic: string; partition: number; offset: string; traceparent?: string | null },
  doc: { event_id: string; tenant?: string | null | undefined },
): TracedRecord {
  return {
    topic: where.topic,
    partition: where.partition,
    offset: where.offset,
    traceparent: where.traceparent ?? null,
    eventId: doc.event_id,
    tenant: doc.tenant,
  };
}

/** A blob's scheme and size only: its address may name a person or carry a signature. */
function blobAttributes(url: string, bytes?: number): Attributes {
  const colon = url.indexOf(':');
  return {
    'url.scheme': colon > 0 ? url.slice(0, colon) : 'file',
    ...(bytes !== undefined ? { 'docstream.blob.bytes': bytes } : {}),
  };
}

/** An API call by the HTTP conventions (its route, never its address); the limiter's wait before a create. */
function apiAttributes(
  method: string,
  route: string,
  status: number | undefined,
  startedAt?: number,
  sentAt?: number,
): Attributes {
  return {
    'http.request.method': method,
    'url.template': route,
    ...(status !== undefined ? { 'http.response.status_code': status } : {}),
    ...(startedAt !== undefined && sentAt ? { 'docstream.limiter.wait_ms': sentAt - startedAt } : {}),
  };
}

function pollAttributes(
  kind: Awaitable,
  outcome: string,
  status: number | undefined,
  spare: boolean,
): Attributes {
  return {
    ...apiAttributes('GET', ROUTES.result(kind), status),
    'docstream.poll.outcome': outcome,
    ...(spare ? { 'docstream.poll.spare': true } : {}),
  };
}

/** A Kafka send by the messaging conventions. */
function sendAttributes(topic: string | undefined, extra: Attributes): Attributes {
  return {
    'messaging.system': 'kafka',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    ...(topic ? { 'messaging.destination.name': topic } : {}),
    ...extra,
  };
}
