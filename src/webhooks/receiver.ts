/**
 * The HTTP side of the Adaptive Decision webhook: reads the raw body (bounded), verifies it, parses the
 * event, and hands it to a handler that makes the work durable. It answers 2xx only after the handler
 * resolves, so the sender's retries cover every failure before that point. Refusals are logged with
 * their reason and the webhook id, never with the body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebhookEvent } from '../api/schemas.js';
import type { Logger } from '../observability/logger.js';
import type { WebhookVerifier } from './verify.js';

export type HandlerOutcome = 'accepted' | 'duplicate' | 'ignored';

export interface WebhookHandler {
  (event: WebhookEvent, webhookId: string): Promise<HandlerOutcome>;
}

interface ReceiverOptions {
  host: string;
  port: number;
  path: string;
  maxBodyBytes: number;
  verifier: WebhookVerifier;
  handler: WebhookHandler;
  logger: Logger;
  onOutcome?: (outcome: string) => void;
  /** Bounds on a slow sender; the defaults suit a webhook of a few KB. */
  timeouts?: Partial<ReceiverTimeouts>;
}

interface ReceiverTimeouts {
  /** Until the request headers have arrived. */
  headersMs: number;
  /** Until the whole request (headers and body) has arrived; then 408 and the socket is closed. */
  requestMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveMs: number;
}

/** Node's own defaults are 60 s for headers and 300 s for a request: far too long to hold a slot. */
const DEFAULT_RECEIVER_TIMEOUTS: ReceiverTimeouts = {
  headersMs: 5000,
  requestMs: 10000,
  keepAliveMs: 5000,
};

export interface WebhookReceiver {
  url: string;
  close(): Promise<void>;
}

class TooLarge extends Error {}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (declared > limit) {
      reject(new TooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new TooLarge());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

export async function startWebhookReceiver(options: ReceiverOptions): Promise<WebhookReceiver> {
  const { logger } = options;
  const answer = (res: http.ServerResponse, status: number, message: string, outcome: string): void => {
    options.onOutcome?.(outcome);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message }));
  };

  const timeouts = { ...DEFAULT_RECEIVER_TIMEOUTS, ...options.timeouts };
  const server = http.createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      keepAliveTimeout: timeouts.keepAliveMs,
      // Expired requests are only found when Node checks (every 30 s by default).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeouts.headersMs / 2))),
    },
    (req, res) => {
      (async () => {
        const path = (req.url ?? '/').split('?')[0];
        if (path !== options.path) return answer(res, 404, 'not found', 'not_found');
        if (req.method !== 'POST') return answer(res, 405, 'only POST is accepted', 'method_not_allowed');
        // The sender signs JSON; any other declared type is not a delivery, even when signed.
        if (!isJson(header(req, 'content-type'))) {
          logger.warn({ webhook_id: header(req, 'webhook-id') }, 'webhook refused: not application/json');
          return answer(res, 415, 'Content-Type must be application/json', 'unsupported_media_type');
        }
        let body: Buffer;
        try {
          body = await readBody(req, options.maxBodyBytes);
        } catch (err) {
          if (err instanceof TooLarge) {
            logger.warn({ webhook_id: header(req, 'webhook-id') }, 'webhook refused: body too large');
            return answer(res, 413, `body larger than ${options.maxBodyBytes} bytes`, 'too_large');
          }
          return answer(res, 400, 'could not read the body', 'unreadable');
        }
        const verdict = options.verifier.verify({
          id: header(req, 'webhook-id'),
          timestamp: header(req, 'webhook-timestamp'),
          signature: header(req, 'webhook-signature'),
          body,
        });
        if (!verdict.ok) {
          logger.warn({ webhook_id: header(req, 'webhook-id'), reason: verdict.reason }, 'webhook refused');
          const status = verdict.reason === 'missing_headers' ? 400 : 401;
          return answer(res, status, `webhook refused: ${verdict.reason}`, verdict.reason);
        }
        let event: WebhookEvent;
        try {
          const parsed = WebhookEvent.safeParse(JSON.parse(body.toString('utf8')));
          if (!parsed.success) throw new Error('not a webhook event');
          event = parsed.data;
        } catch {
          logger.warn({ webhook_id: verdict.id }, 'webhook refused: signed but not a valid event');
          return answer(res, 400, 'not a valid webhook event', 'invalid_event');
        }
        try {
          const outcome = await options.handler(event, verdict.id);
          return answer(res, 200, outcome, outcome);
        } catch (err) {
          // Not durable yet: a 5xx makes the sender retry later.
          logger.error(
            { webhook_id: verdict.id, err: err instanceof Error ? err.message : String(err) },
            'webhook failed',
          );
          return answer(res, 503, 'not processed; retry later', 'error');
        }
      })().catch((err: unknown) => {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, 'webhook request failed');
        if (!res.headersSent) answer(res, 500, 'internal error', 'error');
      });
    },
  );
  // A last resort for a socket that stays silent in any other phase.
  server.timeout = 2 * timeouts.requestMs;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}${options.path}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
