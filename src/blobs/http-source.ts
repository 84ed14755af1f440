/**
 * `http(s)://` blobs, only from configured hosts. The host name is resolved here, every
 * address is classified, and the connection is pinned to the checked addresses through the
 * request's `lookup`, so a DNS answer cannot change between the check and the connection.
 * Redirects are followed by hand and each hop passes the same checks.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import got, { type Request, type Response } from 'got';
import type { Logger } from '../observability/logger.js';
import { classifyAddress, isAddressAllowed } from './address.js';
import { BlobError } from './errors.js';
import { expectedSha256, Meter } from './meter.js';
import { Pace, transferLimits, transferTimeout, type TransferLimits } from './pace.js';
import type { BlobPolicy } from './policy.js';
import { verifiedSpooledBlob, type Spool } from './spool.js';
import type { BlobRef, OpenedBlob } from './types.js';
import { displayUrl } from './url.js';
import { guard } from './guard.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses; replaceable in tests. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: HostResolver = (hostname) =>
  dns.promises.lookup(hostname, { all: true, verbatim: true });

const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const RETRIABLE_STATUSES = new Set([408, 425, 429]);

function normalizeHostEntry(entry: string): string {
  return entry.trim().toLowerCase().replace(/\.$/, '').replace(/\.:/, ':');
}

function defaultPort(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/** Every request goes to the addresses that were checked, whatever the system resolver says now. */
function pinnedLookup(hostname: string, addresses: ResolvedAddress[]): LookupFunction {
  return (host, options, callback) => {
    if (host !== hostname) {
      callback(Object.assign(new Error(`unexpected lookup of ${host}`), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    const family = typeof options.family === 'number' ? options.family : 0;
    const candidates = family === 0 ? addresses : addresses.filter((a) => a.family === family);
    if (options.all) {
      callback(null, candidates);
      return;
    }
    const first = candidates[0];
    if (!first) {
      callback(Object.assign(new Error(`no IPv${family} address for ${host}`), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    callback(null, first.address, first.family);
  };
}

function parseLength(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
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
  stream: Request;
  response: Response;
  url: URL;
}

export class HttpBlobReader {
  private readonly hosts: Set<string>;
  private readonly limits: TransferLimits;
  private readonly agents = {
    http: new http.Agent({ keepAlive: true }),
    https: new https.Agent({ keepAlive: true }),
  };

  constructor(
    private readonly policy: BlobPolicy,
    private readonly spool: Spool,
    private readonly logger: Logger,
    private readonly resolver: HostResolver = systemResolver,
  ) {
    this.hosts = new Set(policy.httpHosts.map(normalizeHostEntry));
    this.limits = transferLimits(policy);
  }

  /** The addresses a request to `url` may connect to, or a BlobError saying why none. */
  async check(url: URL): Promise<ResolvedAddress[]> {
    const display = displayUrl(url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new BlobError('blob_not_allowed', `${display}: only http and https are allowed`);
    }
    const hostname = url.hostname.toLowerCase().replace(/\.$/, '');
    if (!this.hosts.has(hostname) && !this.hosts.has(`${hostname}:${defaultPort(url)}`)) {
      throw new BlobError('blob_not_allowed', `host ${url.host} of ${display} is not in blobs.httpHosts`);
    }
    const bare = hostname.replace(/^\[(.*)\]$/, '$1');
    let addresses: ResolvedAddress[];
    if (net.isIP(bare) !== 0) {
      addresses = [{ address: bare, family: net.isIP(bare) }];
    } else {
      try {
        addresses = await this.resolver(bare);
      } catch (error) {
        throw transportError(error, display);
      }
    }
    const classified = addresses.map((a) => ({ ...a, cls: classifyAddress(a.address) }));
    const metadata = classified.find((a) => a.cls === 'metadata');
    if (metadata) {
      throw new BlobError('blob_not_allowed', `host ${url.hostname} resolves to a cloud metadata address`);
    }
    const allowed = classified.filter((a) => isAddressAllowed(a.cls, this.policy.allowPrivateNetworks));
    if (allowed.length === 0) {
      const first = classified[0];
      const why = first ? `a ${first.cls} address (${first.address})` : 'no address';
      throw new BlobError(
        'blob_not_allowed',
        `host ${url.hostname} resolves to ${why}; private networks need blobs.allowPrivateNetworks`,
      );
    }
    return allowed.map(({ address, family }) => ({ address, family }));
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
      const addresses = await this.check(url);
      const left = total > 0 ? Math.max(1, total - (Date.now() - startedAt)) : Infinity;
      const stream = got.stream(url, {
        method: 'GET',
        dnsLookup: pinnedLookup(url.hostname, addresses),
        agent: this.agents,
        followRedirect: false,
        throwHttpErrors: false,
        decompress: false,
        retry: { limit: 0 },
        timeout: {
          connect: Math.min(10_000, left),
          secureConnect: Math.min(10_000, left),
          response: Math.min(30_000, left),
          socket: 60_000,
        },
        headers: { 'user-agent': 'docstream', 'accept-encoding': 'identity' },
      });
      const response = await new Promise<Response>((resolve, reject) => {
        stream.once('response', resolve);
        stream.on('error', reject);
      }).catch((error: unknown) => {
        stream.destroy();
        if (total > 0 && Date.now() - startedAt >= total) throw transferTimeout(display, this.limits);
        throw transportError(error, display);
      });
      const location = response.headers.location;
      if (!REDIRECT_STATUSES.has(response.statusCode) || location === undefined) {
        return { stream, response, url };
      }
      stream.destroy();
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
    const { response, stream } = fetched;
    const display = displayUrl(fetched.url);
    const encoding = response.headers['content-encoding'];
    let problem: BlobError | undefined;
    if (response.statusCode !== 200 && response.statusCode !== 203) {
      problem = statusError(response.statusCode, display);
    } else if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      problem = new BlobError('blob_unreadable', `${display} was served with Content-Encoding ${encoding}`);
    }
    if (problem) {
      stream.destroy();
      throw problem;
    }
    return { ...fetched, length: parseLength(response.headers['content-length']) };
  }

  async resolve(url: URL, display: string, ref: BlobRef): Promise<OpenedBlob> {
    const maxBytes = this.policy.maxBytes;
    const startedAt = Date.now();
    const first = await this.fetchOk(url, startedAt);
    const contentType = ref.content_type ?? first.response.headers['content-type'] ?? undefined;
    if (first.length !== undefined && first.length > maxBytes) {
      first.stream.destroy();
      throw new BlobError(
        'blob_too_large',
        `${display} has ${first.length} bytes, more than blobs.maxBytes (${maxBytes})`,
      );
    }
    const expected = this.policy.verifySha256 && ref.sha256 ? expectedSha256(ref.sha256) : undefined;

    // Verification must see every byte before the caller does, and an upload needs a length:
    // either way the bytes go to a private temp file first.
    if (expected !== undefined || first.length === undefined) {
      const pace = new Pace(this.limits, display, startedAt);
      const file = await this.spool.write(first.stream, maxBytes, display, pace).catch((error: unknown) => {
        throw transportError(error, display);
      });
      return verifiedSpooledBlob(file, contentType, expected, display);
    }

    first.stream.destroy();
    const size = first.length;
    const finalUrl = first.url;
    let closed = false;
    return {
      size,
      contentType,
      sha256: undefined,
      open: async (): Promise<Readable> => {
        if (closed) throw new BlobError('blob_unreadable', `${display} was already cleaned up`);
        const openedAt = Date.now();
        const again = await this.fetchOk(finalUrl, openedAt);
        if (again.length !== undefined && again.length !== size) {
          again.stream.destroy();
          throw new BlobError(
            'blob_unreadable',
            `${display} changed size from ${size} to ${again.length} bytes`,
            {
              retriable: true,
            },
          );
        }
        const changed = () =>
          new BlobError('blob_unreadable', `${display} did not deliver exactly ${size} bytes`, {
            retriable: true,
          });
        const meter = new Meter({ maxBytes, exactBytes: size, tooMany: changed, tooFew: changed });
        const mapError = (error: unknown) => transportError(error, display);
        return guard(
          guard(again.stream, new Pace(this.limits, display, openedAt), mapError),
          meter,
          mapError,
        );
      },
      cleanup: async () => {
        closed = true;
      },
    };
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
