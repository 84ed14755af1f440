/**
 * `http(s)://` blobs, only from configured hosts, each fetched once over pooled keep-alive
 * connections (undici, at most `connectionsPerHost` per origin) and kept until its upload is done
 * (`kept.ts`): a retried upload never fetches it again. A host name is resolved when a connection
 * is opened, every address is classified there, and the socket connects only to addresses that
 * passed (the connection's `lookup`), so a DNS answer cannot change between the check and the
 * connection; an IP literal is checked before each request. Through a proxy (`api.proxyUrl`) the
 * proxy connects, so the name's addresses are checked here before each request instead. Redirects
 * are followed by hand and each hop passes the same checks.
 */
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import type { Agent, Dispatcher, ProxyAgent } from 'undici';
import type { Logger } from '../observability/logger.js';
import { classifyAddress, isAddressAllowed } from './address.js';
import { BlobError } from './errors.js';
import type { Keeper } from './kept.js';
import { expectedSha256 } from './meter.js';
import { transferLimits, transferTimeout, type TransferLimits } from './pace.js';
import type { BlobPolicy } from './policy.js';
import {
  DEFAULT_CONNECTIONS_PER_HOST,
  discard,
  header,
  parseLength,
  pooledAgent,
  pooledProxyAgent,
  RequestDeadline,
} from './pool.js';
import { NO_PROXY_ROUTES, proxyFor, type ProxyRoutes } from '../util/proxy.js';
import type { BlobRef, OpenedBlob } from './types.js';
import { displayUrl } from './url.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses; replaceable in tests. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: HostResolver = (hostname) =>
  dns.promises.lookup(hostname, { all: true, verbatim: true });

const MAX_REDIRECTS = 5;
/** Allowed IP literals whose check is kept (`literalAddresses`); past this many, all are forgotten. */
const MAX_LITERALS_KEPT = 256;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const RETRIABLE_STATUSES = new Set([408, 425, 429]);
const REQUEST_HEADERS = { 'user-agent': 'docstream', 'accept-encoding': 'identity' };

function normalizeHostEntry(entry: string): string {
  return entry.trim().toLowerCase().replace(/\.$/, '').replace(/\.:/, ':');
}

