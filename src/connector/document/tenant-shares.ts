/**
 * Each tenant's share of an instance's in-flight slots (`connector.maxInFlight`), with a tenant
 * directory. A tenant at its application's rate limit keeps each of its documents in a slot while it
 * waits for its limiter; with no bound, a backlog of one tenant would fill every slot and the other
 * tenants' records on the same partitions would wait behind it. So a tenant holds at most its share:
 * `tenants.maxInFlightShare` of the slots, and no more than an equal part of them while other tenants
 * have documents under way. A new document past its tenant's share waits (before its blob is read:
 * it holds its decoded event only) and does not count against the slots; the consumer goes on to the
 * records behind it. Such waiting documents count against the slots again past `maxWaiting`, where
 * the input pauses as before. Waiting documents get their turn tenant by tenant, oldest first.
 */

/** A tenant's key: its name, or '' for the deployment's default credentials. */
export type TenantKey = string;

export interface TenantSharesOptions {
  maxInFlight: number;
  /** The most of `maxInFlight` one tenant may hold (0 < share ≤ 1). */
  share: number;
  /** Documents waiting for their tenant's share beyond this count against the slots again. */
  maxWaiting: number;
  /** Documents of each tenant running (created, in flight). */
  running: () => ReadonlyMap<TenantKey, number>;
  /** A document began to wait: a slot it held in the consumer's count is free for the records behind. */
  onWaiting: () => void;
}

interface Waiter {
  partition: number;
  resolve: (release: () => void) => void;
  reject: (err: Error) => void;
}

export class TenantShares {
  /** Past the wait and not running yet (reading the blob, creating, recording), by tenant. */
  private readonly admitting = new Map<TenantKey, number>();
  /** Oldest first, by tenant; the map's order is the tenants' turn. */
  private readonly waiters = new Map<TenantKey, Waiter[]>();
  private waitingCount = 0;

  constructor(private readonly o: TenantSharesOptions) {}

  /** Documents waiting for their tenant's share that the consumer does not count against its slots. */
  get uncounted(): number {
    return Math.min(this.waitingCount, this.o.maxWaiting);
  }

  /** Documents waiting for their tenant's share, by tenant. */
  waitingByTenant(): Map<TenantKey, number> {
    return new Map([...this.waiters].map(([t, w]) => [t, w.length]));
  }

  /** The most slots one tenant may hold now. */
  shareNow(running = this.o.running()): number {
    const active = new Set([...running.keys(), ...this.admitting.keys(), ...this.waiters.keys()]);
    const byShare = Math.floor(this.o.maxInFlight * this.o.share);
    const equal = Math.ceil(this.o.maxInFlight / Math.max(1, active.size));
    return Math.max(1, Math.min(byShare, equal));
  }

  /**
   * Resolves, with the release to call once the admission ended (its run started, or it ended in a
   * dead letter or a failure), when the tenant is within its share; waits in turn otherwise. Rejects
   * with the error given to `drop` or `dropAll`.
   */
  acquire(tenant: TenantKey, partition: number, onWait?: () => void): Promise<() => void> {
    const running = this.o.running();
    if (!this.waiters.has(tenant) && this.fits(tenant, running)) return Promise.resolve(this.take(tenant));
    onWait?.();
    return new Promise((resolve, reject) => {
      const queue = this.waiters.get(tenant) ?? [];
      queue.push({ partition, resolve, reject });
      this.waiters.set(tenant, queue);
      this.waitingCount += 1;
      if (this.waitingCount <= this.o.maxWaiting) this.o.onWaiting();
    });
  }

  /** A slot may be free (a document finished, or an admission ended): waiting documents take their turn. */
  pump(): void {
    for (let progressed = true; progressed && this.waiters.size > 0;) {
      progressed = false;
      const running = this.o.running();
      for (const [tenant, queue] of [...this.waiters]) {
        if (!this.fits(tenant, running)) continue;
        const next = queue.shift()!;
        this.waitingCount -= 1;
        this.waiters.delete(tenant);
        // To the end of the turn: the next tenant goes first next time.
        if (queue.length > 0) this.waiters.set(tenant, queue);
        next.resolve(this.take(tenant));
        progressed = true;
      }
    }
  }

  /** The waiting documents of these partitions give up (revoked: their next owner admits them). */
  drop(partitions: ReadonlySet<number>, error: (partition: number) => Error): void {
    this.rejectWhere((w) => partitions.has(w.partition), error);
  }

  /** Every waiting document gives up (the engine stops). */
  dropAll(error: (partition: number) => Error): void {
    this.rejectWhere(() => true, error);
  }

  private rejectWhere(which: (w: Waiter) => boolean, error: (partition: number) => Error): void {
    for (const [tenant, queue] of [...this.waiters]) {
      const kept = queue.filter((w) => !which(w));
      for (const w of queue) if (which(w)) w.reject(error(w.partition));
      this.waitingCount -= queue.length - kept.length;
      if (kept.length > 0) this.waiters.set(tenant, kept);
      else this.waiters.delete(tenant);
    }
  }

  private held(tenant: TenantKey, running: ReadonlyMap<TenantKey, number>): number {
    return (running.get(tenant) ?? 0) + (this.admitting.get(tenant) ?? 0);
  }

  /** Within its share, and a slot free on the instance. */
  private fits(tenant: TenantKey, running: ReadonlyMap<TenantKey, number>): boolean {
    let total = 0;
    for (const n of running.values()) total += n;
    for (const n of this.admitting.values()) total += n;
    return total < this.o.maxInFlight && this.held(tenant, running) < this.shareNow(running);
  }

  private take(tenant: TenantKey): () => void {
    this.admitting.set(tenant, (this.admitting.get(tenant) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.admitting.get(tenant) ?? 1) - 1;
      if (n > 0) this.admitting.set(tenant, n);
      else this.admitting.delete(tenant);
      this.pump();
    };
  }
}
