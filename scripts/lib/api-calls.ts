/** Reads the sandbox's request counters as the API calls a client made. */
import type { SandboxStats } from '../../src/sandbox/index.js';

export interface ApiCalls {
  /** Every request to the API and the upload URLs, whatever the answer (429s included). */
  total: number;
  creates: number;
  uploads: number;
  resultsReady: number;
  resultsNotReady: number;
  rateLimited: number;
  serverErrors: number;
  /** Token requests: not API calls (the authorization server), reported apart. */
  tokens: number;
}

export function apiCalls(stats: SandboxStats): ApiCalls {
  const out: ApiCalls = {
    total: 0,
    creates: 0,
    uploads: 0,
    resultsReady: 0,
    resultsNotReady: 0,
    rateLimited: 0,
    serverErrors: 0,
    tokens: 0,
  };
  for (const [key, count] of Object.entries(stats.requests)) {
    const [method, route, statusText] = key.split(' ') as [string, string, string];
    const status = Number(statusText);
    if (route.startsWith('/_sandbox')) continue;
    if (route.startsWith('/oauth2')) {
      out.tokens += count;
      continue;
    }
    out.total += count;
    if (status === 429) out.rateLimited += count;
    else if (status >= 500) out.serverErrors += count;
    else if (method === 'POST' && route === '/v2/submission') out.creates += count;
    else if (method === 'PUT' && route.startsWith('/_upload')) out.uploads += count;
    else if (method === 'GET' && /^\/v2\/submission\/:[^/]+\/\w+$/.test(route)) {
      if (status === 200) out.resultsReady += count;
      else if (status === 404) out.resultsNotReady += count;
    }
  }
  return out;
}