function defaultPort(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

function statusError(status: number, display: string): BlobError {
  if (status === 404 || status === 410) {
    return new BlobError('blob_not_found', `${display} answered HTTP ${status}`);
  }
  const retriable = status >= 500 || RETRIABLE_STATUSES.has(status);
  return new BlobError('blob_unreadable', `${display} answered HTTP ${status}`, { retriable });
}

/** Transport failures are worth retrying; their messages may name the URL, so only the code is kept. */
function transportError(error: unknown, display: string): BlobError {
  if (error instanceof BlobError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  const what = typeof code === 'string' ? code : 'network error';
  return new BlobError('blob_unreadable', `${display} could not be fetched (${what})`, { retriable: true });
}

interface Fetched {
  response: Dispatcher.ResponseData;
  url: URL;
}

export class HttpBlobReader {
  private readonly hosts: Set<string>;
  private readonly limits: TransferLimits;
  private readonly agent: Agent;
  private readonly literals = new Map<string, ResolvedAddress[]>();
  /** One pool per proxy URL, opened on first use. */
  private readonly tunnels = new Map<string, ProxyAgent>();
  private readonly routes: ProxyRoutes;

  constructor(
    private readonly policy: BlobPolicy,
    private readonly keeper: Keeper,
    private readonly logger: Logger,
    private readonly resolver: HostResolver = systemResolver,
    private readonly connectionsPerHost = DEFAULT_CONNECTIONS_PER_HOST,
    private readonly egress: { routes: ProxyRoutes; ca?: string[] } = { routes: NO_PROXY_ROUTES },
  ) {
    this.hosts = new Set(policy.httpHosts.map(normalizeHostEntry));
    this.limits = transferLimits(policy);
    this.routes = egress.routes;
    this.agent = pooledAgent(connectionsPerHost, this.checkedLookup, egress.ca);
  }

  /** The pool a request to `url` goes through: direct, or the tunnel of its proxy. */
  private dispatcherFor(url: URL): Dispatcher | null {
    const proxy = proxyFor(url, this.routes);
    if (proxy === null) return null;
    let tunnel = this.tunnels.get(proxy);
    if (tunnel === undefined) {
      tunnel = pooledProxyAgent(this.connectionsPerHost, proxy, this.egress.ca);
      this.tunnels.set(proxy, tunnel);
    }
    return tunnel;
  }

  /** The addresses of `hostname` a connection may go to, or a BlobError saying why none. */
  private async allowedAddresses(hostname: string): Promise<ResolvedAddress[]> {
    if (net.isIP(hostname) !== 0) return this.literalAddresses(hostname);
    let addresses: ResolvedAddress[];
    try {
      addresses = await this.resolver(hostname);
    } catch (error) {
      throw transportError(error, `host ${hostname}`);
    }
    return this.allowedOf(hostname, addresses);
  }

  /**
   * An IP literal as an address a connection may go to, or a BlobError. Checked before each
   * request to a literal (no lookup checks it): an allowed literal's answer, which depends on
   * nothing but the literal and the policy, is kept (a few hundred at most), so that each GET does
   * not classify it again; a refused one is checked anew each time (a dead letter, rare).
   */
  private literalAddresses(ip: string): ResolvedAddress[] {
    const known = this.literals.get(ip);
    if (known) return known;
    const allowed = this.allowedOf(ip, [{ address: ip, family: net.isIP(ip) }]);
    if (this.literals.size >= MAX_LITERALS_KEPT) this.literals.clear();
    this.literals.set(ip, allowed);
    return allowed;
  }

  /** Of `addresses` (of `hostname`), those a connection may go to, or a BlobError saying why none. */
  private allowedOf(hostname: string, addresses: ResolvedAddress[]): ResolvedAddress[] {
    const classified = addresses.map((a) => ({ ...a, cls: classifyAddress(a.address) }));
    const metadata = classified.find((a) => a.cls === 'metadata');
    if (metadata) {
      throw new BlobError('blob_not_allowed', `host ${hostname} resolves to a cloud metadata address`);
    }
    const allowed = classified.filter((a) => isAddressAllowed(a.cls, this.policy.allowPrivateNetworks));
    if (allowed.length === 0) {
      const first = classified[0];
      const why = first ? `a ${first.cls} address (${first.address})` : 'no address';
      throw new BlobError(
        'blob_not_allowed',
        `host ${hostname} resolves to ${why}; private networks need blobs.allowPrivateNetworks`,
      );
    }
    return allowed.map(({ address, family }) => ({ address, family }));
  }

  /** The `lookup` of every new connection: only checked addresses, whatever the name resolves to. */
  private readonly checkedLookup: LookupFunction = (host, options, callback) => {
    this.allowedAddresses(host.replace(/^\[(.*)\]$/, '$1')).then(
      (addresses) => {
        const family = typeof options.family === 'number' ? options.family : 0;
        const candidates = family === 0 ? addresses : addresses.filter((a) => a.family === family);
        if (options.all) {
          callback(null, candidates);
          return;
        }
        const first = candidates[0];
        if (!first) {
          callback(
            Object.assign(new Error(`no IPv${family} address for ${host}`), { code: 'ENOTFOUND' }),
            '',
            0,
          );
          return;
        }
        callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error as Error, '', 0),
    );
  };

  /** The host of `url` without brackets, once scheme and host are allowed. */
  private allowedHost(url: URL): string {
    const display = displayUrl(url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new BlobError('blob_not_allowed', `${display}: only http and https are allowed`);
    }
    const hostname = url.hostname.toLowerCase().replace(/\.$/, '');
    if (!this.hosts.has(hostname) && !this.hosts.has(`${hostname}:${defaultPort(url)}`)) {
      throw new BlobError('blob_not_allowed', `host ${url.host} of ${display} is not in blobs.httpHosts`);
    }
    return hostname.replace(/^\[(.*)\]$/, '$1');
  }

  /** The addresses a connection for `url` may go to, or a BlobError saying why none. */
  async check(url: URL): Promise<ResolvedAddress[]> {
    return this.allowedAddresses(this.allowedHost(url));
  }

  /**
   * GET with every hop checked; resolves once response headers arrived. `startedAt`: when the
   * transfer began; the wait for an answer counts against its total bound.
   */
  private async fetch(start: URL, startedAt: number): Promise<Fetched> {
    let url = start;
    const total = this.limits.transferTimeoutMs;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const display = displayUrl(url);
      // A name's addresses are checked when a connection to it opens (`checkedLookup`); a
      // connection to an IP literal asks no lookup, so a literal is checked here.
      const host = this.allowedHost(url);
      const tunnel = this.dispatcherFor(url);
      // Through a proxy no lookup of this process runs for the connection: the name is checked here.
      if (tunnel !== null) await this.allowedAddresses(host);
      else if (net.isIP(host) !== 0) this.literalAddresses(host);
      const left = total > 0 ? Math.max(1, total - (Date.now() - startedAt)) : Infinity;
      // The total bound covers the wait for the answer here; from the first byte on, the keeper does.
      const deadline = new RequestDeadline(left);
      let response: Dispatcher.ResponseData;
      try {
        // Origin and path given apart: the URL was parsed and checked already.
        response = await (tunnel ?? this.agent).request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          signal: deadline,
          headersTimeout: Math.min(30_000, left),
          bodyTimeout: 60_000,
          headers: REQUEST_HEADERS,
        });
      } catch (error) {
        if (total > 0 && Date.now() - startedAt >= total) throw transferTimeout(display, this.limits);
        throw transportError(error, display);
      } finally {
        deadline.clear();
      }
      const location = header(response.headers, 'location');
      if (!REDIRECT_STATUSES.has(response.statusCode) || location === undefined) {
        return { response, url };
      }
      discard(response.body);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new BlobError('blob_unreadable', `${display} redirected to an invalid URL`);
      }
      if (url.protocol === 'https:' && next.protocol !== 'https:') {
        throw new BlobError('blob_not_allowed', `${display} redirected from https to ${next.protocol}`);
      }
      this.logger.debug({ blob: display, to: displayUrl(next) }, 'blob redirect');
      url = next;
    }
    throw new BlobError(
      'blob_unreadable',
      `${displayUrl(start)} redirected more than ${MAX_REDIRECTS} times`,
    );
  }

  /** Fetches, and insists on a 200 with raw (not content-encoded) bytes. */
  private async fetchOk(url: URL, startedAt: number): Promise<Fetched & { length: number | undefined }> {
    const fetched = await this.fetch(url, startedAt);
    const { response } = fetched;
    const display = displayUrl(fetched.url);
    const encoding = header(response.headers, 'content-encoding');
    let problem: BlobError | undefined;
    if (response.statusCode !== 200 && response.statusCode !== 203) {
      problem = statusError(response.statusCode, display);
    } else if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      problem = new BlobError('blob_unreadable', `${display} was served with Content-Encoding ${encoding}`);
    }
    if (problem) {
      discard(response.body);
      throw problem;
    }
    return { ...fetched, length: parseLength(response.headers['content-length']) };
  }

  /** Fetches the blob once, checks it, and keeps its bytes for the upload (`kept.ts`). */
  async resolve(url: URL, display: string, ref: BlobRef): Promise<OpenedBlob> {
    const maxBytes = this.policy.maxBytes;
    const startedAt = Date.now();
    const expected = this.policy.verifySha256 && ref.sha256 ? expectedSha256(ref.sha256) : undefined;
    const { response, length } = await this.fetchOk(url, startedAt);
    const body = response.body as Readable;
    if (length !== undefined && length > maxBytes) {
      // Not worth reading to keep its connection: the connection goes.
      body.on('error', () => undefined).destroy();
      throw new BlobError(
        'blob_too_large',
        `${display} has ${length} bytes, more than blobs.maxBytes (${maxBytes})`,
      );
    }
    return this.keeper.keep(body, {
      display,
      length,
      contentType: ref.content_type ?? header(response.headers, 'content-type') ?? undefined,
      expected,
      limits: this.limits,
      startedAt,
      mapError: (error) => transportError(error, display),
    });
  }

  close(): void {
    void this.agent.destroy().catch(() => undefined);
    for (const tunnel of this.tunnels.values()) void tunnel.destroy().catch(() => undefined);
  }
}
