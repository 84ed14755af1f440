/**
 * The Adaptive Decision fast path, in two halves that may run on different instances:
 * - the receiver records each verified delivery in the webhook topic (key = submission id) and answers
 *   2xx only once Kafka acknowledged it: from then on the delivery is durable and the sender may stop;
 * - every instance tails that topic and tells its engine, which fetches and publishes the decision only
 *   if it runs that submission and still waits for it (the instance owning the document's partition).
 *   The receiving instance tells its own engine at once, without waiting for Kafka.
 * So no instance needs another's state: the receiver knows nothing of documents, the owner knows its
 * own (and its tenant: a delivery naming another tenant id than the run's tenant's is not acted on). The deliveries of the last deadline window are kept in memory (`decision-deliveries.ts`) for
 * deduplication and for documents resumed after a restart or a rebalance.
 */
import { WEBHOOK_EVENT_DECISION_FINISHED, type WebhookEvent } from '../../api/schemas.js';
import type { CoalescingSender } from '../../kafka/coalescer.js';
import type { OpenFeed, RecordFeed, ViewRecord } from '../../kafka/view.js';
import type { Logger } from '../../observability/logger.js';
import type { HandlerOutcome, WebhookHandler } from '../../webhooks/receiver.js';
import {
  decodeDelivery,
  encodeDelivery,
  type Delivery,
  type RecentDeliveries,
} from './decision-deliveries.js';

/** The engine of this instance as the decision fast path sees it: only its running documents. */
export interface DecisionEngine {
  /**
   * The decision of this submission is ready, says a delivery naming `tenantId` (the API's id of the
   * tenant; null when it names none); a no-op unless the document runs here and waits for it.
   */
  decisionReady(submissionId: string, tenantId: string | null): void;
}

interface DecisionWebhookDeps {
  /** Reads the webhook topic (`topic`) from the beginning and tails it. */
  openFeed: OpenFeed;
  sender: Pick<CoalescingSender, 'send'>;
  deliveries: RecentDeliveries;
  topic: string;
  logger: Logger;
  /** The engine of this instance, when it runs documents (`docstream run`). */
  engine?: DecisionEngine;
  now?: () => number;
}

export class DecisionWebhooks {
  /** Deliveries being recorded, by dedupe key: a duplicate arriving meanwhile waits for the first. */
  private readonly handling = new Map<string, Promise<HandlerOutcome>>();
  private readonly view: RecordFeed;
  private readonly now: () => number;

  constructor(private readonly deps: DecisionWebhookDeps) {
    this.now = deps.now ?? Date.now;
    this.view = deps.openFeed((r) => this.applyRecord(r));
  }

  /** Resolves once every delivery already in the topic was read. */
  async start(): Promise<void> {
    await this.view.start();
    await this.view.caughtUp();
  }

  stop(): Promise<void> {
    return this.view.stop();
  }

  readonly handler: WebhookHandler = async (
    event: WebhookEvent,
    webhookId: string,
  ): Promise<HandlerOutcome> => {
    if (event.type !== WEBHOOK_EVENT_DECISION_FINISHED) return 'ignored';
    const submissionId = event.payload.id;
    if (this.deps.deliveries.isDuplicate(submissionId, webhookId, event.type, event.version))
      return 'duplicate';
    const keys = [`id:${webhookId}`, `sub:${submissionId}:${event.type}:${event.version}`];
    const running = keys.map((k) => this.handling.get(k)).find((p) => p !== undefined);
    if (running) {
      const outcome = await running.catch(() => 'failed' as const);
      // The first delivery failed (and answered 5xx): this one does the work instead.
      if (outcome !== 'failed') return 'duplicate';
    }
    // Running here, the document need not wait for the record: its decision event does not depend on
    // it, and the engine publishes it once whatever else says it is ready. The answer still waits.
    // An empty tenant id names no tenant.
    const tenantId = event.tenant_id === '' ? null : event.tenant_id;
    this.deps.engine?.decisionReady(submissionId, tenantId);
    const work = this.record({
      webhook_id: webhookId,
      submission_id: submissionId,
      type: event.type,
      version: event.version,
      received_at: this.now(),
      ...(tenantId !== null ? { tenant_id: tenantId } : {}),
    });
    for (const k of keys) this.handling.set(k, work);
    try {
      return await work;
    } finally {
      for (const k of keys) if (this.handling.get(k) === work) this.handling.delete(k);
    }
  };

  private async record(delivery: Delivery): Promise<HandlerOutcome> {
    await this.deps.sender.send(this.deps.topic, {
      key: delivery.submission_id,
      value: encodeDelivery(delivery),
    });
    this.accept(delivery);
    return 'accepted';
  }

  private applyRecord(record: ViewRecord): void {
    if (record.value === null) return;
    this.accept(decodeDelivery(record.value));
  }

  private accept(delivery: Delivery): void {
    if (this.deps.deliveries.add(delivery))
      this.deps.engine?.decisionReady(delivery.submission_id, delivery.tenant_id ?? null);
  }
}
