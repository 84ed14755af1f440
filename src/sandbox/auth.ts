/**
 * The sandbox's authorization server: OAuth 2.0 client credentials (RFC 6749 §4.4) with the
 * client secret by HTTP Basic or form fields, or a private_key_jwt client assertion (RFC 7523)
 * signed RS256 with a registered kid. Access tokens are opaque random strings kept in memory.
 * One per cell: it knows only that cell's clients, and its tokens are valid in that cell only.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify, type CryptoKey } from 'jose';
import type { SandboxConfig } from './config.js';

const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export interface TokenGrant {
  clientId: string;
  /** The tenant whose application the client is; null for the sandbox's own `clients`. */
  tenantId: string | null;
  /** The cell whose token endpoint issued it. */
  cell: string;
  scopes: string[];
  expiresAt: number;
}

/** A client as the token endpoint authenticates it. */
export interface AuthClient {
  clientId: string;
  clientSecret?: string | undefined;
  publicKeyPem?: string | undefined;
  kid?: string | undefined;
  scopes: string[];
  tenantId: string | null;
}

/** The clients of one cell, and where a client of another cell lives (for the refusal's message). */
export interface ClientDirectory {
  find(clientId: string): AuthClient | undefined;
  /** The cell a client is registered in when it is not this one's, else null. */
  elsewhere(clientId: string): string | null;
}

export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

type Client = AuthClient;

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A form-urlencoded credential part; a malformed escape is the client's error (401), not ours. */
function formDecode(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    throw new OAuthError(
      401,
      'invalid_client',
      'Authorization: malformed percent-encoding in Basic credentials',
    );
  }
}

/** Tokens and used assertion ids are pruned once the maps grow, so memory stays bounded. */
const PRUNE_AT = 10000;

export class AuthServer {
  private readonly tokens = new Map<string, TokenGrant>();
  private readonly usedJti = new Map<string, number>();
  private readonly keys = new Map<string, Promise<CryptoKey>>();

  constructor(
    private readonly getConfig: () => SandboxConfig,
    private readonly directory: ClientDirectory,
    readonly cell: string,
  ) {}

  /** Handles a token request; `form` is the parsed urlencoded body. */
  async issue(
    form: URLSearchParams,
    authorization: string | undefined,
    tokenUrls: string[],
  ): Promise<{
    body: { access_token: string; token_type: 'Bearer'; expires_in: number; scope: string };
    grant: TokenGrant;
  }> {
    const grantType = form.get('grant_type');
    if (!grantType) throw new OAuthError(400, 'invalid_request', 'grant_type is required');
    if (grantType !== 'client_credentials') {
      throw new OAuthError(
        400,
        'unsupported_grant_type',
        `grant_type ${grantType} is not supported; use client_credentials`,
      );
    }
    const client =
      form.has('client_assertion') || form.has('client_assertion_type')
        ? await this.authenticateAssertion(form, tokenUrls)
        : this.authenticateSecret(form, authorization);

    let scopes = client.scopes;
    const requested = form.get('scope');
    if (requested !== null && requested.trim() !== '') {
      const wanted = requested.trim().split(/\s+/);
      const extra = wanted.filter((s) => !client.scopes.includes(s));
      if (extra.length > 0)
        throw new OAuthError(
          400,
          'invalid_scope',
          `scope: ${extra.join(' ')} not granted to client ${client.clientId}`,
        );
      scopes = wanted;
    }
    const ttl = this.getConfig().tokenTtlSeconds;
    const token = randomBytes(32).toString('base64url');
    this.prune();
    const grant: TokenGrant = {
      clientId: client.clientId,
      tenantId: client.tenantId,
      cell: this.cell,
      scopes,
      expiresAt: Date.now() + ttl * 1000,
    };
    this.tokens.set(token, grant);
    return {
      body: { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: scopes.join(' ') },
      grant,
    };
  }

  /** The grant behind a bearer token, or null when it is unknown or expired. */
  lookup(token: string): TokenGrant | null {
    const grant = this.tokens.get(token);
    if (!grant) return null;
    if (grant.expiresAt <= Date.now()) {
      this.tokens.delete(token);
      return null;
    }
    return grant;
  }

  private findClient(clientId: string): Client | undefined {
    return this.directory.find(clientId);
  }

  /** 401 for a client registered in another cell: its tenant's cell has its own token endpoint. */
  private refuseOtherCell(clientId: string, field: string): void {
    const where = this.directory.elsewhere(clientId);
    if (where === null) return;
    throw new OAuthError(
      401,
      'invalid_client',
      `${field}: client ${clientId} is not registered in cell ${this.cell}; it is an application of ` +
        `cell ${where}: ask that cell's token endpoint`,
    );
  }

