/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4) for the client.
 *
 * Two ways to authenticate the client to the token endpoint: a client secret by HTTP Basic
 * (submission API) and a `private_key_jwt` client assertion (RFC 7523, tenant API). Either
 * way the access token is cached until shortly before it expires, and however many calls
 * need a token at once, only one token request is in flight (single-flight).
 */
import { randomUUID } from 'node:crypto';
import { importPKCS8, SignJWT, type CryptoKey, type KeyObject } from 'jose';
import type { TokenResponse } from '../api/schemas.js';
import { type Clock, systemClock } from './limiter.js';

/** Posts a form to the token endpoint and returns the validated token response. */
export type TokenRequester = (
  form: Record<string, string>,
  headers: Record<string, string>,
) => Promise<TokenResponse>;

export interface TokenSource {
  getToken(): Promise<string>;
  /** The cached token while it is valid, without waiting; undefined when `getToken` must fetch one. */
  validToken?(): string | undefined;
  /** The server refused `token` (401): forget it, unless a newer one has replaced it already. */
  invalidate(token: string): void;
}

/** Token requests made so far, for tests and metrics. */
export interface TokenStats {
  requests: number;
}

type CredentialsBuilder = () => Promise<{ form: Record<string, string>; headers: Record<string, string> }>;

const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export class CachedTokenSource implements TokenSource {
  private cached?: { value: string; refreshAt: number };
  private inflight?: Promise<string>;
  readonly stats: TokenStats = { requests: 0 };

  constructor(
    private readonly request: TokenRequester,
    private readonly credentials: CredentialsBuilder,
    private readonly clock: Clock = systemClock,
  ) {}

  validToken(): string | undefined {
    return this.cached && this.clock.now() < this.cached.refreshAt ? this.cached.value : undefined;
  }

  async getToken(): Promise<string> {
    const valid = this.validToken();
    if (valid !== undefined) return valid;
    this.inflight ??= this.refresh().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  invalidate(token: string): void {
    if (this.cached?.value === token) this.cached = undefined;
  }

  private async refresh(): Promise<string> {
    const { form, headers } = await this.credentials();
    const requestedAt = this.clock.now();
    this.stats.requests += 1;
    const response = await this.request(form, headers);
    const lifetimeMs = response.expires_in * 1000;
    // Refresh ahead of expiry, by 10% of the lifetime but at most 30 s, measured from when
    // the request was sent so that the server's clock and the round trip cannot make it late.
    const margin = Math.min(30_000, lifetimeMs * 0.1);
    this.cached = { value: response.access_token, refreshAt: requestedAt + lifetimeMs - margin };
    return response.access_token;
  }
}

function scopeForm(scopes: readonly string[] | undefined): Record<string, string> {
  return scopes && scopes.length > 0 ? { scope: scopes.join(' ') } : {};
}

/** Client secret by HTTP Basic (RFC 6749 §2.3.1: both parts form-urlencoded first). */
export function clientSecretBasic(
  clientId: string,
  clientSecret: string,
  scopes?: readonly string[],
): CredentialsBuilder {
  const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString(
    'base64',
  );
  return async () => ({
    form: { grant_type: 'client_credentials', ...scopeForm(scopes) },
    headers: { authorization: `Basic ${basic}` },
  });
}

export interface PrivateKeyJwtOptions {
  clientId: string;
  /** PKCS#8 PEM, or an already imported key. */
  privateKey: string | CryptoKey | KeyObject;
  kid: string;
  tokenUrl: string;
  scopes?: readonly string[];
  /** Assertion lifetime; short, because it only has to reach the token endpoint. */
  assertionTtlSeconds?: number;
}

/** A fresh RS256 client assertion (iss = sub = client id, aud = token URL) per token request. */
export function privateKeyJwt(options: PrivateKeyJwtOptions): CredentialsBuilder {
  let key: Promise<CryptoKey | KeyObject> | undefined;
  const loadKey = () =>
    (key ??=
      typeof options.privateKey === 'string'
        ? importPKCS8(options.privateKey, 'RS256')
        : Promise.resolve(options.privateKey));
  return async () => {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: options.kid, typ: 'JWT' })
      .setIssuer(options.clientId)
      .setSubject(options.clientId)
      .setAudience(options.tokenUrl)
      .setJti(randomUUID())
      .setIssuedAt(nowSeconds)
      .setExpirationTime(nowSeconds + (options.assertionTtlSeconds ?? 60))
      .sign(await loadKey());
    return {
      form: {
        grant_type: 'client_credentials',
        client_id: options.clientId,
        client_assertion_type: CLIENT_ASSERTION_TYPE,
        client_assertion: assertion,
        ...scopeForm(options.scopes),
      },
      headers: {},
    };
  };
}
