/**
 * Decision webhook deliveries as recorded in the webhook topic (key = submission id), and the window of
 * recent ones every instance keeps in memory. A delivery only matters while its document can still be
 * in flight, that is within the document deadline of its arrival: older ones are neither kept nor
 * read back, so memory holds (deliveries per second × deadline) entries, not every delivery ever.
 */
import { z } from 'zod';

/** Instances' clocks differ: a delivery is kept this much longer than the document deadline. */
const CLOCK_MARGIN_MS = 5 * 60_000;

/** How long a delivery matters: the longest a document can wait for it, plus the clock margin. */
export function deliveryWindowMs(deadlineMs: number): number {
  return deadlineMs + CLOCK_MARGIN_MS;
}

/**
 * The webhook topic's configs. `delete` with a retention of one window keeps every delivery a running
 * document may need (Kafka deletes a segment only once its newest record is older than that) and
 * drops the rest; `compact` leaves one delivery per submission in the older segments; a segment rolls
 * every window so old ones become deletable at all. So the topic holds about two windows of
 * deliveries, whatever runs for how long.
 */
export function webhookTopicConfigs(deadlineMs: number): Record<string, string> {
  const window = String(deliveryWindowMs(deadlineMs));
  return { 'cleanup.policy': 'compact,delete', 'retention.ms': window, 'segment.ms': window };
}

export interface Delivery {
  webhook_id: string;
  submission_id: string;
  type: string;
  version: number;
  /** Epoch ms at which the receiver verified the delivery. */
  received_at: number;
  /**
   * The API's id of the tenant the event names (`tenant_id`); absent when it names none (an empty
   * one) and in records written before docstream carried it.
   */
  tenant_id?: string;
}

/** A record of the webhook topic that is not a delivery (written by something else, or damaged). */
class DeliveryRecordError extends Error {
  readonly code = 'webhook_record_invalid';
}

const DeliveryValue = z.object({
  webhook_id: z.string().min(1),
  submission_id: z.string().min(1),
  type: z.string().min(1),
  version: z.number().int(),
  received_at: z.number().int().nonnegative().optional(),
  /** What records of docstream ≤ 0.1 (a compacted dedupe log) called the time. */
  handled_at: z.number().int().nonnegative().optional(),
  tenant_id: z.string().min(1).optional(),
});

export function encodeDelivery(d: Delivery): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...d }));
}

export function decodeDelivery(value: Buffer): Delivery {
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8'));
  } catch {
    throw new DeliveryRecordError('webhook record is not JSON');
  }
  const parsed = DeliveryValue.safeParse(json);
  const at = parsed.success ? (parsed.data.received_at ?? parsed.data.handled_at) : undefined;
  if (!parsed.success || at === undefined) throw new DeliveryRecordError('webhook record is not a delivery');
  const { webhook_id, submission_id, type, version, tenant_id } = parsed.data;
  return {
    webhook_id,
    submission_id,
    type,
    version,
    received_at: at,
    ...(tenant_id !== undefined ? { tenant_id } : {}),
  };
}

interface Known {
  /**
   * Webhook ids seen for this submission: usually one (the sender's retries reuse it), an array when
   * there are more (a few at most are kept). One string rather than an array keeps an entry small.
   */
  ids: string | string[];
  /** `type:version` of the events seen (interned: a handful of distinct values), the spec's other key. */
  events: string | string[];
  /**
   * The tenant ids the deliveries named (interned), `NO_TENANT_ID` for one that named none: a run
   * acts on a delivery only when its tenant id is the run's tenant's (`document-life.ts`).
   */
  tenants: string | string[];
  at: number;
}

/** A delivery that named no tenant id, in `Known.tenants`. */
const NO_TENANT_ID = '';

const MAX_IDS = 8;
const interned = new Map<string, string>();
const internedTenants = new Map<string, string>();

function intern(value: string, into = interned, max = 64): string {
  let v = into.get(value);
  if (v === undefined) {
    // Bounded: event types and versions are few, tenants as many as the organisation has; anything
    // beyond is simply not shared.
    if (into.size < max) into.set(value, value);
    v = value;
  }
  return v;
}

function includes(list: string | string[], value: string): boolean {
  return typeof list === 'string' ? list === value : list.includes(value);
}

function added(list: string | string[], value: string, max: number): string | string[] {
  if (includes(list, value)) return list;
  const out = typeof list === 'string' ? [list, value] : [...list, value];
  return out.length > max ? out.slice(out.length - max) : out;
}

export class RecentDeliveries {
  /** In arrival order (an update moves the entry to the end), so expiry reads from the front. */
  private readonly bySubmission = new Map<string, Known>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Remembers a delivery. True when it is the first one of its submission in the window, or the first
   * naming its tenant id (the news a waiting document needs: one refused for its tenant id may take
   * this one); false when already known or too old to matter.
   */
  add(d: Delivery): boolean {
    this.expire();
    if (d.received_at < this.now() - this.windowMs) return false;
    const known = this.bySubmission.get(d.submission_id);
    const event = intern(`${d.type}:${d.version}`);
    const tenant = d.tenant_id ? intern(d.tenant_id, internedTenants, 4096) : NO_TENANT_ID;
    if (!known) {
      this.bySubmission.set(d.submission_id, {
        ids: d.webhook_id,
        events: event,
        tenants: tenant,
        at: d.received_at,
      });
      return true;
    }
    const news = !includes(known.tenants, tenant);
    known.ids = added(known.ids, d.webhook_id, MAX_IDS);
    known.events = added(known.events, event, MAX_IDS);
    known.tenants = added(known.tenants, tenant, MAX_IDS);
    known.at = Math.max(known.at, d.received_at);
    this.bySubmission.delete(d.submission_id);
    this.bySubmission.set(d.submission_id, known);
    return news;
  }

  /** A delivery of this submission was recorded within the window: its decision is ready. */
  has(submissionId: string): boolean {
    return this.bySubmission.has(submissionId);
  }

  /**
   * The tenant ids the deliveries of this submission recorded within the window named (null for one
   * that named none); undefined when there was none.
   */
  tenantIdsOf(submissionId: string): Array<string | null> | undefined {
    const known = this.bySubmission.get(submissionId);
    if (!known) return undefined;
    const list = typeof known.tenants === 'string' ? [known.tenants] : known.tenants;
    return list.map((t) => (t === NO_TENANT_ID ? null : t));
  }

  /** Already recorded: same webhook-id, or same (submission, event type, version). */
  isDuplicate(submissionId: string, webhookId: string, type: string, version: number): boolean {
    const known = this.bySubmission.get(submissionId);
    return !!known && (includes(known.ids, webhookId) || includes(known.events, `${type}:${version}`));
  }

  get size(): number {
    return this.bySubmission.size;
  }

  private expire(): void {
    const oldest = this.now() - this.windowMs;
    for (const [id, known] of this.bySubmission) {
      if (known.at >= oldest) break;
      this.bySubmission.delete(id);
    }
  }
}