  private authenticateSecret(form: URLSearchParams, authorization: string | undefined): Client {
    let id: string | null = null;
    let secret: string | null = null;
    if (authorization?.toLowerCase().startsWith('basic ')) {
      const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0)
        throw new OAuthError(401, 'invalid_client', 'Authorization: malformed Basic credentials');
      // RFC 6749 §2.3.1: both parts are form-urlencoded inside the Basic header.
      id = formDecode(decoded.slice(0, colon));
      secret = formDecode(decoded.slice(colon + 1));
      if (form.has('client_secret')) {
        throw new OAuthError(
          400,
          'invalid_request',
          'client_secret: use either HTTP Basic or form fields, not both',
        );
      }
    } else {
      id = form.get('client_id');
      secret = form.get('client_secret');
    }
    if (!id) throw new OAuthError(401, 'invalid_client', 'client_id: missing client authentication');
    if (!secret) throw new OAuthError(401, 'invalid_client', 'client_secret: missing client authentication');
    const client = this.findClient(id);
    if (!client) this.refuseOtherCell(id, 'client_id');
    if (!client?.clientSecret || !safeEqual(client.clientSecret, secret)) {
      throw new OAuthError(401, 'invalid_client', 'client_id/client_secret: unknown client or wrong secret');
    }
    return client;
  }

  private async authenticateAssertion(form: URLSearchParams, tokenUrls: string[]): Promise<Client> {
    const type = form.get('client_assertion_type');
    const assertion = form.get('client_assertion');
    if (type !== CLIENT_ASSERTION_TYPE) {
      throw new OAuthError(401, 'invalid_client', `client_assertion_type: must be ${CLIENT_ASSERTION_TYPE}`);
    }
    if (!assertion) throw new OAuthError(401, 'invalid_client', 'client_assertion: missing');
    let issuer: string | undefined;
    let kid: string | undefined;
    try {
      issuer = decodeJwt(assertion).iss;
      kid = decodeProtectedHeader(assertion).kid;
    } catch {
      throw new OAuthError(401, 'invalid_client', 'client_assertion: not a JWT');
    }
    const client = issuer ? this.findClient(issuer) : undefined;
    if (issuer && !client) this.refuseOtherCell(issuer, 'client_assertion');
    if (!client?.publicKeyPem || !client.kid) {
      throw new OAuthError(
        401,
        'invalid_client',
        'client_assertion: iss is not a client registered with a public key',
      );
    }
    const formClientId = form.get('client_id');
    if (formClientId !== null && formClientId !== client.clientId) {
      throw new OAuthError(401, 'invalid_client', 'client_id: does not match the assertion issuer');
    }
    if (kid !== client.kid)
      throw new OAuthError(401, 'invalid_client', 'client_assertion: kid is not registered for this client');
    let payload;
    try {
      const key = await this.key(client);
      ({ payload } = await jwtVerify(assertion, key, {
        algorithms: ['RS256'],
        issuer: client.clientId,
        subject: client.clientId,
        audience: tokenUrls,
        requiredClaims: ['exp', 'jti'],
      }));
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new OAuthError(401, 'invalid_client', `client_assertion: ${reason}`);
    }
    const jti = `${client.clientId}\u0000${String(payload.jti)}`;
    if (this.usedJti.has(jti))
      throw new OAuthError(401, 'invalid_client', 'client_assertion: jti was already used');
    this.usedJti.set(jti, (payload.exp ?? 0) * 1000);
    return client;
  }

  private key(client: Client): Promise<CryptoKey> {
    const cacheKey = `${client.kid}\u0000${client.publicKeyPem}`;
    let key = this.keys.get(cacheKey);
    if (!key) {
      key = importSPKI(client.publicKeyPem as string, 'RS256');
      key.catch(() => this.keys.delete(cacheKey));
      this.keys.set(cacheKey, key);
    }
    return key;
  }

  private prune(): void {
    const now = Date.now();
    if (this.tokens.size >= PRUNE_AT) {
      for (const [t, g] of this.tokens) if (g.expiresAt <= now) this.tokens.delete(t);
      // Still full of live tokens: drop the oldest, as a real server's token store would expire them.
      for (const t of this.tokens.keys()) {
        if (this.tokens.size < PRUNE_AT) break;
        this.tokens.delete(t);
      }
    }
    if (this.usedJti.size >= PRUNE_AT) {
      for (const [j, exp] of this.usedJti) if (exp <= now) this.usedJti.delete(j);
    }
  }
}
