/**
 * Delivers `documents.adaptive_decision.finished` events signed per Standard Webhooks, at least
 * once: retried with exponential back-off until a 2xx answer or maxAttempts; optionally
 * delivered twice (duplicateRate) or out of order (outOfOrder) so receivers can be tested.
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Logger } from 'pino';
import { WEBHOOK_EVENT_DECISION_FINISHED } from '../api/schemas.js';
import type { SandboxConfig } from './config.js';
import { chance, type Random } from './random.js';
import type { Scheduler } from './scheduler.js';
import type { StatsCollector } from './stats.js';

const ATTEMPT_TIMEOUT_MS = 5000;
const MAX_BACKOFF_MS = 60_000;

interface DecisionFinished {
  submissionId: string;
  status: string;
  analysisTime: string;
  queryId: string | null;
  /** The submission's tenant; null (the sandbox's own clients) sends `webhook.tenantId`. */
  tenantId: string | null;
}

interface Message {
  id: string;
  body: string;
}

export class WebhookDispatcher {
  private readonly inFlight = new Set<AbortController>();
  private held: Message[] = [];
  private closed = false;

  constructor(
    private readonly getConfig: () => SandboxConfig,
    private readonly scheduler: Scheduler,
    private readonly random: () => Random,
    private readonly stats: StatsCollector,
    private readonly logger: Logger,
  ) {}

  decisionFinished(event: DecisionFinished): void {
    const config = this.getConfig().webhook;
    if (!config.url || this.closed) return;
    const body = JSON.stringify({
      type: WEBHOOK_EVENT_DECISION_FINISHED,
      version: 0,
      tenant_id: event.tenantId ?? config.tenantId,
      payload: {
        id: event.submissionId,
        status: event.status,
        analysis_time: event.analysisTime,
        query_id: event.queryId,
        result_url: `/v2/submission/${event.submissionId}/decision`,
      },
    });
    const message = { id: `msg_${randomUUID()}`, body };
    const copies = chance(this.random(), config.duplicateRate) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      if (config.outOfOrder) this.hold(message);
      else this.deliver(message, 1);
    }
  }

  close(): void {
    this.closed = true;
    for (const controller of this.inFlight) controller.abort();
    this.inFlight.clear();
    this.held = [];
  }

  private hold(message: Message): void {
    this.held.push(message);
    if (this.held.length > 1) return;
    this.scheduler.after(this.getConfig().webhook.outOfOrderWindowMs, () => {
      const batch = this.held.reverse();
      this.held = [];
      for (const m of batch) this.deliver(m, 1);
    });
  }

  private async attempt(message: Message, attempt: number): Promise<void> {
    const config = this.getConfig().webhook;
    if (this.closed || !config.url) return;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ATTEMPT_TIMEOUT_MS);
    this.inFlight.add(controller);
    let ok = false;
    let outcome = '';
    try {
      const timestamp = new Date();
      const signature = new Webhook(config.secret).sign(message.id, timestamp, message.body);
      this.stats.increment('webhooksSent');
      const response = await fetch(config.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: message.body,
        signal: controller.signal,
      });
      await response.arrayBuffer().catch(() => undefined);
      ok = response.status >= 200 && response.status < 300;
      outcome = `HTTP ${response.status}`;
    } catch (err) {
      outcome = err instanceof Error ? err.message : String(err);
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    if (ok) {
      this.stats.increment('webhooksAcknowledged');
      return;
    }
    if (this.closed) return;
    if (attempt >= config.maxAttempts) {
      this.logger.warn({ webhookId: message.id, attempt, outcome }, 'webhook delivery gave up');
      return;
    }
    const delay = Math.min(config.retryBaseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
    this.logger.debug(
      { webhookId: message.id, attempt, outcome, delay },
      'webhook delivery failed; retrying',
    );
    this.scheduler.after(delay, () => this.deliver(message, attempt + 1));
  }

  /** One delivery attempt in the background; `attempt` catches what the request throws. */
  private deliver(message: Message, attempt: number): void {
    this.attempt(message, attempt).catch((err: unknown) =>
      this.logger.error({ webhookId: message.id, err: (err as Error).message }, 'webhook delivery failed'),
    );
  }
}
