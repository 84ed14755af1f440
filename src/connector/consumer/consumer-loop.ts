/**
 * The consumer loop: takes arrival and feedback records batch by batch and admits at most
 * `maxInFlight` documents (pausing the input topic when full, resuming with hysteresis); it alone
 * owns the in-flight limit. On a rebalance it drops what left and has what came prepared
 * (`partition-preparation.ts`: state restored, unfinished documents resumed) before taking its
 * records; its commits (`offset-commits.ts`) move each offset to the highest below which every
 * outcome is durable. A batch handler waits for its admissions only up to `admissionWaitMs`: a slow
 * one goes on in the background (its offset committed once it is durable), so that it holds back
 * neither the rest of its partition nor the other partitions, which kafkajs fetches only once every
 * batch handler returned. Whatever a record's handler throws ends as `record-settling.ts` says:
 * never a crash of the loop. It reaches Kafka, the engine and the state only through the narrow
 * interfaces of `loop-interfaces.ts`, so it is unit-tested with fakes (`consumer-loop.test.ts`).
 */
import type { BatchControl, GroupJoin, IncomingBatch, IncomingMessage } from '../../kafka/consumer.js';
import { retry } from '../../util/retry.js';
import { within } from '../../util/within.js';
import type { LoopConsumer, ConsumerLoopOptions, OutageHandling } from './loop-interfaces.js';
import { OffsetCommits, type CommitReason } from './offset-commits.js';
import type { PartitionOffsets } from './offsets.js';
import { PartitionLeftError, PartitionPreparation } from './partition-preparation.js';
import { settleRecord } from './record-settling.js';

export class ConsumerLoop {
  private consumer: LoopConsumer | null = null;
  private readonly commits: OffsetCommits;
  private readonly preparation: PartitionPreparation;
  private admitting = 0;
  /** Batch handlers waiting for a free slot: woken whenever one may have freed. */
  private readonly capacityWaiters = new Set<() => void>();
  private inputPaused = false;
  /** Set while the input is paused for an outage; resolves when the probe succeeded. */
  private outage: Promise<void> | null = null;
  /** Set by stop: no record is taken, and batch handlers hold until `released`. */
  private holding: { released: Promise<void>; release: () => void } | null = null;
  /** Batch handlers running now, feedback records being handled, and who waits for none (`idle`). */
  private handling = 0;
  /** Batches handed to this loop so far (the lag timer's sign of activity). */
  batchesSeen = 0;
  private settlingFeedback = 0;
  private readonly idleWaiters: Array<() => void> = [];
  /** Waits cut short by a stop (a record's back-off, a batch's wait for its admissions). */
  private readonly sleepers = new Set<() => void>();
  /** Closes what writes the state records of the partitions left at a crash (`LoopState.leave`). */
  private closeLeft: (() => void) | null = null;

  constructor(private readonly o: ConsumerLoopOptions) {
    this.commits = new OffsetCommits({
      arrived: o.topics.arrived,
      unfinishedOn: (p) => o.engine.unfinishedOn(p),
      onDrained: (partitions) => o.groupShare?.onDrained(partitions),
      logger: o.logger,
    });
    this.preparation = new PartitionPreparation({
      state: o.state,
      engine: o.engine,
      logger: o.logger,
      ...(o.committedOffsets ? { committedOffsets: o.committedOffsets } : {}),
      startAt: (partition, offset) =>
        this.commits.tracker(o.topics.arrived).partition(partition).startAt(offset),
    });
  }

  /** Starts driving this consumer (call before its first batch), committing every `commitIntervalMs`. */
  attach(consumer: LoopConsumer): void {
    this.consumer = consumer;
    this.commits.attach(consumer);
    if (this.o.commitIntervalMs !== undefined) this.commits.startInterval(this.o.commitIntervalMs);
  }

  /**
   * No record is taken after this; running admissions finish (`idle`). The instance stays in its
   * group, a batch fetched meanwhile held (`hold`), until the caller made its final commit and calls
   * `release`.
   */
  stop(): void {
    this.commits.stop();
    this.preparation.stop();
    this.wakeCapacityWaiters();
    for (const wake of [...this.sleepers]) wake();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holding = { released, release };
  }

