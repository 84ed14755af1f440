/**
 * The pooled keep-alive HTTP client of remote blobs (http(s) and s3), and what both read from its
 * answers: one undici Agent per source, at most `connections` per origin, idle connections closed
 * before common servers close them. http(s) blobs add a checked `lookup`; the S3 endpoint is the
 * operator's, so its pool connects where its name resolves.
 */
import { EventEmitter } from 'node:events';
import type { LookupFunction } from 'node:net';
import { Agent, ProxyAgent, type Dispatcher } from 'undici';

/** Connections kept per origin when the source is not told how many documents run at once. */
export const DEFAULT_CONNECTIONS_PER_HOST = 64;
/**
 * Idle connections are closed after this long: below the 5 s idle timeout of Node's HTTP server and
 * of many proxies, so that a request is not sent on a connection the server is closing.
 */
const IDLE_SOCKET_MS = 4_000;
/** Bound on opening a connection (TCP and TLS). */
const CONNECT_TIMEOUT_MS = 10_000;

/** `ca`: the CAs trusted for https origins (undefined: Node's roots). */
export function pooledAgent(connections: number, lookup?: LookupFunction, ca?: string[]): Agent {
  return new Agent({
    connections,
    keepAliveTimeout: IDLE_SOCKET_MS,
    keepAliveMaxTimeout: IDLE_SOCKET_MS,
    connect: {
      timeout: CONNECT_TIMEOUT_MS,
      ...(lookup ? { lookup } : {}),
      ...(ca ? { ca } : {}),
    },
  });
}

/**
 * The same pool through an HTTP proxy (a CONNECT tunnel per connection, for http and https
 * origins); the proxy resolves the origin's name. `ca` is trusted for the origins and an https proxy.
 */
export function pooledProxyAgent(connections: number, proxy: string, ca?: string[]): ProxyAgent {
  const tls = { timeout: CONNECT_TIMEOUT_MS, ...(ca ? { ca } : {}) };
  return new ProxyAgent({
    uri: proxy,
    connections,
    keepAliveTimeout: IDLE_SOCKET_MS,
    keepAliveMaxTimeout: IDLE_SOCKET_MS,
    requestTls: tls,
    proxyTls: tls,
  });
}

export function parseLength(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

export function header(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Lets the rest of an answer go by, so that its connection goes back to the pool. */
export function discard(body: Dispatcher.ResponseData['body']): void {
  body.dump().catch(() => undefined);
}

/**
 * An abort signal for one request through the pool, fired after `ms` (never when not finite).
 * undici takes an EventEmitter that emits 'abort' as a signal: per request it costs a fraction of
 * an AbortController (whose AbortSignal is an EventTarget), which showed in profiles of every GET.
 */
export class RequestDeadline extends EventEmitter {
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(ms: number) {
    super();
    if (Number.isFinite(ms)) this.timer = setTimeout(() => this.emit('abort'), Math.max(1, ms));
  }

  /** Fires `abort` too when this deadline passes (for clients that want a real AbortSignal). */
  link(abort: AbortController): AbortSignal {
    this.once('abort', () => abort.abort());
    return abort.signal;
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}
