/**
 * The HTTP exchange under the sender: node:http/https over one keep-alive pool per client.
 *
 * Measured (scripts/client-overhead.ts --concurrent, 2000 GETs at 32 concurrent, server in another
 * process): got 0.227 ms of CPU per call, node:http 0.046 ms. At five calls per document that
 * difference alone was about a quarter of the connector's CPU, so the sender speaks node:http
 * directly; everything got added that the sender needs is here: a total timeout, JSON and form
 * bodies, query strings, streamed bodies. No redirects are followed (the API and pre-signed upload
 * URLs answer directly) and no compression is asked for.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { NO_PROXY_ROUTES, proxyFor, type ProxyRoutes } from '../util/proxy.js';

export interface WireRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  searchParams?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string>;
  body?: Readable | Buffer;
  timeoutMs: number;
}

export interface WireResponse {
  statusCode: number;
  statusMessage: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A failure without an HTTP answer; `code` is Node's (ECONNREFUSED, ECONNRESET, ...) or ETIMEDOUT. */
export class WireError extends Error {
  readonly code?: string;
  constructor(message: string, code?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WireError';
    this.code = code;
  }
}

export const DEFAULT_MAX_SOCKETS = 256;
/** Printable ASCII without `#`: a path Node sends exactly as given. */
const SAFE_PATH = /^\/[\x21-\x22\x24-\x7e]*$/;
/** Origins whose parsed options are kept (pre-signed upload URLs may come from many hosts). */
const MAX_ORIGINS = 64;

/**
 * Idle keep-alive connections are closed after this long: below the 5 s idle timeout of Node's
 * HTTP server and of many proxies, so that a request is not sent on a connection the server is
 * closing (a create that fails that way cannot be resent).
 */
const IDLE_SOCKET_MS = 4_000;

/**
 * The API client's connection pool, for http and https: Node's global agent keeps at most 256 idle
 * sockets and closes the rest after a burst, so a backlog of uploads opened new TCP connections.
 * Here idle sockets are kept up to the pool size and closed only after IDLE_SOCKET_MS.
 */
function poolOptions(maxSockets: number) {
  return {
    keepAlive: true,
    maxSockets,
    maxFreeSockets: maxSockets,
    scheduling: 'lifo' as const,
    timeout: IDLE_SOCKET_MS,
  };
}

export function keepAliveAgents(maxSockets: number, ca?: string[]): { http: http.Agent; https: https.Agent } {
  const pool = poolOptions(maxSockets);
  return { http: new http.Agent(pool), https: new https.Agent(ca ? { ...pool, ca } : pool) };
}

/** How the client's connections leave this machine: through which proxy, trusting which CAs. */
export interface Egress {
  routes: ProxyRoutes;
  /** CAs for https targets (and an https proxy); undefined: Node's roots. */
  ca?: string[];
}

/**
 * The direct pool and one tunnelling pool (HTTP CONNECT, kept alive like the direct one) per proxy
 * URL, chosen per origin: a URL that `NO_PROXY` names, or no proxy, goes direct.
 */
export class EgressAgents {
  private readonly direct: { http: http.Agent; https: https.Agent };
  private readonly tunnels = new Map<string, http.Agent>();

  constructor(
    private readonly maxSockets: number,
    private readonly egress: Egress = { routes: NO_PROXY_ROUTES },
  ) {
    this.direct = keepAliveAgents(maxSockets, egress.ca);
  }

  /** The agent of a request to `url` (an absolute http or https URL). */
  agentFor(url: URL): http.Agent {
    const proxy = proxyFor(url, this.egress.routes);
    if (proxy === null) return url.protocol === 'https:' ? this.direct.https : this.direct.http;
    let tunnel = this.tunnels.get(proxy);
    if (tunnel === undefined) {
      const pool = poolOptions(this.maxSockets);
      tunnel = new HttpsProxyAgent(proxy, this.egress.ca ? { ...pool, ca: this.egress.ca } : pool);
      this.tunnels.set(proxy, tunnel);
    }
    return tunnel;
  }

  destroy(): void {
    this.direct.http.destroy();
    this.direct.https.destroy();
    for (const tunnel of this.tunnels.values()) tunnel.destroy();
  }
}

export class Wire {
  private readonly agents: EgressAgents;
  /** Connection options by origin (`https://host:port`): the API, the token host, upload hosts. */
  private readonly origins = new Map<string, http.RequestOptions>();

