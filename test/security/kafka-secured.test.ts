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

/** What `docstream run` did with one document on a secured listener. */
interface DocumentThrough {
  /** The connector's exit code when the document's result was out (null: still running). */
  exitCodeAtResult: number | null;
  /** The sandbox's submissions of the document. */
  submissions: unknown[];
  /** The exit code after SIGTERM. */
  exitCodeAfterStop: number | null;
}

/** What `docstream run` did when it could not start: its exit code and its log. */
interface StartupFailure {
  code: number | null;
  log: string;
}

/** The promise, with its rejection marked handled: a test awaits (and so sees) it later. */
function started<T>(run: Promise<T>): Promise<T> {
  run.catch(() => undefined);
  return run;
}

describe('docstream on a secured Kafka (the local stack’s secured listeners)', () => {
  let s: SecureListeners;
  let oidc: OidcServer;
  const envs: E2E[] = [];
  let dir: string;
  // Every connector below starts in beforeAll, side by side, and each test awaits and checks its
  // own: each waits on its own child process (a document carried through, or a start-up that fails
  // after kafkajs's connection retries), and the runs share nothing but the broker and the OIDC
  // endpoint.
  const through = new Map<string, Promise<DocumentThrough>>();
  const failures = new Map<string, Promise<StartupFailure>>();
  /** Tokens the OIDC endpoint had issued before the OAUTHBEARER connector started. */
  let issuedBeforeOauth = 0;
  /** The port of the start-up where no broker listens. */
  let brokersPort = 0;

  async function oneDocumentThrough(
    kafka: Record<string, unknown>,
    eventId: string,
  ): Promise<DocumentThrough> {
    const env = new E2E();
    envs.push(env);
    await env.start();
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const child = env.spawnConnector({ kafka });
    const log = env.childLogs.at(-1)!;
    await env.collect();
    await env.produce([arrival(eventId, file)]);
    try {
      await waitFor(
        `${eventId}'s fraud result`,
        () => env.forEvent(eventId).some((o) => env.kindOf(o) === 'fraud'),
        90_000,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; connector log: ${log.join('').slice(-2000)}`);
    }
    const exitCodeAtResult = child.exitCode;
    const submissions = await env.submissions(eventId);
    child.kill('SIGTERM');
    return { exitCodeAtResult, submissions, exitCodeAfterStop: await exitOf(child, 40_000) };
  }

  async function startupFailure(env: E2E, kafka: Record<string, unknown>): Promise<StartupFailure> {
    const child = env.spawnConnector({ kafka });
    const log = env.childLogs.at(-1)!;
    const code = await exitOf(child, 90_000);
    return { code, log: log.join('') };
  }

  async function otherCa(): Promise<string> {
    const file = path.join(dir, 'other-ca.crt');
    if (!fs.existsSync(file)) await selfSignedCertificate(dir, 'other-ca', '/CN=another CA', 2);
    return file;
  }

  /** A port of this machine nothing listens on: one just closed. */
  async function closedPort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  beforeAll(async () => {
    s = secureListeners();
    oidc = await startOidcServer({ oauth: s.oauth });
    dir = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'docstream-secured-'));

    through.set(
      'scram',
      started(
        oneDocumentThrough(
          {
            brokers: [s.scramTls.bootstrap],
            sslCaFile: s.caFile,
            saslMechanism: 'scram-sha-512',
            saslUsername: s.scramTls.username,
            saslPassword: s.scramTls.password,
          },
          'evt-secured-scram',
        ),
      ),
    );
    through.set(
      'mtls',
      started(
        oneDocumentThrough(
          {
            brokers: [s.mtls.bootstrap],
            sslCaFile: s.caFile,
            sslCertFile: s.mtls.certFile,
            sslKeyFile: s.mtls.keyFile,
          },
          'evt-secured-mtls',
        ),
      ),
    );
    // Only this connector has the OIDC client's secret: every token the endpoint issues from here on
    // is its own (the one with a wrong secret is refused, and a refusal issues none).
    issuedBeforeOauth = oidc.issued;
    through.set(
      'oauth',
      started(
        oneDocumentThrough(
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
        ),
      ),
    );

    const env = new E2E();
    envs.push(env);
    await env.start();
    const failure = (name: string, kafka: Record<string, unknown>) =>
      failures.set(name, started(startupFailure(env, kafka)));
    failure('saslPassword', {
      brokers: [s.scramTls.bootstrap],
      sslCaFile: s.caFile,
      saslMechanism: 'scram-sha-512',
      saslUsername: s.scramTls.username,
      saslPassword: 'not-the-password',
    });
    failure('sslCaFile', {
      brokers: [s.scramTls.bootstrap],
      sslCaFile: await otherCa(),
      saslMechanism: 'scram-sha-512',
      saslUsername: s.scramTls.username,
      saslPassword: s.scramTls.password,
    });
    failure('sslCertFile', { brokers: [s.mtls.bootstrap], sslCaFile: s.caFile });
    failure('sslKeyFile', {
      brokers: [s.mtls.bootstrap],
      sslCaFile: s.caFile,
      sslCertFile: s.mtls.certFile,
      sslKeyFile: path.join(path.dirname(s.caFile), 'broker.key'),
    });
    failure('oauthClientSecret', {
      brokers: [s.oauth.bootstrap],
      sslCaFile: s.caFile,
      saslMechanism: 'oauthbearer',
      oauthTokenUrl: oidc.tokenUrl,
      oauthClientId: s.oauth.clientId,
      oauthClientSecret: 'not-the-secret',
    });
    failure('ssl', { brokers: [s.scramTls.bootstrap] });
    brokersPort = await closedPort();
    failure('brokers', { brokers: [`127.0.0.1:${brokersPort}`] });
  });
  afterAll(async () => {
    // Whatever a failed test left running is stopped here (env.stop kills its children).
    await Promise.allSettled([...through.values(), ...failures.values()].map((run) => run));
    for (const env of envs) await env.stop();
    await oidc.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  async function carried(name: string): Promise<void> {
    const run = await through.get(name)!;
    expect(run.exitCodeAtResult).toBeNull();
    expect(run.submissions).toHaveLength(1);
    expect(run.exitCodeAfterStop).toBe(0);
  }

  it('SCRAM-SHA-512 over TLS with the private CA set by kafka.sslCaFile', async () => {
    await carried('scram');
  });

  it('mutual TLS with a client certificate', async () => {
    await carried('mtls');
  });

  it('OAUTHBEARER with an OIDC client-credentials token the broker validates', async () => {
    await carried('oauth');
    // One token serves every connection of the process (admin, producer, consumers) until it nears expiry.
    expect(oidc.issued - issuedBeforeOauth).toBe(1);
  });

  describe('a wrong secret, certificate, protocol or address stops start-up with exit 1, naming the setting', () => {
    async function startupFailureLog(name: string): Promise<string> {
      const { code, log } = await failures.get(name)!;
      expect(code).toBe(1);
      return log;
    }

    it('a wrong SCRAM password names kafka.saslPassword', async () => {
      const log = await startupFailureLog('saslPassword');
      expect(log).toMatch(
        /start-up failed while connecting to Kafka: kafka\.saslPassword: the broker refused/,
      );
      expect(log).not.toContain('not-the-password');
    });

    it('a CA that did not sign the broker names kafka.sslCaFile', async () => {
      const log = await startupFailureLog('sslCaFile');
      expect(log).toMatch(/kafka\.sslCaFile: the broker's certificate is not signed by a trusted CA/);
    });

    it('no client certificate on the mutual-TLS listener names kafka.sslCertFile', async () => {
      const log = await startupFailureLog('sslCertFile');
      expect(log).toMatch(/kafka\.sslCertFile: the broker requires a client certificate/);
    });

    it('a client certificate that is not its key names kafka.sslKeyFile, before connecting', async () => {
      const log = await startupFailureLog('sslKeyFile');
      expect(log).toMatch(/kafka\.sslKeyFile: .* is not the key of the certificate in kafka\.sslCertFile/);
    });

    it('a wrong OIDC client secret names kafka.oauthClientSecret', async () => {
      const log = await startupFailureLog('oauthClientSecret');
      expect(log).toMatch(/kafka\.oauthClientSecret: the token endpoint refused the client credentials/);
      expect(log).not.toContain('not-the-secret');
    });

    it('a plain client on a TLS listener names kafka.ssl', async () => {
      const log = await startupFailureLog('ssl');
      expect(log).toMatch(
        /start-up failed while connecting to Kafka: kafka\.ssl: the broker at \S+ closed the connection without answering, as a TLS listener does/,
      );
    });

    it('an address where no broker listens names kafka.brokers and the address', async () => {
      const log = await startupFailureLog('brokers');
      expect(log).toMatch(
        new RegExp(
          `kafka\\.brokers: nothing accepts connections at 127\\.0\\.0\\.1:${brokersPort} \\(connection refused\\)`,
        ),
      );
    });
  });
});
