/**
 * docstream against a secured Kafka, as its users run it: `docstream run` (the built CLI, a child
 * process) connects only through one of the local broker's secured listeners (SCRAM over TLS with a
 * private CA set by kafka.sslCaFile, mutual TLS, OAUTHBEARER with tokens from an OIDC endpoint the
 * broker checks against its JWKS) and carries a document end to end. A wrong password, CA,
 * certificate, client secret, protocol (a plain client on a TLS port) or address stops it at start
 * with exit 1 and a message naming the setting.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { sampleBytes } from '../../src/demo/corpus.js';
import { startOidcServer } from '../../src/stack/index.js';
import { selfSignedCertificate } from '../../src/stack/secure.js';
import type { OidcServer, SecureListeners } from '../../src/stack/index.js';
import { E2E, arrival, exitOf, waitFor } from '../harness/e2e.js';
import { secureListeners } from '../harness/secure.js';

describe('docstream on a secured Kafka (the local stack’s secured listeners)', () => {
  let s: SecureListeners;
  let oidc: OidcServer;
  const envs: E2E[] = [];
  let dir: string;

  beforeAll(async () => {
    s = secureListeners();
    oidc = await startOidcServer({ oauth: s.oauth });
    dir = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'docstream-secured-'));
  });
  afterAll(async () => {
    for (const env of envs) await env.stop();
    await oidc.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function oneDocumentThrough(kafka: Record<string, unknown>, eventId: string): Promise<E2E> {
    const env = new E2E();
    envs.push(env);
    await env.start();
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const child = env.spawnConnector({ kafka });
    await env.collect();
    await env.produce([arrival(eventId, file)]);
    try {
      await waitFor(
        `${eventId}'s fraud result`,
        () => env.forEvent(eventId).some((o) => env.kindOf(o) === 'fraud'),
        90_000,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; connector log: ${env.childLogs.at(-1)?.join('').slice(-2000)}`,
      );
    }
    expect(child.exitCode).toBeNull();
    expect(await env.submissions(eventId)).toHaveLength(1);
    child.kill('SIGTERM');
    expect(await exitOf(child, 40_000)).toBe(0);
    return env;
  }

  it('SCRAM-SHA-512 over TLS with the private CA set by kafka.sslCaFile', async () => {
    await oneDocumentThrough(
      {
        brokers: [s.scramTls.bootstrap],
        sslCaFile: s.caFile,
        saslMechanism: 'scram-sha-512',
        saslUsername: s.scramTls.username,
        saslPassword: s.scramTls.password,
      },
      'evt-secured-scram',
    );
  });

  it('mutual TLS with a client certificate', async () => {
    await oneDocumentThrough(
      {
        brokers: [s.mtls.bootstrap],
        sslCaFile: s.caFile,
        sslCertFile: s.mtls.certFile,
        sslKeyFile: s.mtls.keyFile,
      },
      'evt-secured-mtls',
    );
  });

  it('OAUTHBEARER with an OIDC client-credentials token the broker validates', async () => {
    const before = oidc.issued;
    await oneDocumentThrough(
      {
        brokers: [s.oauth.bootstrap],
        sslCaFile: s.caFile,
        saslMechanism: 'oauthbearer',
        oauthTokenUrl: oidc.tokenUrl,
        oauthClientId: s.oauth.clientId,
        oauthClientSecret: s.oauth.clientSecret,
        oauthScope: 'kafka',
      },
      'evt-secured-oauth',
    );
    // One token serves every connection of the process (admin, producer, consumers) until it nears expiry.
    expect(oidc.issued - before).toBe(1);
  });

  describe('a wrong secret, certificate, protocol or address stops start-up with exit 1, naming the setting', () => {
    let env: E2E;
    beforeAll(async () => {
      env = new E2E();
      envs.push(env);
      await env.start();
    });

    async function startupFailure(kafka: Record<string, unknown>): Promise<string> {
      const child = env.spawnConnector({ kafka });
      const code = await exitOf(child, 90_000);
      const log = env.childLogs.at(-1)!.join('');
      expect(code).toBe(1);
      return log;
    }

    async function otherCa(): Promise<string> {
      const file = path.join(dir, 'other-ca.crt');
      if (!fs.existsSync(file)) await selfSignedCertificate(dir, 'other-ca', '/CN=another CA', 2);
      return file;
    }

    it('a wrong SCRAM password names kafka.saslPassword', async () => {
      const log = await startupFailure({
        brokers: [s.scramTls.bootstrap],
        sslCaFile: s.caFile,
        saslMechanism: 'scram-sha-512',
        saslUsername: s.scramTls.username,
        saslPassword: 'not-the-password',
      });
      expect(log).toMatch(
        /start-up failed while connecting to Kafka: kafka\.saslPassword: the broker refused/,
      );
      expect(log).not.toContain('not-the-password');
    });

    it('a CA that did not sign the broker names kafka.sslCaFile', async () => {
      const log = await startupFailure({
        brokers: [s.scramTls.bootstrap],
        sslCaFile: await otherCa(),
        saslMechanism: 'scram-sha-512',
        saslUsername: s.scramTls.username,
        saslPassword: s.scramTls.password,
      });
      expect(log).toMatch(/kafka\.sslCaFile: the broker's certificate is not signed by a trusted CA/);
    });

    it('no client certificate on the mutual-TLS listener names kafka.sslCertFile', async () => {
      const log = await startupFailure({ brokers: [s.mtls.bootstrap], sslCaFile: s.caFile });
      expect(log).toMatch(/kafka\.sslCertFile: the broker requires a client certificate/);
    });

    it('a client certificate that is not its key names kafka.sslKeyFile, before connecting', async () => {
      const log = await startupFailure({
        brokers: [s.mtls.bootstrap],
        sslCaFile: s.caFile,
        sslCertFile: s.mtls.certFile,
        sslKeyFile: path.join(path.dirname(s.caFile), 'broker.key'),
      });
      expect(log).toMatch(/kafka\.sslKeyFile: .* is not the key of the certificate in kafka\.sslCertFile/);
    });

    it('a wrong OIDC client secret names kafka.oauthClientSecret', async () => {
      const log = await startupFailure({
        brokers: [s.oauth.bootstrap],
        sslCaFile: s.caFile,
        saslMechanism: 'oauthbearer',
        oauthTokenUrl: oidc.tokenUrl,
        oauthClientId: s.oauth.clientId,
        oauthClientSecret: 'not-the-secret',
      });
      expect(log).toMatch(/kafka\.oauthClientSecret: the token endpoint refused the client credentials/);
      expect(log).not.toContain('not-the-secret');
    });

    it('a plain client on a TLS listener names kafka.ssl', async () => {
      const log = await startupFailure({ brokers: [s.scramTls.bootstrap] });
      expect(log).toMatch(
        /start-up failed while connecting to Kafka: kafka\.ssl: the broker at \S+ closed the connection without answering, as a TLS listener does/,
      );
    });

    it('an address where no broker listens names kafka.brokers and the address', async () => {
      // A port of this machine nothing listens on: one just closed.
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as net.AddressInfo;
      await new Promise((resolve) => server.close(resolve));
      const log = await startupFailure({ brokers: [`127.0.0.1:${port}`] });
      expect(log).toMatch(
        new RegExp(
          `kafka\\.brokers: nothing accepts connections at 127\\.0\\.0\\.1:${port} \\(connection refused\\)`,
        ),
      );
    });
  });
});
