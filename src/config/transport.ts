/**
 * The API and its token endpoint receive the client secret and bearer tokens, so plain http is
 * refused unless it stays on this machine (loopback) or `api.allowInsecureHttp` says otherwise.
 */
import { classifyAddress } from '../blobs/address.js';

function isLoopbackHost(hostname: string): boolean {
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
