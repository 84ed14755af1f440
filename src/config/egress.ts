/**
 * The egress of the API client and the http(s) blob source from the `api` settings: the proxy routes
 * (settings, else the environment) and the CAs of `api.caFile`. A proxy password found in the
 * environment is no setting, so it is remembered for redaction here.
 */
import { rememberSecrets } from '../observability/redact.js';
import { proxyRoutes, proxyUrlProblem, trustedCas, type Env, type ProxyRoutes } from '../util/proxy.js';

/** What the client and the http(s) blob source are given: the routes and the CAs of the `api` settings. */
export function egressOf(
  api: { proxyUrl: string; noProxy: string; caFile: string },
  env: Env = process.env,
): { routes: ProxyRoutes; ca?: string[] } {
  const routes = proxyRoutes(api, env);
  for (const [scheme, proxy] of [
    ['https', routes.https],
    ['http', routes.http],
  ] as const) {
    const problem = proxyUrlProblem(proxy);
    if (problem !== null) {
      const where = api.proxyUrl.trim() !== '' ? 'api.proxyUrl' : `${scheme.toUpperCase()}_PROXY`;
      throw new Error(`${where}: the proxy URL ${problem}`);
    }
  }
  for (const proxy of [routes.https, routes.http]) {
    try {
      const password = new URL(proxy).password;
      if (password) rememberSecrets([decodeURIComponent(password), password]);
    } catch {
      // No URL, no password.
    }
  }
  const ca = trustedCas(api.caFile);
  return ca ? { routes, ca } : { routes };
}
