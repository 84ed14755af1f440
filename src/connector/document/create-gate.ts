/**
 * Whether a submission may be created now, and which creates are out.
 *
 * The API has no idempotency key: a create is safe only while its submission id can be recorded in
 * the state topic before anyone else admits the same record. So a create is sent only while
 * - this member owns the record's partition and is not giving its partitions up (a rebalance or a
 *   consumer restart under way: `revoking`), nor unsure it is still in its group (`unsure`: the
 *   coordinator has not answered it for most of a session, `membership-lease.ts`), and
 * - Kafka takes this member's writes (`kafkaUnavailable` after a state write failed transiently or
 *   the consumer lost its group; `kafkaAvailable` once a write went through or the group is back).
 * The check runs right before the request leaves (after the rate limiter's wait), so a create queued
 * behind the limiter when the gate closes is never sent. A create that was sent is tracked from then
 * until its state is recorded or it is given up, so that a revocation can wait for exactly those.
 */
import { KafkaUnavailableError } from '../../kafka/errors.js';

/** Thrown instead of sending a create while the member gives its partitions up: not the record's fault. */
export class RevocationInProgressError extends Error {
  /** Retryable: the record is tried again once the group settled, by whichever member then owns it. */
  readonly retriable = true;
  constructor(partition: number) {
    super(`partition ${partition} is being revoked: no submission is created for it now`);
    this.name = 'RevocationInProgressError';
  }
}

export class CreateGate {
  private revoking = false;
  private unsure = false;
  private owned: Set<number> | null = null;
  private kafkaDown: string | null = null;
  private readonly sent = new Set<Promise<unknown>>();
  private readonly availableWaiters: Array<() => void> = [];

  /** Throws when a create for a document of `partition` may not be sent now. */
  check(partition: number): void {
    if (!this.holds(partition)) throw new RevocationInProgressError(partition);
    if (this.kafkaDown !== null) throw new KafkaUnavailableError(this.kafkaDown);
  }

  /** Whether `partition` is this member's now: assigned, and no revoke or crash under way. */
  holds(partition: number): boolean {
    return !this.revoking && !this.unsure && (this.owned === null || this.owned.has(partition));
  }

  /**
   * `true`: the group coordinator has not answered this member for most of a session, so the group
   * may have given its partitions to another member already: no create is sent until `false`.
   */
  membershipUnsure(unsure: boolean): void {
    this.unsure = unsure;
  }

  /** Tracks a create that was sent until `settled` (its state recorded, or the create given up). */
  track(settled: Promise<unknown>): void {
    const forget = () => void this.sent.delete(done);
    const done: Promise<void> = settled.then(forget, forget);
    this.sent.add(done);
  }

  /** Creates sent whose state is not recorded yet. */
  get outstanding(): number {
    return this.sent.size;
  }

  /** Resolves once every create sent so far is settled. */
  async settled(): Promise<void> {
    while (this.sent.size > 0) await Promise.all([...this.sent]);
  }

  /** The member is giving its partitions up: no create is sent until `assigned`. */
  revokeAll(): void {
    this.revoking = true;
  }

  /** The group settled: creates go again, for these input partitions only. */
  assigned(partitions: Iterable<number>): void {
    this.owned = new Set(partitions);
    this.revoking = false;
  }

  get isRevoking(): boolean {
    return this.revoking;
  }

  /** Kafka does not take writes (`reason` says what failed): no create is sent until it does. */
  kafkaUnavailable(reason: string): void {
    this.kafkaDown = reason;
  }

  kafkaAvailable(): void {
    if (this.kafkaDown === null) return;
    this.kafkaDown = null;
    for (const wake of this.availableWaiters.splice(0)) wake();
  }

  /** Why Kafka is taken as unavailable, or null. */
  get kafkaUnavailableReason(): string | null {
    return this.kafkaDown;
  }

  /** Resolves once Kafka is taken as available again. */
  whenKafkaAvailable(): Promise<void> {
    if (this.kafkaDown === null) return Promise.resolve();
    return new Promise((resolve) => this.availableWaiters.push(resolve));
  }
}
