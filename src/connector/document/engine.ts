/**
 * Which documents run on this instance. `admit` takes an input record and decides from its recorded
 * state: a new document (or one to reprocess) starts its life (`document-life.ts`: admit → create →
 * record → upload → poll → publish → finish); an unfinished one is resumed from its state; a
 * finished one publishes nothing again, unless `docstream replay` moved the group back over it (its
 * partition's replay marker), then its results are re-emitted, once per replay. After an assignment
 * `resume` continues the partition's unfinished documents; `revoke` and `stop` let them go (their
 * state is durable, the next owner resumes them). How many documents may be in flight is the
 * consumer loop's limit (`consumer-loop.ts`), read from `inFlight`. What it guarantees the consumer
 * loop is told at `DocumentEngine`.
 */
import { deadLetterOf } from '../outputs/dead-letters.js';
import type { CreateGate } from './create-gate.js';
import { DocumentLife } from './document-life.js';
import { InFlight } from './in-flight.js';
import { RevocationInProgressError } from './create-gate.js';
import { TenantShares } from './tenant-shares.js';
import type { AdmissionHooks, EngineEvents, EngineOptions, EnginePorts } from './ports.js';
import { finishedOf, identityOf, Run } from './run.js';
import { anotherBlob, blobFingerprint } from '../state/blob-fingerprint.js';
import type { Recorded } from '../state/store.js';
import type { UnfinishedState } from '../state/document-state.js';
import type { ReplayMarker } from '../state/replay-marker.js';
import type { ArrivalEvent, DocumentIdentity, SourceRecord } from '../types.js';

export type { EngineOptions };

export type AdmitOutcome =
  'started' | 'resumed' | 'replayed' | 'running' | 'dead-lettered' | 'skipped' | 'published-before';

/** What the engine knows of an arriving record's document: its state and its partition's replay marker. */
export interface Existing {
  recorded: Recorded | undefined;
  marker: ReplayMarker | undefined;
}

/**
 * Guarantees to the consumer loop:
 * - `admit` resolves only once the record's outcome is durable: its state (with the submission id)
 *   acknowledged by Kafka, or a dead letter produced. Its offset may then be committed.
 * - A document whose state exists is never submitted again (unless the event says `reprocess`); a
 *   copy of its event pointing at another blob ends in a dead letter (`event_id_reused`), never silently.
 * - Every failure ends in a dead letter (`dead-letters.ts`) with stage, code, message, HTTP status
 *   and attempts.
 */
export class DocumentEngine {
  private readonly inFlightRuns: InFlight;
  private readonly life: DocumentLife;
  /** With a tenant directory: each tenant's share of the in-flight slots (`tenant-shares.ts`). */
  private readonly shares: TenantShares | undefined;
  private readonly capacityListeners = new Set<() => void>();
  /**
   * Per input partition, how many times it was revoked here: a step that awaited goes on for a
   * partition only while this count is the one it saw before the await.
   */
  private readonly revocations = new Map<number, number>();
  private stopped = false;

  constructor(
    private readonly ports: EnginePorts,
    options: EngineOptions,
    private readonly events: EngineEvents = {},
  ) {
    this.inFlightRuns = new InFlight(ports.scheduler, ports.logger, () => {
      this.life.capacityFreed();
      this.shares?.pump();
      for (const listener of this.capacityListeners) listener();
    });
    const shares = options.tenantShares;
    this.shares = shares
      ? new TenantShares({
          ...shares,
          running: () => this.inFlightRuns.tenants(),
          onWaiting: () => {
            for (const listener of this.capacityListeners) listener();
          },
        })
      : undefined;
    this.life = new DocumentLife(ports, options, events, this.inFlightRuns, this.shares);
  }

  /**
   * Capacity freed: a document finished or was dropped, so a slot is free. The consumer loop listens
   * to resume a paused input. Returns the unsubscribe.
   */
  onCapacityFreed(listener: () => void): () => void {
    this.capacityListeners.add(listener);
    return () => this.capacityListeners.delete(listener);
  }

