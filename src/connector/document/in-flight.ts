/**
 * The documents running on this instance (by event id, by submission id, counted by input
 * partition) and the background steps in progress for them. The engine (`engine.ts`) puts a document
 * here when it starts; it leaves when its life ends (`document-life.ts`), or when it is revoked or
 * stopped. `settle` waits for the steps still half-way (an upload, a publish).
 */
import type { Logger } from '../../observability/logger.js';
import type { PollScheduler } from '../../util/scheduler.js';
import type { Run } from './run.js';

export class InFlight {
  private readonly byEvent = new Map<string, Run>();
  private readonly bySubmission = new Map<string, Run>();
  /** Documents running, by input partition (what the group's API share is told). */
  private readonly byPartition = new Map<number, number>();
  /** Documents running, by tenant ('' for the default credentials): what tenant shares count. */
  private readonly byTenant = new Map<string, number>();
  private readonly steps = new Set<Promise<unknown>>();

  constructor(
    private readonly scheduler: PollScheduler,
    private readonly logger: Logger,
    /** A document left: the consumer may resume paused partitions. */
    private readonly onCapacityFreed: () => void,
  ) {}

  get size(): number {
    return this.byEvent.size;
  }

  has(eventId: string): boolean {
    return this.byEvent.has(eventId);
  }

  ofSubmission(submissionId: string): Run | undefined {
    return this.bySubmission.get(submissionId);
  }

  /** Documents of this input partition running here. */
  on(partition: number): number {
    return this.byPartition.get(partition) ?? 0;
  }

  /** Documents running by tenant ('' for those of the default credentials); kept up to date, not a copy. */
  tenants(): ReadonlyMap<string, number> {
    return this.byTenant;
  }

  /** The runs of these input partitions (all of them without a filter). */
  runs(partitions?: Set<number>): Run[] {
    return [...this.byEvent.values()].filter((r) => !partitions || partitions.has(r.pointer.partition));
  }

  add(run: Run): void {
    const previous = this.byEvent.get(run.eventId);
    if (previous) this.count(previous, -1);
    this.byEvent.set(run.eventId, run);
    this.count(run, 1);
    this.bySubmission.set(run.state.submission_id, run);
  }

  /**
   * Takes a run out: its pending polls, deadline and scheduled work are cancelled. Stopped or revoked
   * (not ended): it starts no new step and its open blob is closed; revoked, it records nothing more.
   */
  remove(run: Run, how: 'ended' | 'stopped' | 'revoked'): void {
    const cancelled = how !== 'ended';
    // Stopped or revoked while its end was recorded: it stays so (its end's state write gave up).
    if (cancelled || !run.cancelled) run.transitionTo(how);
    // Ended documents closed their trace with their outcome; this ends a stopped or revoked one's.
    run.trace?.end(how);
    for (const kind of run.state.awaited) this.scheduler.cancel(run.key(kind));
    this.scheduler.cancel(run.key('deadline'));
    this.scheduler.cancel(run.key('upload'));
    if (this.byEvent.get(run.eventId) === run) {
      this.byEvent.delete(run.eventId);
      this.count(run, -1);
    }
    if (this.bySubmission.get(run.state.submission_id) === run)
      this.bySubmission.delete(run.state.submission_id);
    if (cancelled) {
      run.blob
        ?.cleanup()
        .catch((err: unknown) =>
          this.logger.warn(
            { err: (err as Error).message },
            'a stopped document’s spooled file was not removed',
          ),
        );
    }
    this.onCapacityFreed();
  }

  /** Runs a background step; its unexpected failure is logged, and `settle` waits for it. */
  track(step: Promise<unknown>): void {
    const forget = () => void this.steps.delete(guarded);
    const guarded: Promise<void> = step.then(forget, (err: unknown) => {
      this.logger.error({ err }, 'unexpected connector error');
      forget();
    });
    this.steps.add(guarded);
  }

  /** Resolves when every step in progress settled, or after `timeoutMs`. */
  async settle(timeoutMs: number): Promise<void> {
    const settled = Promise.allSettled([...this.steps]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  private count(run: Run, delta: number): void {
    bump(this.byPartition, run.pointer.partition, delta);
    bump(this.byTenant, run.identity.tenant ?? '', delta);
  }
}

function bump<K>(counts: Map<K, number>, key: K, delta: number): void {
  const n = (counts.get(key) ?? 0) + delta;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