  private get stopping(): boolean {
    return this.holding !== null;
  }

  /** The final commit is made: held batch handlers return, so the consumer can stop and leave. */
  release(): void {
    this.holding?.release();
  }

  /**
   * Resolves once no batch handler runs and no record is being handled (in the background too): every
   * admission started is durable, or given up. The caller bounds the wait (a slow blob's admission).
   */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.handling === 0 && this.admitting === 0 && this.settlingFeedback === 0;
  }

  private wakeIdle(): void {
    if (this.isIdle()) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  get paused(): boolean {
    return this.inputPaused;
  }

  /**
   * Called before the consumer (re)joins its group, which releases every partition it holds: no
   * create is sent from now on; the creates already sent are recorded and the offsets that made
   * durable are committed, all within `timeoutMs` (a submission still unrecorded then stays empty).
   * After a crash this also records for the partitions the member left (`LoopState.leave`).
   */
  async beforeRejoin(timeoutMs: number): Promise<void> {
    try {
      await this.recordBeforeRejoin(timeoutMs);
    } finally {
      // The barrier recorded what it could for the partitions left at a crash: their writer closes.
      this.endLeft();
    }
  }

  private async recordBeforeRejoin(timeoutMs: number): Promise<void> {
    const record = this.o.engine.recordBeforeRevocation;
    // Stopping too: a rebalance that meets the stop hands this member's partitions on (it joins as
    // leaving), and what it created for them but did not record yet would stay empty.
    if (!record) return;
    const started = Date.now();
    const unrecorded = await record.call(this.o.engine, timeoutMs);
    // The admissions just recorded complete their offsets as their handlers return.
    await new Promise((resolve) => setImmediate(resolve));
    // Not `waitAtMost`, which a stop ends at once: the commit is what makes the records durable.
    await within(this.commits.commit('before rejoin'), Math.max(0, started + timeoutMs - Date.now()));
    const ms = Date.now() - started;
    if (unrecorded > 0)
      this.o.logger.warn(
        { unrecorded, ms },
        'partitions released before every submission created for them was recorded (Kafka did not take the writes in time)',
      );
    else
      this.o.logger.info(
        { ms },
        'submissions created recorded and offsets committed before rejoining the group',
      );
  }

  private endLeft(): void {
    const close = this.closeLeft;
    this.closeLeft = null;
    close?.();
  }

  /** The group's answer to a rebalance: drop what was lost, prepare what was gained, start unpaused. */
  onGroupJoin(join: GroupJoin): void {
    const { arrived, feedback } = this.o.topics;
    const removed = join.removed[arrived] ?? [];
    // The consumer crashed and left its group (`memberId` empty): nothing is created until it joined
    // again, and what it created but could not record is written before then (`beforeRejoin`).
    const left = join.memberId === '';
    if (left) this.o.engine.holdCreates?.();
    else {
      // Joined: the writer of the partitions left at a crash closes now if no barrier closed it
      // (another kafkajs), before any partition is prepared again.
      this.endLeft();
      this.o.engine.assigned?.(join.assignment[arrived] ?? []);
    }
    let stopped = 0;
    if (removed.length > 0) {
      // Every step of a running document is recorded as it happens: stopping them loses nothing.
      stopped = this.o.engine.revoke(removed) ?? 0;
      if (left && this.o.state.leave) {
        this.endLeft();
        this.closeLeft = this.o.state.leave(removed);
      } else this.o.state.revoke(removed);
      for (const p of removed) {
        this.commits.drop(arrived, p);
        this.preparation.forget(p);
      }
    }
    for (const p of join.removed[feedback] ?? []) this.commits.drop(feedback, p);
    this.preparation.gained(join.added[arrived] ?? []);
    // What was added and removed: a partition kept (the sticky assignor) keeps its documents and state.
    this.o.logger.info(
      // `stopped`: documents of the removed partitions that were running (their new owners resume them).
      { assignment: join.assignment, added: join.added, removed: join.removed, stopped },
      'partitions assigned',
    );
    this.o.groupShare?.onJoin(join.assignment[arrived] ?? []);
    // A fresh assignment starts unpaused; the next batch pauses again if the instance is still full.
    this.inputPaused = false;
    if (this.outage) {
      this.consumer?.pause(arrived, join.assignment[arrived] ?? []);
      this.consumer?.pause(feedback, join.assignment[feedback] ?? []);
      return;
    }
    this.consumer?.resume(arrived, join.assignment[arrived] ?? []);
  }

  /** The batch handler to give the Kafka consumer (`autoResolve: false`). */
  readonly onBatch = async (batch: IncomingBatch, control: BatchControl): Promise<void> => {
    this.batchesSeen += 1;
    if (this.holding) return this.hold(this.holding.released, control);
    this.handling += 1;
    try {
      await this.handleBatch(batch, control);
    } finally {
      this.handling -= 1;
      this.wakeIdle();
    }
  };

  /**
   * After stop a batch is neither taken nor fetched again and again (kafkajs fetches the next one only
   * once this returns; pausing instead would make it sleep its whole fetch wait before it can leave):
   * held, heartbeating so the group keeps this member while its documents settle, until `release` or
   * a failed heartbeat (a rebalance, which must not wait for it).
   */
  private hold(released: Promise<void>, control: BatchControl): Promise<void> {
    return new Promise<void>((resolve) => {
      const stopBeating = this.heartbeatEvery(control, resolve);
      const end = () => {
        stopBeating();
        resolve();
      };
      released.then(end, end);
    });
  }

  /** Heartbeats while a batch handler holds; `onFailed` once one fails (a rebalance). Returns the stop. */
  private heartbeatEvery(control: BatchControl, onFailed: () => void): () => void {
    const timer = setInterval(
      () =>
        void control.heartbeat().catch(() => {
          clearInterval(timer);
          onFailed();
        }),
      this.o.heartbeatMs ?? 1000,
    );
    return () => clearInterval(timer);
  }

  private async handleBatch(batch: IncomingBatch, control: BatchControl): Promise<void> {
    // Fetched before the pause: left unresolved, so they are fetched again after it.
    if (this.outage) return;
    if (batch.topic === this.o.topics.feedback) return this.onFeedbackBatch(batch, control);
    const offsets = this.commits.tracker(batch.topic).partition(batch.partition);
    const admissions: Array<Promise<boolean>> = [];
    let last: string | null = null;
    // A failed heartbeat (a rebalance under way, or this member gone from its group) ends any wait
    // for capacity or for the partition's preparation: the group must not wait. kafkajs rejoins only
    // once this handler returns, and a member out of its group meanwhile admits nothing.
    let heartbeatFailed = false;
    let onHeartbeatFailed!: () => void;
    const failedHeartbeat = new Promise<false>((resolve) => (onHeartbeatFailed = () => resolve(false)));
    const stopBeating = this.heartbeatEvery(control, () => {
      heartbeatFailed = true;
      onHeartbeatFailed();
      this.wakeCapacityWaiters();
    });
    const taking = () =>
      control.isRunning() && !control.isStale() && !this.stopping && !this.outage && !heartbeatFailed;
    try {
      // No record of a partition is admitted before its state is restored (heartbeats go on meanwhile).
      // The preparation goes on in the background when a heartbeat fails: this batch is fetched again.
      try {
        const prepared = this.preparation.prepare(batch.partition).then(() => true as const);
        if (!(await Promise.race([prepared, failedHeartbeat]))) return;
      } catch (err) {
        // Revoked meanwhile: its records are its new owner's.
        if (err instanceof PartitionLeftError) return;
        throw err;
      }
      for (const message of batch.messages) {
        if (!taking()) break;
        // Checked again after every wait: the slot is taken in the same turn as the check.
        const capacityUntil = Date.now() + (this.o.capacityWaitMs ?? 2000);
        while (!this.hasCapacity()) {
          this.o.engine.wantCapacity?.();
          if (!taking() || !(await this.slotFreed(capacityUntil))) break;
        }
        if (!this.hasCapacity()) {
          if (taking()) this.pauseInput();
          break;
        }
        offsets.track(message.offset);
        last = message.offset;
        this.admitting += 1;
        // An admission waiting for its tenant's share or its rate limit goes on in the background at
        // once: the batch's wait is for admissions that are under way, not for another tenant's limit.
        let waiting!: () => void;
        const waits = new Promise<boolean>((resolve) => (waiting = () => resolve(true)));
        const settled = this.settle(message, offsets, () => this.o.arrivals(message, { waiting })).finally(
          () => {
            this.admitting -= 1;
            this.wakeCapacityWaiters();
            this.wakeIdle();
          },
        );
        admissions.push(Promise.race([settled, waits]));
      }
      // Every record taken ends here or in the background (tried again, or a dead letter): the fetch moves
      // past them all, and each offset is committed once its record is durable.
      await this.waitAtMost(Promise.all(admissions), this.o.admissionWaitMs ?? 1000);
      if (last !== null) control.resolveOffset(last);
    } finally {
      stopBeating();
    }
  }

  /** A document finished or was dropped: resume the input once a tenth of the slots are free. */
  onCapacityFreed(): void {
    this.wakeCapacityWaiters();
    this.commits.commitIfDrained();
    const inFlight = this.o.engine.inFlight;
    this.o.onInFlight?.(inFlight);
    if (!this.inputPaused || !this.consumer || this.stopping || this.outage) return;
    const max = this.o.maxInFlight;
    // Hysteresis: resume once a tenth of the slots are free, not at every single free slot.
    if (this.occupied() > max - Math.max(1, Math.floor(max / 10))) return;
    this.inputPaused = false;
    this.consumer.resume(this.o.topics.arrived, this.assigned(this.o.topics.arrived));
  }

  /** Commits the highest safe offset of every assigned partition that moved (`offset-commits.ts`). */
  commit(reason: CommitReason): Promise<void> {
    return this.commits.commit(reason);
  }

  /**
   * The group began a rebalance and this consumer has no rejoin barrier (`beforeRejoin` is not
   * called): the notice is the last moment to commit before the partitions may move.
   */
  onRebalanceNotice(): void {
    this.commits.commitInBackground('rebalance notice');
  }

  /** Feedback records one by one; one that takes longer than the batch's wait goes on in the background. */
  private async onFeedbackBatch(batch: IncomingBatch, control: BatchControl): Promise<void> {
    const offsets = this.commits.tracker(batch.topic).partition(batch.partition);
    const until = Date.now() + (this.o.admissionWaitMs ?? 1000);
    for (const message of batch.messages) {
      if (!control.isRunning() || control.isStale() || this.stopping || this.outage) break;
      offsets.track(message.offset);
      this.settlingFeedback += 1;
      const settled = this.settle(message, offsets, () => this.o.feedback(message)).finally(() => {
        this.settlingFeedback -= 1;
        this.wakeIdle();
      });
      const ended = (await this.waitAtMost(settled, until - Date.now())) === true;
      control.resolveOffset(message.offset);
      if (!ended) break;
      await control.heartbeat();
    }
  }

  /**
   * Runs one record's handler until its outcome is durable (`record-settling.ts`), then completes its
   * offset. Resolves false when the record was given up: the instance stops, or its partition left.
   */
  private async settle(
    message: IncomingMessage,
    offsets: PartitionOffsets,
    handle: () => Promise<void>,
  ): Promise<boolean> {
    const { topic, partition, offset } = message;
    // The partition's offsets are dropped when it leaves: a record of the old assignment is not ours.
    const owned = () => this.commits.tracker(topic).current(partition) === offsets;
    const outcome = await settleRecord({
      handle,
      isOutage: (err) => this.o.outage?.isOutage(err) ?? false,
      outage: async (err) => {
        this.enterOutage(err);
        if (this.outage) await this.waitAtMost(this.outage, Infinity);
        else await this.sleep(this.o.outage?.initialDelayMs ?? 500);
      },
      retriable: this.o.retriable ?? (() => true),
      end: (err) => (this.o.endRecord ? this.o.endRecord(message, err) : Promise.reject(err)),
      abandoned: () => this.stopping || !owned(),
      sleep: (ms) => this.sleep(ms),
      logger: this.o.logger,
      where: { topic, partition, offset },
    });
    if (outcome === 'abandoned') return false;
    offsets.complete(offset);
    this.o.onInFlight?.(this.o.engine.inFlight);
    // Admitted while its partition went to another member: the document stops here; its new owner
    // resumes it from the state.
    if (topic === this.o.topics.arrived && !owned() && !this.assigned(topic).includes(partition)) {
      this.o.engine.revoke([partition]);
    }
    return true;
  }

  /** Resolves after `ms`, or at once on stop. */
  private sleep(ms: number): Promise<void> {
    return this.waitAtMost(new Promise<void>(() => undefined), ms).then(() => undefined);
  }

  /** `work`'s value once it resolves, or undefined after `ms` or on stop, whichever comes first. */
  private waitAtMost<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
    if (this.stopping || ms <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const end = (value: T | undefined) => {
        if (timer) clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve(value);
      };
      const wake = () => end(undefined);
      if (Number.isFinite(ms)) timer = setTimeout(wake, Math.min(ms, 2 ** 31 - 1));
      this.sleepers.add(wake);
      work.then(end, () => end(undefined));
    });
  }

  /** True while the input is paused because a dependency is down. */
  get pausedForOutage(): boolean {
    return this.outage !== null;
  }

  /**
   * Pauses the input for an outage noticed elsewhere (the API client's health), as `enterOutage` does
   * for one a record handler ran into: `handling.probe` resolves when it is over.
   */
  pauseFor(reason: Error, handling: OutageHandling): void {
    this.enterOutage(reason, handling);
  }

  /** Pauses both input topics and probes the dependency with back-off until it answers again. */
  private enterOutage(err: unknown, handling: OutageHandling | undefined = this.o.outage): void {
    if (!handling || this.outage || !this.consumer) return;
    const { arrived, feedback } = this.o.topics;
    this.consumer.pause(arrived, this.assigned(arrived));
    this.consumer.pause(feedback, this.assigned(feedback));
    this.o.logger.warn({ err: (err as Error).message }, 'input paused: a dependency is unavailable');
    handling.onChange?.(true, err);
    // The back-off waits are the loop's own sleeps, which a stop ends: no probe is sent after it.
    const probe = () => (this.stopping ? Promise.reject(new Error('stopping')) : handling.probe(err));
    this.outage = retry(probe, {
      clock: { now: () => performance.now(), sleep: (ms) => this.sleep(ms) },
      waitFirst: true,
      backoff: { initialMs: handling.initialDelayMs ?? 500, maxMs: handling.maxDelayMs ?? 30_000 },
      classify: () => (this.stopping ? { retry: false } : { retry: true }),
      onRetry: (probeErr, tries) =>
        this.o.logger.debug(
          { attempt: tries - 1, err: (probeErr as Error).message },
          'dependency still unavailable',
        ),
    })
      .catch(() => undefined)
      .finally(() => {
        this.outage = null;
        handling.onChange?.(false, err);
        if (this.stopping || !this.consumer) return;
        this.o.logger.info('input resumed: the dependency answers again');
        this.consumer.resume(feedback, this.assigned(feedback));
        if (!this.inputPaused) this.consumer.resume(arrived, this.assigned(arrived));
        else this.onCapacityFreed();
      });
  }

  /**
   * Resolves true when a slot may have freed (the caller checks again), false once `until` passed.
   * Also re-checks every 100 ms, so that a stop, a seek or an outage is noticed while waiting.
   */
  private slotFreed(until: number): Promise<boolean> {
    const left = until - Date.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.capacityWaiters.delete(wake);
        resolve(true);
      };
      const timer = setTimeout(wake, Math.min(left, 100));
      this.capacityWaiters.add(wake);
    });
  }

  private hasCapacity(): boolean {
    return this.occupied() < this.o.maxInFlight;
  }

  /** Slots taken: documents running and admissions under way, but those waiting for their tenant's share. */
  private occupied(): number {
    return this.o.engine.inFlight + this.admitting - (this.o.engine.uncounted ?? 0);
  }

  private wakeCapacityWaiters(): void {
    for (const wake of [...this.capacityWaiters]) wake();
  }

  private pauseInput(): void {
    if (this.inputPaused || !this.consumer) return;
    this.inputPaused = true;
    this.consumer.pause(this.o.topics.arrived, this.assigned(this.o.topics.arrived));
    this.o.logger.debug({ inFlight: this.o.engine.inFlight }, 'input paused: in-flight limit reached');
  }

  private assigned(topic: string): number[] {
    return this.consumer?.currentAssignment()[topic] ?? [];
  }
}