  /**
   * The consumer waits for a slot: a document ending now records its end at once instead of letting
   * it linger for company, and what lingers goes now, until a slot frees.
   */
  wantCapacity(): void {
    this.life.wantCapacity();
  }

  get inFlight(): number {
    return this.inFlightRuns.size;
  }

  /** Documents running here by tenant (those without one are not counted). */
  inFlightByTenant(): Map<string, number> {
    return new Map([...this.inFlightRuns.tenants()].filter(([tenant]) => tenant !== ''));
  }

  /** New documents waiting for their tenant's share of the slots, by tenant (those without one as ''). */
  waitingByTenant(): Map<string, number> {
    return this.shares?.waitingByTenant() ?? new Map();
  }

  /**
   * New documents waiting for their tenant's share that hold no slot: the consumer does not count
   * them against `connector.maxInFlight` (`tenant-shares.ts`).
   */
  get uncounted(): number {
    return this.shares?.uncounted ?? 0;
  }

  /** Documents of this input partition still running here. */
  unfinishedOn(partition: number): number {
    return this.inFlightRuns.on(partition);
  }

  /**
   * Takes one input record. Resolves once its outcome is durable; throws only when Kafka itself could
   * not record it (state or dead letter not acknowledged), so the consumer retries the record.
   */
  async admit(
    source: SourceRecord,
    event: ArrivalEvent,
    existing: Existing = { recorded: undefined, marker: undefined },
    hooks?: AdmissionHooks,
  ): Promise<AdmitOutcome> {
    const recorded = existing.recorded;
    if (!recorded || event.reprocess) return this.life.admit(source, event, hooks);
    const known = 'unfinished' in recorded ? recorded.unfinished : recorded.finished;
    if (anotherBlob(known.blob, blobFingerprint(event.blob))) {
      await this.anotherBlob(source, event, known.submission_id);
      return 'dead-lettered';
    }
    if (this.inFlightRuns.has(event.event_id)) return 'running';
    if ('unfinished' in recorded) {
      this.life.start(Run.process(recorded.unfinished, event, source, this.life.now()));
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
    const identity = identityOf(event, source, done.submission_id);
    const run = new Run(finishedOf(done, source), 'replay', identity, null, null, this.life.now());
    run.replayGeneration = marker.generation;
    this.life.start(run);
    return 'replayed';
  }

  /**
   * An `event_id` names one document: a copy of its event that points at another blob is not
   * submitted (the first blob is, or was, analysed), and says so in a dead letter, whether it came with the
   * first copy or long after it (docs/semantics.md, "The same event twice").
   */
  private async anotherBlob(source: SourceRecord, event: ArrivalEvent, submissionId: string): Promise<void> {
    const message =
      `event ${event.event_id} was submitted before (submission ${submissionId}) with another blob; ` +
      'this record is not analysed: send it with reprocess: true, or under a new event_id';
    const deadLetter = deadLetterOf(
      { code: 'event_id_reused', message },
      {
        source,
        event_id: event.event_id,
        submission_id: null,
        attributes: event.attributes,
        ...(event.tenant !== undefined ? { tenant: event.tenant } : {}),
      },
      { stage: 'validate', fallbackCode: 'event_id_reused', attempts: 1 },
    );
    await this.ports.out.deadLetter(deadLetter);
    this.events.onDeadLetter?.('validate', 'event_id_reused');
  }

  /**
   * Continues documents recorded in state but not finished (after a restart or a rebalance): each
   * one's input record is read back for its identity and, while its upload is pending, its blob and
   * characteristics. A document whose input is gone keeps going with what the state knows (its
   * pending upload then fails into a dead letter). A document whose partition was revoked (or the
   * engine stopped) while the input was read back is not started: its new owner resumes it. Throws
   * when the input topic cannot be read now.
   */
  async resume(states: UnfinishedState[]): Promise<void> {
    const toResume = states.filter((s) => !this.inFlightRuns.has(s.event_id));
    if (toResume.length === 0) return;
    const epochs = toResume.map((s) => this.revocationsOf(s.input.partition));
    const inputs = await this.ports.inputs.recall(toResume.map((s) => s.input));
    toResume.forEach((s, i) => {
      if (this.stopped || this.revocationsOf(s.input.partition) !== epochs[i]) return;
      // Its record may have arrived (and resumed it) while the input was read back.
      if (this.inFlightRuns.has(s.event_id)) return;
      const recalled = inputs[i];
      if (recalled && recalled.event.event_id === s.event_id) {
        this.life.start(Run.process(s, recalled.event, recalled.source, this.life.now()));
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
        ...(s.tenant !== undefined ? { tenant: s.tenant } : {}),
      };
      this.life.start(new Run(s, 'process', identity, null, null, this.life.now()));
    });
  }

  /**
   * Stops the work of documents of the given partitions; their state is durable, the new owner
   * resumes. Returns how many were running.
   */
  revoke(partitions: Iterable<number>): number {
    const set = new Set(partitions);
    for (const p of set) this.revocations.set(p, this.revocationsOf(p) + 1);
    const runs = this.inFlightRuns.runs(set);
    for (const run of runs) this.inFlightRuns.remove(run, 'revoked');
    this.shares?.drop(set, (partition) => new RevocationInProgressError(partition));
    this.life.forget(set);
    this.life.sendLingeringNow();
    return runs.length;
  }

  private revocationsOf(partition: number): number {
    return this.revocations.get(partition) ?? 0;
  }

  /**
   * The group settled with these input partitions here: creates go again for them, and what was
   * created for others and could not be recorded is let go (counted: those submissions stay empty).
   */
  assigned(partitions: number[]): void {
    this.life.gate.assigned(partitions);
    const leftEmpty = this.life.releaseUnrecorded(new Set(partitions));
    if (leftEmpty > 0) this.events.onSubmissionsLeftEmpty?.(leftEmpty);
  }

  /** No create is sent until the next `assigned` (the consumer left its group). */
  holdCreates(): void {
    this.life.gate.revokeAll();
  }

  /** Whether a create may be sent now, and the creates out (`create-gate.ts`). */
  get gate(): CreateGate {
    return this.life.gate;
  }

  /**
   * Before this member releases its partitions: no create is sent from now on, and the creates
   * already sent are recorded within `timeoutMs`. Resolves with how many could not be recorded.
   */
  recordBeforeRevocation(timeoutMs: number): Promise<number> {
    return this.life.recordBeforeRevocation(timeoutMs);
  }

  /** Writes the states of created submissions not recorded yet; throws while Kafka refuses them. */
  recordUnrecorded(): Promise<void> {
    return this.life.recordUnrecorded();
  }

  /** Stops everything; resolves when no step is half-way (an upload or a publish in progress). */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    this.shares?.dropAll((partition) => new RevocationInProgressError(partition));
    for (const run of this.inFlightRuns.runs()) this.inFlightRuns.remove(run, 'stopped');
    this.life.sendLingeringNow();
    await this.inFlightRuns.settle(timeoutMs);
  }

  /**
   * A webhook delivery (received by any instance) says this submission's decision is ready: fetched and
   * published here if this instance runs the document and still waits for it, else nothing.
   * `tenantId`: the API's tenant id the delivery names (null: none); one that is not the document's
   * tenant's is refused (`DocumentLife.decisionDelivered`).
   */
  decisionReady(submissionId: string, tenantId: string | null = null): void {
    const run = this.inFlightRuns.ofSubmission(submissionId);
    if (run) this.life.decisionDelivered(run, tenantId);
  }
}
