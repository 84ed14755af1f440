/**
 * The sandbox's record of each call (`GET /_sandbox/calls`): which cell it reached, which tenant
 * and application (client id) made it, the method, route template and status. A ring of the
 * newest `maxCallRecords` entries, so memory stays bounded however long the sandbox runs.
 */

export interface CallEntry {
  /** ISO time the answer was sent. */
  at: string;
  /** The cell whose listener the call reached (`testing` for the sandbox's own address). */
  cell: string;
  /** The tenant of the application that made it; null for the sandbox's own clients and anonymous calls. */
  tenant_id: string | null;
  /** The client id of the token (or, on the token endpoint, of the client it authenticated); else null. */
  client_id: string | null;
  method: string;
  /** The route template, e.g. `/v2/submission/:id/fraud`; `(unmatched)` for no route. */
  route: string;
  status: number;
  /** The submission the call created or named, when it names one. */
  submission_id: string | null;
}

export interface CallFilter {
  cell?: string;
  tenantId?: string;
  clientId?: string;
  submissionId?: string;
}

export interface CallList {
  count: number;
  /** Calls no longer kept: the ring held `maxCallRecords` and newer ones took their place. */
  dropped: number;
  items: CallEntry[];
}

export class CallRecord {
  private ring: CallEntry[] = [];
  /** Where the next entry goes once the ring is full. */
  private next = 0;
  private dropped = 0;

  constructor(private readonly capacity: () => number) {}

  add(entry: CallEntry): void {
    const max = this.capacity();
    if (max === 0) {
      this.dropped++;
      return;
    }
    if (this.ring.length > max) this.shrink(max);
    if (this.ring.length < max) {
      this.ring.push(entry);
      return;
    }
    this.ring[this.next] = entry;
    this.next = (this.next + 1) % max;
    this.dropped++;
  }

  /** The kept calls that match, oldest first. */
  list(filter: CallFilter = {}): CallList {
    const ordered = [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    const items = ordered.filter(
      (c) =>
        (filter.cell === undefined || c.cell === filter.cell) &&
        (filter.tenantId === undefined || c.tenant_id === filter.tenantId) &&
        (filter.clientId === undefined || c.client_id === filter.clientId) &&
        (filter.submissionId === undefined || c.submission_id === filter.submissionId),
    );
    return { count: items.length, dropped: this.dropped, items: items.map((c) => ({ ...c })) };
  }

  reset(): void {
    this.ring = [];
    this.next = 0;
    this.dropped = 0;
  }

  /** A smaller capacity set while running keeps the newest entries. */
  private shrink(max: number): void {
    const ordered = [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    this.dropped += ordered.length - max;
    this.ring = ordered.slice(ordered.length - max);
    this.next = 0;
  }
}
