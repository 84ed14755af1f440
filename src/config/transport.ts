/**
 * The API and its token endpoint receive the client secret and bearer tokens, so plain http is
 * refused unless it stays on this machine (loopback) or `api.allowInsecureHttp` says otherwise.
 */
import { classifyAddress } from '../blobs/address.js';

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return classifyAddress(host) === 'loopback';
}

/**
 * Why `value` may not be used as an API or token URL, or null. Only plain http to a host other
 * than loopback is judged here; malformed URLs are left to the client, which names them.
 */
export function insecureHttpProblem(value: string, allowInsecureHttp: boolean): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' || allowInsecureHttp || isLoopbackHost(url.hostname)) return null;
  // Shown without user info or path: the URL may carry a password.
  return (
    `http://${url.host} sends the client secret and tokens unencrypted; ` +
    'use https, or set api.allowInsecureHttp to true to allow it'
  );
}

/** Every API and token URL of the `api` section, with the key it comes from. */
export function apiUrls(api: {
  baseUrl: string;
  tokenUrl: string;
  cells: unknown;
}): Array<[where: string, url: string]> {
  const urls: Array<[string, string]> = [['api.baseUrl', api.baseUrl]];
  if (api.tokenUrl !== '') urls.push(['api.tokenUrl', api.tokenUrl]);
  if (typeof api.cells === 'object' && api.cells !== null) {
    for (const [name, cell] of Object.entries(api.cells)) {
      if (typeof cell !== 'object' || cell === null) continue;
      for (const key of ['baseUrl', 'tokenUrl']) {
        const value = (cell as Record<string, unknown>)[key];
        if (typeof value === 'string') urls.push([`api.cells.${name}.${key}`, value]);
      }
    }
  }
  return urls;
}

/** The host of a Kafka bootstrap address (`host:port`, `[v6]:port`). */
function brokerHost(address: string): string {
  const v6 = /^\[([^\]]+)\]/.exec(address);
  if (v6) return v6[1]!;
  const colon = address.lastIndexOf(':');
  return colon > 0 ? address.slice(0, colon) : address;
}

/**
 * Why these brokers may not be reached as configured, or null: a broker not on this machine over a
 * plaintext connection carries the records (documents' metadata) and any SASL password in clear.
 */
export function plaintextBrokerProblem(brokers: readonly string[], tls: boolean): string | null {
  if (tls) return null;
  const remote = brokers.find((b) => !isLoopbackHost(brokerHost(b.trim())));
  if (remote === undefined) return null;
  return (
    `${remote} is not on this machine and the connection is plaintext (records and credentials ` +
    'readable on the network): set kafka.ssl to true (kafka.sslCaFile for a private CA)'
  );
}
