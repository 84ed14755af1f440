/**
 * The schema registry behind TLS with a private CA, a required client certificate and bearer tokens:
 * an HTTPS front (the stack's CA and certificates) that checks the client certificate and an RS256
 * token from the stack's OIDC endpoint, then forwards to the real registry. docstream's registry
 * client, built from `registry.*` settings only, registers a schema and reads it back through it.
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { loadConfig } from '../../src/config/index.js';
import { registryOf } from '../../src/serde/registry-from-config.js';
import { silentLogger } from '../../src/observability/logger.js';
import { startOidcServer } from '../../src/stack/index.js';
import type { OidcServer, SecureListeners } from '../../src/stack/index.js';
import { forward } from '../harness/proxy.js';
import { REGISTRY_URL } from '../harness/e2e.js';
import { secureListeners } from '../harness/secure.js';
import { uniqueName } from '../harness/topics.js';

describe('registry behind TLS, a client certificate and OIDC bearer tokens', () => {
  let s: SecureListeners;
  let oidc: OidcServer;
  let front: https.Server;
  let url: string;
  const seen: Array<{ authorized: boolean; subject?: string }> = [];

  beforeAll(async () => {
    s = secureListeners();
    oidc = await startOidcServer({ oauth: s.oauth });
    const jwks = createLocalJWKSet(JSON.parse(fs.readFileSync(s.oauth.jwksFile, 'utf8')));
    const dir = path.dirname(s.caFile);
    const upstream = new URL(REGISTRY_URL);
    front = https.createServer(
      {
        key: fs.readFileSync(path.join(dir, 'broker.key')),
        cert: fs.readFileSync(path.join(dir, 'broker.crt')),
        ca: fs.readFileSync(s.caFile),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const socket = req.socket as TLSSocket;
        const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        void (async () => {
          try {
            const { payload } = await jwtVerify(token ?? '', jwks, {
              issuer: s.oauth.issuer,
              audience: s.oauth.audience,
            });
            seen.push({
              authorized: socket.authorized,
              subject: socket.getPeerCertificate().subject?.CN as string,
            });
            expect(payload.sub).toBe(s.oauth.clientId);
          } catch {
            res.writeHead(401, { 'content-type': 'application/json' });
            return res.end('{"error_code":401,"message":"unauthorized"}');
          }
          req.url = `${upstream.pathname}${req.url}`;
          forward(upstream, req, res);
        })();
      },
    );
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    url = `https://localhost:${(front.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    front.closeAllConnections();
    await new Promise((resolve) => front.close(resolve));
    await oidc.close();
  });

  const settings = () => ({
    url,
    caFile: s.caFile,
    certFile: s.mtls.certFile,
    keyFile: s.mtls.keyFile,
    oauthTokenUrl: oidc.tokenUrl,
    oauthClientId: s.oauth.clientId,
    oauthClientSecret: s.oauth.clientSecret,
  });

  it('registers and reads a schema with the CA, the client certificate and a token, all from settings', async () => {
    const registry = registryOf(
      loadConfig({ env: {}, files: [], overrides: { registry: settings() } }),
      silentLogger,
    );
    const topic = uniqueName('secured-registry');
    const id = await registry.registerValueSchema(topic, 'FraudResult');
    expect(id).toBeGreaterThan(0);
    // Another client of the same settings finds the same schema (its GET and POST go through the front too).
    const again = registryOf(
      loadConfig({ env: {}, files: [], overrides: { registry: settings() } }),
      silentLogger,
    );
    await expect(again.registerValueSchema(topic, 'FraudResult')).resolves.toBe(id);
    await expect(again.client.settleCompatibility(`${topic}-value`)).resolves.toBe('BACKWARD');
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.authorized && r.subject === 'docstream')).toBe(true);
    // One token per client (each caches its own until it nears expiry).
    expect(oidc.issued).toBe(2);
  });

  it('names registry.caFile when the registry’s CA is not given', async () => {
    const registry = registryOf(
      loadConfig({ env: {}, files: [], overrides: { registry: { ...settings(), caFile: '' } } }),
      silentLogger,
    );
    await expect(registry.registerValueSchema(uniqueName('secured-registry'), 'FraudResult')).rejects.toThrow(
      /registry\.caFile: the registry's certificate is not signed by a trusted CA/,
    );
  });

  it('names the credentials when the token endpoint refuses them', async () => {
    const registry = registryOf(
      loadConfig({
        env: {},
        files: [],
        overrides: { registry: { ...settings(), oauthClientSecret: 'wrong' } },
      }),
      silentLogger,
    );
    await expect(registry.registerValueSchema(uniqueName('secured-registry'), 'FraudResult')).rejects.toThrow(
      /registry\.oauthClientSecret: the token endpoint refused the client credentials/,
    );
  });
});
