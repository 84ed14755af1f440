/**
 * An OIDC client-credentials token (RFC 6749 §4.4) for a service other than the API: Kafka's
 * SASL OAUTHBEARER and the schema registry's bearer auth. It reuses the API client's cache
 * (refresh before expiry, one request in flight however many connections need a token) and
 * names the setting at fault when the token endpoint refuses or cannot be reached.
 */
import { CachedTokenSource, clientSecretBasic } from './auth.js';
import { SettingError } from '../util/setting-error.js';

export interface OidcClientSettings {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated; empty asks for none. */
  scope: string;
  /** Prefix of the settings in messages, e.g. `kafka.oauth` → `kafka.oauthClientSecret`. */
  settingPrefix: string;
  timeoutMs?: number;
  /** Replaceable for tests. */
  fetch?: typeof fetch;
}

/** Lifetime assumed when a token answer has no `expires_in` (RFC 6749 makes it optional). */
const DEFAULT_LIFETIME_S = 300;

export class OidcTokenSource {
  private readonly source: CachedTokenSource;

  constructor(private readonly s: OidcClientSettings) {
    const fetchImpl = s.fetch ?? fetch;
    const prefix = s.settingPrefix;
    const request = async (form: Record<string, string>, headers: Record<string, string>) => {
      let response: Response;
      try {
        response = await fetchImpl(s.tokenUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
            ...headers,
          },
          body: new URLSearchParams(form).toString(),
          signal: AbortSignal.timeout(s.timeoutMs ?? 10_000),
        });
      } catch (err) {
        throw new SettingError(`${prefix}TokenUrl`, `token endpoint unreachable (${(err as Error).message})`);
      }
      const text = await response.text().catch(() => '');
      if (response.status === 401 || (response.status === 400 && /invalid_client/.test(text))) {
        throw new SettingError(
          `${prefix}ClientSecret`,
          `the token endpoint refused the client credentials (HTTP ${response.status}); check ${prefix}ClientId and ${prefix}ClientSecret`,
        );
      }
      if (!response.ok) {
        // The body may echo the request: only its error code is shown.
        const code = /"error"\s*:\s*"([a-z_]+)"/.exec(text)?.[1];
        throw new SettingError(
          `${prefix}TokenUrl`,
          `the token endpoint answered HTTP ${response.status}${code ? ` (${code})` : ''}` +
            (code === 'invalid_scope' ? `; check ${prefix}Scope` : ''),
        );
      }
      let body: { access_token?: unknown; expires_in?: unknown; token_type?: unknown };
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        throw new SettingError(`${prefix}TokenUrl`, 'the token endpoint answered something other than JSON');
      }
      if (typeof body.access_token !== 'string' || body.access_token === '') {
        throw new SettingError(`${prefix}TokenUrl`, 'the token endpoint answered without an access_token');
      }
      const expiresIn =
        typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_LIFETIME_S;
      return {
        access_token: body.access_token,
        token_type: typeof body.token_type === 'string' ? body.token_type : 'Bearer',
        expires_in: expiresIn,
      };
    };
    const scopes = s.scope.split(/\s+/).filter((x) => x !== '');
    this.source = new CachedTokenSource(request, clientSecretBasic(s.clientId, s.clientSecret, scopes));
  }

  /** A valid token: the cached one, or one fetched now (single-flight). */
  token(): Promise<string> {
    return this.source.getToken();
  }

  /** Token requests made so far. */
  get requests(): number {
    return this.source.stats.requests;
  }
}
