/**
 * How sure this member is that it is still in its consumer group: every heartbeat the coordinator
 * answered (and every join) renews a lease of one session timeout, as the coordinator keeps the
 * member until a session passes without one. A member cut off from its coordinator while it still
 * reaches the partition leaders goes on fetching and admitting; once the session expires the group
 * gives its partitions to another member, which admits the same records again, and with no
 * idempotency key in the API both submit them. So creates are held (`hold`) when the lease is
 * nearly over, before the coordinator can expire it, and go again (`resume`) at the next answer.
 */
import type { Logger } from '../../observability/logger.js';

export interface MembershipLeaseOptions {
  sessionTimeoutMs: number;
  /** Creates stop: the member may be out of its group. */
  hold: () => void;
  /** The coordinator answered again: creates go on. */
  resume: () => void;
  logger: Logger;
  now?: () => number;
}

/**
 * How long before the session's end creates stop: a third of the session, at most 5 s. What a
 * create sent just before then needs (its state written) fits in that, and the group's rebalance
 * and the next owner's restore come after the session's end.
 */
export function leaseMarginMs(sessionTimeoutMs: number): number {
  return Math.min(Math.floor(sessionTimeoutMs / 3), 5000);
}

export class MembershipLease {
  private renewedAt: number;
  private held = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  constructor(private readonly o: MembershipLeaseOptions) {
    this.now = o.now ?? Date.now;
    this.renewedAt = this.now();
  }

  /** Checks the lease every tenth of a session (at least every second) until `stop`. */
  start(): void {
    if (this.timer) return;
    this.renewedAt = this.now();
    this.timer = setInterval(() => this.check(), Math.min(1000, Math.max(100, this.o.sessionTimeoutMs / 10)));
    this.timer.unref();
  }

  /** The coordinator answered (a heartbeat, a join): the lease runs a whole session from now. */
  renewed(): void {
    this.renewedAt = this.now();
    if (!this.held) return;
    this.held = false;
    this.o.logger.info('the group coordinator answered again: submissions are created again');
    this.o.resume();
  }

  /** Whether creates are held now for want of an answer. */
  get holding(): boolean {
    return this.held;
  }

  check(): void {
    const silentMs = this.now() - this.renewedAt;
    if (this.held || silentMs <= this.o.sessionTimeoutMs - leaseMarginMs(this.o.sessionTimeoutMs)) return;
    this.held = true;
    this.o.logger.warn(
      { silentMs, sessionTimeoutMs: this.o.sessionTimeoutMs },
      "no heartbeat answered by the group coordinator for most of a session: no submission is created until it answers (the group may have given this member's partitions to another)",
    );
    this.o.hold();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