  constructor(maxSockets = DEFAULT_MAX_SOCKETS, egress?: Egress) {
    this.agents = new EgressAgents(maxSockets, egress);
  }

  /**
   * The connection options of `url`'s origin (parsed once per origin) and its path with query; null
   * for a URL this cannot split safely (user info, no path), which Node then parses itself.
   */
  private target(url: string): { options: http.RequestOptions; path: string } | null {
    const start = url.indexOf('//');
    if (start < 0) return null;
    const slash = url.indexOf('/', start + 2);
    if (slash < 0) return null;
    const origin = url.slice(0, slash);
    let options = this.origins.get(origin);
    if (options === undefined) {
      let parsed: URL;
      try {
        parsed = new URL(origin);
      } catch {
        return null;
      }
      if (parsed.username || parsed.password || parsed.origin !== origin.toLowerCase()) return null;
      options = {
        protocol: parsed.protocol,
        // A bracketed IPv6 literal is given to the socket without its brackets.
        hostname: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: parsed.port || (parsed.protocol === 'https:' ? 443 : 80),
        // Direct or through a proxy: decided once per origin.
        agent: this.agents.agentFor(parsed),
      };
      if (this.origins.size >= MAX_ORIGINS) this.origins.clear();
      this.origins.set(origin, options);
    }
    const path = url.slice(slash);
    // Anything Node would rewrite (a fragment, a character it escapes or refuses) goes the slow way.
    if (!SAFE_PATH.test(path)) return null;
    return { options, path };
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agents.destroy();
  }

  exchange(request: WireRequest): Promise<WireResponse> {
    const headers = request.headers;
    let payload: Buffer | Readable | undefined = request.body;
    if (request.json !== undefined) {
      payload = Buffer.from(JSON.stringify(request.json));
      headers['content-type'] = 'application/json';
    } else if (request.form !== undefined) {
      payload = Buffer.from(new URLSearchParams(request.form).toString());
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    if (Buffer.isBuffer(payload)) headers['content-length'] = String(payload.length);
    else if (payload === undefined && request.method !== 'GET') headers['content-length'] = '0';
    let url = request.url;
    if (request.searchParams !== undefined) {
      const query = new URLSearchParams(request.searchParams).toString();
      if (query) url += (url.includes('?') ? '&' : '?') + query;
    }
    const secure = url.startsWith('https:');
    const transport = secure ? https : http;
    // Host and port from a per-origin cache, the path as given: Node would otherwise parse the
    // whole URL into a URL object on every call.
    const target = this.target(url);

    return new Promise<WireResponse>((resolve, reject) => {
      let done = false;
      const fail = (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        req.destroy();
        if (payload instanceof Readable) payload.destroy();
        const err = error as NodeJS.ErrnoException;
        reject(
          error instanceof WireError
            ? error
            : new WireError(err?.message ?? String(error), err?.code, { cause: error }),
        );
      };
      const timer = setTimeout(
        () => fail(new WireError(`no answer within ${request.timeoutMs} ms`, 'ETIMEDOUT')),
        request.timeoutMs,
      );
      let req: http.ClientRequest;
      try {
        const options = target
          ? { ...target.options, path: target.path, method: request.method, headers }
          : { method: request.method, headers, agent: this.agents.agentFor(new URL(url)) };
        const onResponse = (res: http.IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', fail);
          res.on('aborted', () => fail(new WireError('the connection closed mid-answer', 'ECONNRESET')));
          res.on('end', () => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            resolve({
              statusCode: res.statusCode ?? 0,
              statusMessage: res.statusMessage ?? '',
              headers: res.headers,
              body:
                chunks.length === 1
                  ? (chunks[0] as Buffer).toString('utf8')
                  : Buffer.concat(chunks).toString('utf8'),
            });
          });
        };
        req = target ? transport.request(options, onResponse) : transport.request(url, options, onResponse);
      } catch (error) {
        // An invalid URL or header: nothing was sent.
        clearTimeout(timer);
        done = true;
        reject(
          new WireError(error instanceof Error ? error.message : String(error), 'ERR_INVALID_REQUEST', {
            cause: error,
          }),
        );
        return;
      }
      req.on('error', fail);
      if (payload instanceof Readable) {
        payload.once('error', fail);
        payload.pipe(req);
      } else {
        req.end(payload);
      }
    });
  }
}
