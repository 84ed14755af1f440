/**
 * How docstream reaches a secured schema registry: basic auth, a static bearer token or one from
 * an OIDC client-credentials flow (refreshed before it expires), and TLS with a private CA and a
 * client certificate. The TLS settings apply to registry connections only (an undici agent of
 * their own), not to the process's other connections.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { OidcTokenSource } from '../client/oidc-token.js';
import { loadTlsFiles } from '../util/tls-files.js';
import type { RegistryClientSettings as RegistrySettings } from './registry-client.js';

/** The `registry` settings read here (the shape of the configuration's `registry` section). */
export interface RegistryAccessSettings {
  username: string;
  password: string;
  bearerToken: string;
  oauthTokenUrl: string;
  oauthClientId: string;
  oauthClientSecret: string;
  oauthScope: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  keyPassword: string;
}

export class RegistryAccessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistryAccessError';
  }
}

function authorizationOf(
  r: RegistryAccessSettings,
): Pick<RegistrySettings, 'authorization' | 'username' | 'password'> {
  const ways = [r.username !== '', r.bearerToken !== '', r.oauthTokenUrl !== ''].filter(Boolean).length;
  if (ways > 1) {
    throw new RegistryAccessError(
      'registry: set one of registry.username, registry.bearerToken and registry.oauthTokenUrl (one way to authenticate)',
    );
  }
  if (r.bearerToken !== '') {
    const header = `Bearer ${r.bearerToken}`;
    return { authorization: async () => header };
  }
  if (r.oauthTokenUrl !== '') {
    if (r.oauthClientId === '') {
      throw new RegistryAccessError('registry.oauthClientId: is required with registry.oauthTokenUrl');
    }
    const source = new OidcTokenSource({
      tokenUrl: r.oauthTokenUrl,
      clientId: r.oauthClientId,
      clientSecret: r.oauthClientSecret,
      scope: r.oauthScope,
      settingPrefix: 'registry.oauth',
    });
    return { authorization: async () => `Bearer ${await source.token()}` };
  }
  if (r.username !== '') return { username: r.username, password: r.password };
  return {};
}

function fetchOf(r: RegistryAccessSettings): Pick<RegistrySettings, 'fetch'> {
  if (!r.caFile && !r.certFile && !r.keyFile) return {};
  const tls = loadTlsFiles(
    { caFile: r.caFile, certFile: r.certFile, keyFile: r.keyFile, keyPassword: r.keyPassword },
    {
      caFile: 'registry.caFile',
      certFile: 'registry.certFile',
      keyFile: 'registry.keyFile',
      keyPassword: 'registry.keyPassword',
    },
  );
  const dispatcher = new Agent({ connect: tls });
  const tlsFetch = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    }) as unknown as Promise<Response>;
  return { fetch: tlsFetch as typeof fetch };
}

/** The registry client's authentication and TLS from the settings; throws naming the setting at fault. */
export function registryAccessOf(r: RegistryAccessSettings): Partial<RegistrySettings> {
  return { ...authorizationOf(r), ...fetchOf(r) };
}
