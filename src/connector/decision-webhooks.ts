/**
 * The Adaptive Decision fast path. A delivery is only a notification: the decision is fetched from the
 * API, published to the decision topic (same key and schema as the poller's), and recorded in a
 * compacted topic that every instance tails. That record is both the deduplication (by webhook-id and
 * by submission + event type + version, durable and shared) and the signal that tells the instance
 * owning the document to stop waiting for its decision. The HTTP answer is 2xx only after all of it
 * was acknowledged by Kafka.
 */
import { WEBHOOK_EVENT_DECISION_FINISHED, type WebhookEvent } from '../api/schemas.js';
import type { CoalescingSender } from '../kafka/coalescer.js';
import type { OpenFeed, RecordFeed, ViewRecord } from '../kafka/view.js';
import type { Logger } from '../observability/logger.js';
import type { HandlerOutcome, WebhookHandler } from '../webhooks/receiver.js';
import type { DocumentState } from './state/codec.js';
import type { DocumentIdentity, OutputPort } from './types.js';

/** The engine of this instance as the decision fast path sees it. */
export interface DecisionEngine {
  deliverDecision(submissionId: string, body: Record<string, unknown>): Promise<boolean>;
  decisionPublishedElsewhere(submissionId: string): Promise<void>;
}

/** The shared state, to find a submission's document when another instance owns it. */
export interface DecisionState {
  bySubmission(submissionId: string): DocumentState | undefined;
  caughtUp(): Promise<void>;
}

interface DeliveryRecord {
  webhook_id: string;
  submission_id: string;
  type: string;
  version: number;
  handled_at: number;
}

export interface DecisionWebhookDeps {
  /** Reads the shared webhook topic (`topic`) from the beginning and tails it. */
  openFeed: OpenFeed;
  sender: Pick<CoalescingSender, 'send'>;
  output: Pick<OutputPort, 'publishResult'>;
  api: { getDecision(submissionId: string): Promise<unknown> };
  state: DecisionState;
  topic: string;
  logger: Logger;
  /** The engine of this instance, when the receiver runs inside `docstream run`. */
  engine?: DecisionEngine;
}

const idKey = (webhookId: string) => `id:${webhookId}`;
const eventKey = (submissionId: string, type: string, version: number) =>
  `sub:${submissionId}:${type}:${version}`;

export class DecisionWebhooks {
  private readonly seen = new Set<string>();
  /** Deliveries being handled, by dedupe key: a duplicate arriving meanwhile waits for the first. */
  private readonly handling = new Map<string, Promise<HandlerOutcome>>();
  private readonly view: RecordFeed;

  constructor(private readonly deps: DecisionWebhookDeps) {
    this.view = deps.openFeed((r) => this.applyRecord(r));
  }

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
    const keys = [idKey(webhookId), eventKey(submissionId, event.type, event.version)];
    if (keys.some((k) => this.seen.has(k))) return 'duplicate';
    const running = keys.map((k) => this.handling.get(k)).find((p) => p !== undefined);
    if (running) {
      const outcome = await running.catch(() => 'failed' as const);
      // The first delivery failed (and answered 5xx): this one does the work instead.
      if (outcome !== 'failed') return 'duplicate';
    }
    const work = this.handle(event, webhookId, keys);
    for (const k of keys) this.handling.set(k, work);
    try {
      return await work;
    } finally {
      for (const k of keys) if (this.handling.get(k) === work) this.handling.delete(k);
    }
  };

  private async handle(event: WebhookEvent, webhookId: string, keys: string[]): Promise<HandlerOutcome> {
    const submissionId = event.payload.id;
    const body = (await this.deps.api.getDecision(submissionId)) as Record<string, unknown>;
    const local = await this.deps.engine?.deliverDecision(submissionId, body);
    if (!local) {
      const identity = await this.identityOf(submissionId);
      if (!identity) {
        this.deps.logger.warn(
          { submission_id: submissionId },
          'webhook for a submission docstream has no record of',
        );
        return 'ignored';
      }
      await this.deps.output.publishResult('decision', identity, body, { source: 'webhook' });
    }
    const record: DeliveryRecord = {
      webhook_id: webhookId,
      submission_id: submissionId,
      type: event.type,
      version: event.version,
      handled_at: Date.now(),
    };
    const value = Buffer.from(JSON.stringify(record));
    await Promise.all(keys.map((key) => this.deps.sender.send(this.deps.topic, { key, value })));
    for (const k of keys) this.seen.add(k);
    return 'accepted';
  }

  /** The document's identity from the shared state (the instance owning it may be another one). */
  private async identityOf(submissionId: string): Promise<DocumentIdentity | null> {
    let state = this.deps.state.bySubmission(submissionId);
    if (!state) {
      await this.deps.state.caughtUp();
      state = this.deps.state.bySubmission(submissionId);
    }
    if (!state) return null;
    return {
      submission_id: state.submission_id,
      event_id: state.event_id,
      query_id: state.query_id,
      attributes: state.attributes,
      traceparent: state.traceparent,
    };
  }

  private applyRecord(record: ViewRecord): void {
    if (record.value === null) {
      this.seen.delete(record.key);
      return;
    }
    this.seen.add(record.key);
    if (record.key.startsWith('sub:')) {
      const parsed = JSON.parse(record.value.toString('utf8')) as DeliveryRecord;
      void this.deps.engine
        ?.decisionPublishedElsewhere(parsed.submission_id)
        .catch((err: unknown) =>
          this.deps.logger.warn(
            { err: (err as Error).message },
            'could not record a decision published elsewhere',
          ),
        );
    }
  }
}
