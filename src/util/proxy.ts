/**
 * Which HTTP proxy a request to the API, its token endpoint, an upload URL or an http(s) blob goes
 * through, read as curl and Node's tools read it: `HTTPS_PROXY` for https targets, `HTTP_PROXY`
 * for http targets (lowercase first), `NO_PROXY` for the hosts reached directly. The settings
 * `api.proxyUrl` and `api.noProxy` replace the environment; `api.proxyUrl` `none` turns it off.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';

export interface ProxyRoutes {
  /** Proxy URL for https:// targets; '' reaches them directly. */
  https: string;
  /** Proxy URL for http:// targets; '' reaches them directly. */
  http: string;
  /** `NO_PROXY` rules: hosts reached directly. */
  noProxy: string;
}

export const NO_PROXY_ROUTES: ProxyRoutes = { https: '', http: '', noProxy: '' };

export type Env = Record<string, string | undefined>;

function envValue(env: Env, name: string): string {
  return (env[name.toLowerCase()] || env[name.toUpperCase()] || '').trim();
}

/**
 * The routes from the settings, falling back to the environment: `proxyUrl` '' reads
 * `HTTPS_PROXY`/`HTTP_PROXY`, `none` means no proxy; `noProxy` '' reads `NO_PROXY`.
 */
export function proxyRoutes(
  settings: { proxyUrl: string; noProxy: string },
  env: Env = process.env,
): ProxyRoutes {
  const noProxy = settings.noProxy.trim() || envValue(env, 'no_proxy');
  const url = settings.proxyUrl.trim();
  if (url.toLowerCase() === 'none') return NO_PROXY_ROUTES;
  if (url !== '') return { https: url, http: url, noProxy };
  return { https: envValue(env, 'https_proxy'), http: envValue(env, 'http_proxy'), noProxy };
}

/** Why `value` cannot be a proxy URL, or null. */
export function proxyUrlProblem(value: string): string | null {
  if (value === '' || value.toLowerCase() === 'none') return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL (http://host:port, or https://…)';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// URL';
  return null;
}

interface Rule {
  /** A host name without leading dot, or an IP literal; '*' matches every host. */
  host: string;
  port?: string;
}

function parseRules(noProxy: string): Rule[] {
  const rules: Rule[] = [];
  for (const raw of noProxy.split(/[,\s]+/)) {
    let entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') {
      rules.push({ host: '*' });
      continue;
    }
    let port: string | undefined;
    const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (v6) {
      rules.push({ host: v6[1]!, ...(v6[2] ? { port: v6[2] } : {}) });
      continue;
    }
    const colon = entry.lastIndexOf(':');
    if (colon > 0 && net.isIPv6(entry) === false && /^\d+$/.test(entry.slice(colon + 1))) {
      port = entry.slice(colon + 1);
      entry = entry.slice(0, colon);
    }
    entry = entry.replace(/^\*?\./, '').replace(/\.$/, '');
    if (entry !== '') rules.push({ host: entry, ...(port ? { port } : {}) });
  }
  return rules;
}

/**
 * Whether `NO_PROXY` rules send `url` directly: `*` matches everything; a name matches itself and
 * its subdomains (`example.com`, `.example.com` and `*.example.com` all match `api.example.com`);
 * an IP literal matches only itself; `host:port` only that port. No CIDR ranges, as curl before 7.86.
 */
export function bypassesProxy(url: URL, noProxy: string): boolean {
  const host = url.hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return parseRules(noProxy).some((rule) => {
    if (rule.host === '*') return true;
    if (rule.port !== undefined && rule.port !== port) return false;
    if (net.isIP(rule.host) !== 0 || net.isIP(host) !== 0) return rule.host === host;
    return host === rule.host || host.endsWith(`.${rule.host}`);
  });
}

/** The proxy `url` goes through, or null to reach it directly. */
export function proxyFor(url: URL, routes: ProxyRoutes): string | null {
  const proxy = url.protocol === 'https:' ? routes.https : url.protocol === 'http:' ? routes.http : '';
  if (proxy === '' || bypassesProxy(url, routes.noProxy)) return null;
  return proxy;
}

/** A proxy URL as it may be logged: scheme, host and port, never its user or password. */
export function displayProxy(proxy: string): string {
  try {
    const url = new URL(proxy);
    return `${url.protocol}//${url.host}`;
  } catch {
    return '(an invalid proxy URL)';
  }
}

/**
 * The CAs trusted for the API, its token endpoint, upload URLs and http(s) blobs: the system's
 * (Node's bundled roots) and those of `caFile`; undefined when no file is named (Node's default).
 */
export function trustedCas(caFile: string): string[] | undefined {
  if (caFile === '') return undefined;
  let pem: string;
  try {
    pem = readFileSync(caFile, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new Error(`api.caFile: ${caFile} cannot be read (${code})`, { cause: error });
  }
  return [...tls.rootCertificates, pem];
}
