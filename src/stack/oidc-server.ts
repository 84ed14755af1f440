/**
 * A small OIDC token endpoint for the local stack's OAUTHBEARER listener: the client-credentials
 * grant (RFC 6749 §4.4, client secret by HTTP Basic or in the form), answering RS256 JWTs signed
 * with the key the stack generated, whose public half the broker reads from the JWKS file. It also
 * publishes that JWKS at `/.well-known/jwks.json`. Loopback only; for tests and trying docstream
 * against a secured broker, not for production.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importPKCS8, SignJWT } from 'jose';
import type { SecureListeners } from './secure.js';

export interface OidcServerOptions {
  oauth: SecureListeners['oauth'];
  port?: number;
  /** Lifetime of the tokens it issues (default 300 s). */
  tokenTtlSeconds?: number;
}

export interface OidcServer {
  tokenUrl: string;
  /** Tokens issued so far. */
  readonly issued: number;
  close(): Promise<void>;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 16 * 1024) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The client's id and secret, from HTTP Basic or the form (RFC 6749 §2.3.1). */
function clientOf(req: IncomingMessage, form: URLSearchParams): { id: string; secret: string } | undefined {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic?.[1]) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return undefined;
    return {
      id: decodeURIComponent(decoded.slice(0, colon)),
      secret: decodeURIComponent(decoded.slice(colon + 1)),
    };
  }
  const id = form.get('client_id');
  const secret = form.get('client_secret');
  return id !== null && secret !== null ? { id, secret } : undefined;
}

export async function startOidcServer(options: OidcServerOptions): Promise<OidcServer> {
  const { oauth } = options;
  const key = await importPKCS8(readFileSync(oauth.signingKeyFile, 'utf8'), 'RS256');
  const jwks = readFileSync(oauth.jwksFile, 'utf8');
  const ttl = options.tokenTtlSeconds ?? 300;
  let issued = 0;
  const server: Server = createServer((req, res) => {
    const answer = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(payload));
    };
    void (async () => {
      if (req.method === 'GET' && req.url === '/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(jwks);
      }
      if (req.method !== 'POST' || req.url !== '/token') return answer(404, { error: 'not_found' });
      const form = new URLSearchParams(await body(req));
      if (form.get('grant_type') !== 'client_credentials') {
        return answer(400, { error: 'unsupported_grant_type' });
      }
      const client = clientOf(req, form);
      if (!client || client.id !== oauth.clientId || !sameSecret(client.secret, oauth.clientSecret)) {
        res.setHeader('www-authenticate', 'Basic realm="docstream-stack-oidc"');
        return answer(401, { error: 'invalid_client' });
      }
      const scope = form.get('scope') ?? '';
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ scope })
        .setProtectedHeader({ alg: 'RS256', kid: oauth.kid, typ: 'JWT' })
        .setIssuer(oauth.issuer)
        .setAudience(oauth.audience)
        .setSubject(client.id)
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setExpirationTime(now + ttl)
        .sign(key);
      issued += 1;
      return answer(200, { access_token: token, token_type: 'Bearer', expires_in: ttl, scope });
    })().catch(() => answer(400, { error: 'invalid_request' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    tokenUrl: `http://127.0.0.1:${port}/token`,
    get issued() {
      return issued;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
