/**
 * The local Kafka's secured listeners, beside its plain one, so that docstream is tried against a
 * broker secured as its users' are:
 *
 * - SCRAM over TLS (`SASL_SSL`, SCRAM-SHA-512 and -256) with a certificate from a private CA;
 * - mutual TLS (`SSL`, client certificate required, signed by the same CA);
 * - OAUTHBEARER over TLS, the broker validating each token's signature (RS256) against a JWKS file
 *   and its issuer and audience; the tokens come from a small OIDC token endpoint (`oidc-server.ts`)
 *   that signs with the key the stack generated.
 *
 * SCRAM knows two users, `docstream` and `docstream-operator` (two principals under the authorizer,
 * `stack up --authorizer`). The CA, the certificates, the signing key and the SCRAM passwords are
 * generated once into the run directory (openssl for the certificates) and described by
 * `secure.json`, which tests and `docstream stack env --secure` read.
 */
import { execFile } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { servicePaths } from './paths.js';
import type { StackOptions } from './options.js';

const execFileAsync = promisify(execFile);

export interface SecureListeners {
  /** The CA that signed the broker's and the client's certificates (PEM). */
  caFile: string;
  scramTls: {
    bootstrap: string;
    username: string;
    password: string;
    /** A second SCRAM user, for the operator's commands under the authorizer (absent in a run dir
     * whose Kafka an older docstream started). */
    operator?: { username: string; password: string };
  };
  mtls: { bootstrap: string; certFile: string; keyFile: string };
  oauth: {
    bootstrap: string;
    issuer: string;
    audience: string;
    /** The client the token endpoint knows, and its secret. */
    clientId: string;
    clientSecret: string;
    /** PKCS#8 PEM of the key that signs tokens, and its key id. */
    signingKeyFile: string;
    kid: string;
    jwksFile: string;
  };
}

interface Secrets {
  scramPassword: string;
  oauthClientSecret: string;
  scramOperatorPassword: string;
}

function secureDir(o: Pick<StackOptions, 'runDir'>): string {
  return join(servicePaths(o.runDir, 'kafka').dir, 'secure');
}

function descriptionFile(o: Pick<StackOptions, 'runDir'>): string {
  return join(secureDir(o), 'secure.json');
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await execFileAsync('openssl', args, { cwd, timeout: 60_000 });
  } catch (err) {
    const e = err as { code?: string; stderr?: string; message: string };
    if (e.code === 'ENOENT') {
      throw new Error(
        'kafka: the secured listeners need the openssl command to make their certificates; install openssl',
      );
    }
    throw new Error(`kafka: openssl ${args[0]} failed: ${e.stderr || e.message}`);
  }
}

/** `req` arguments making a new unencrypted RSA key, `<name>.key`. */
function newKey(name: string): string[] {
  return ['-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`];
}

/**
 * `<name>.key` and a self-signed `<name>.crt` in `dir` (the stack's CA; tests make other CAs and
 * certificates with it), with the given subject, lifetime and extensions.
 */
export async function selfSignedCertificate(
  dir: string,
  name: string,
  subject: string,
  days: number,
  extensions: string[] = [],
): Promise<void> {
  await openssl(
    [
      'req',
      '-x509',
      ...newKey(name),
      '-out',
      `${name}.crt`,
      '-days',
      String(days),
      '-sha256',
      '-subj',
      subject,
      ...extensions.flatMap((e) => ['-addext', e]),
    ],
    dir,
  );
}

/** A key and a certificate signed by the CA, with the given subject and extensions. */
async function signedCertificate(
  dir: string,
  name: string,
  subject: string,
  extensions: string,
): Promise<void> {
  await openssl(['req', ...newKey(name), '-out', `${name}.csr`, '-subj', subject], dir);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '825',
      '-sha256',
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
}

/**
 * Makes (once) the CA, the broker's and a client's certificates, the token signing key and its
 * JWKS, and the SCRAM password; returns the description. Idempotent: existing material is kept, so
 * certificates handed to clients stay valid across restarts.
 */
export async function ensureSecureMaterial(
  o: Pick<StackOptions, 'runDir' | 'ports'>,
): Promise<SecureListeners> {
  const dir = secureDir(o);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(join(dir, 'ca.crt'))) {
    await selfSignedCertificate(dir, 'ca', '/CN=docstream local stack CA', 3650, [
      'basicConstraints=critical,CA:TRUE',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  }
  if (!existsSync(join(dir, 'broker.pem'))) {
    await signedCertificate(
      dir,
      'broker',
      '/CN=localhost',
      'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
    );
    // Kafka's PEM key store: the (PKCS#8) key, then the chain.
    writeFileSync(
      join(dir, 'broker.pem'),
      readFileSync(join(dir, 'broker.key'), 'utf8') +
        readFileSync(join(dir, 'broker.crt'), 'utf8') +
        readFileSync(join(dir, 'ca.crt'), 'utf8'),
      { mode: 0o600 },
    );
  }
  if (!existsSync(join(dir, 'client.crt'))) {
    await signedCertificate(
      dir,
      'client',
      '/CN=docstream',
      'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n',
    );
  }
  if (!existsSync(join(dir, 'oidc-signing.key'))) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(dir, 'oidc-signing.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
      mode: 0o600,
    });
  }
  const kid = 'docstream-stack-1';
  const signingKey = readFileSync(join(dir, 'oidc-signing.key'), 'utf8');
  const jwk = createPublicKey(signingKey).export({ format: 'jwk' });
  writeFileSync(
    join(dir, 'jwks.json'),
    JSON.stringify({ keys: [{ ...jwk, kid, alg: 'RS256', use: 'sig' }] }),
  );
  const secretsFile = join(dir, 'secrets.json');
  const kept = existsSync(secretsFile)
    ? (JSON.parse(readFileSync(secretsFile, 'utf8')) as Partial<Secrets>)
    : {};
  const secrets: Secrets = {
    scramPassword: kept.scramPassword ?? randomBytes(18).toString('base64url'),
    oauthClientSecret: kept.oauthClientSecret ?? randomBytes(18).toString('base64url'),
    // A run dir made before the operator user existed gets its password now.
    scramOperatorPassword: kept.scramOperatorPassword ?? randomBytes(18).toString('base64url'),
  };
  if (Object.keys(kept).length !== Object.keys(secrets).length)
    writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o600 });
  const description: SecureListeners = {
    caFile: join(dir, 'ca.crt'),
    scramTls: {
      bootstrap: `localhost:${o.ports.kafkaScramTls}`,
      username: 'docstream',
      password: secrets.scramPassword,
      operator: { username: 'docstream-operator', password: secrets.scramOperatorPassword },
    },
    mtls: {
      bootstrap: `localhost:${o.ports.kafkaMtls}`,
      certFile: join(dir, 'client.crt'),
      keyFile: join(dir, 'client.key'),
    },
    oauth: {
      bootstrap: `localhost:${o.ports.kafkaOauth}`,
      issuer: 'docstream-stack-oidc',
      audience: 'docstream-kafka',
      clientId: 'docstream',
      clientSecret: secrets.oauthClientSecret,
      signingKeyFile: join(dir, 'oidc-signing.key'),
      kid,
      jwksFile: join(dir, 'jwks.json'),
    },
  };
  writeFileSync(descriptionFile(o), JSON.stringify(description, null, 2), { mode: 0o600 });
  return description;
}

/** The secured listeners of a stack started from this run dir, or undefined before its first start. */
export function readSecureListeners(o: Pick<StackOptions, 'runDir'>): SecureListeners | undefined {
  const file = descriptionFile(o);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as SecureListeners;
}

/** The SCRAM password as a file, for DOCSTREAM_KAFKA_SASL_PASSWORD_FILE (`docstream stack env --secure`). */
export function scramPasswordFile(s: SecureListeners): string {
  const file = join(dirname(s.caFile), 'scram-password');
  if (!existsSync(file)) writeFileSync(file, s.scramTls.password, { mode: 0o600 });
  return file;
}

/** The JWKS location as the broker reads it (also what its allow-list must name exactly). */
export function jwksUrl(s: SecureListeners): string {
  return `file:${s.oauth.jwksFile}`;
}

/** The broker's listeners and their security settings, beside PLAINTEXT and CONTROLLER. */
export function secureListenerProperties(
  s: SecureListeners,
  o: Pick<StackOptions, 'ports'>,
): {
  listeners: string[];
  protocols: string[];
  properties: Array<[string, string]>;
} {
  const dir = dirname(s.caFile);
  const scramModule = 'org.apache.kafka.common.security.scram.ScramLoginModule required;';
  return {
    listeners: [
      `SCRAM_TLS://localhost:${o.ports.kafkaScramTls}`,
      `MTLS://localhost:${o.ports.kafkaMtls}`,
      `OAUTH://localhost:${o.ports.kafkaOauth}`,
    ],
    protocols: ['SCRAM_TLS:SASL_SSL', 'MTLS:SSL', 'OAUTH:SASL_SSL'],
    properties: [
      ['ssl.keystore.type', 'PEM'],
      ['ssl.keystore.location', join(dir, 'broker.pem')],
      ['ssl.truststore.type', 'PEM'],
      ['ssl.truststore.location', s.caFile],
      ['listener.name.mtls.ssl.client.auth', 'required'],
      ['listener.name.scram_tls.sasl.enabled.mechanisms', 'SCRAM-SHA-512,SCRAM-SHA-256'],
      ['listener.name.scram_tls.scram-sha-512.sasl.jaas.config', scramModule],
      ['listener.name.scram_tls.scram-sha-256.sasl.jaas.config', scramModule],
      ['listener.name.oauth.sasl.enabled.mechanisms', 'OAUTHBEARER'],
      [
        'listener.name.oauth.oauthbearer.sasl.jaas.config',
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
      ],
      [
        'listener.name.oauth.oauthbearer.sasl.server.callback.handler.class',
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler',
      ],
      ['sasl.oauthbearer.jwks.endpoint.url', jwksUrl(s)],
      ['sasl.oauthbearer.expected.issuer', s.oauth.issuer],
      ['sasl.oauthbearer.expected.audience', s.oauth.audience],
    ],
  };
}

/** The SCRAM user gets a credential for each (a client may use either). */
const SCRAM_MECHANISMS = ['SCRAM-SHA-512', 'SCRAM-SHA-256'];

function scramMarker(o: Pick<StackOptions, 'runDir'>): string {
  return join(servicePaths(o.runDir, 'kafka').dataDir, 'docstream-scram-user');
}

/** The SCRAM listener's users: the connector's and the operator's. */
function scramUsers(s: SecureListeners): Array<{ username: string; password: string }> {
  const connector = { username: s.scramTls.username, password: s.scramTls.password };
  return s.scramTls.operator ? [connector, s.scramTls.operator] : [connector];
}

/** `text` with every SCRAM password replaced by `***` (they are on Kafka tools' command lines). */
export function redactScramPasswords(s: SecureListeners, text: string): string {
  return scramUsers(s).reduce((t, u) => t.split(u.password).join('***'), text);
}

function scramMarkerText(s: SecureListeners): string {
  return scramUsers(s)
    .map((u) => u.username)
    .join(',');
}

/**
 * The SCRAM users as `StorageTool format` arguments: a new data directory gets them with the format,
 * with no broker round trip (`ensureScramUser` covers a directory formatted before).
 */
export function scramFormatArgs(s: SecureListeners): string[] {
  return scramUsers(s).flatMap((u) =>
    SCRAM_MECHANISMS.flatMap((mechanism) => [
      '--add-scram',
      `${mechanism}=[name=${u.username},iterations=8192,password=${u.password}]`,
    ]),
  );
}

/** Records that the data directory holds the SCRAM users (after a format with `scramFormatArgs`). */
export function markScramUser(s: SecureListeners, o: Pick<StackOptions, 'runDir'>): void {
  writeFileSync(scramMarker(o), scramMarkerText(s));
}

/** The principal the authorizer treats as a super user: whoever connects on PLAINTEXT or CONTROLLER. */
export const AUTHORIZER_SUPER_USER = 'User:ANONYMOUS';

/** The broker settings that turn Kafka's StandardAuthorizer on (KRaft); no ACL, no access. */
export function authorizerProperties(): Array<[string, string]> {
  return [
    ['authorizer.class.name', 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'],
    ['super.users', AUTHORIZER_SUPER_USER],
    ['allow.everyone.if.no.acl.found', 'false'],
  ];
}

/**
 * Adds the SCRAM users (both hashes) through Kafka's own ConfigCommand on the plain listener, once
 * per data directory (a marker there; `up --fresh` wipes both).
 */
export async function ensureScramUser(
  s: SecureListeners,
  o: Pick<StackOptions, 'runDir' | 'ports' | 'timeoutMs'>,
  java: string,
  libs: string,
): Promise<void> {
  const marker = scramMarker(o);
  if (existsSync(marker) && readFileSync(marker, 'utf8') === scramMarkerText(s)) return;
  // One mechanism per request: Kafka refuses to alter one user's credentials twice in a request.
  for (const user of scramUsers(s))
    for (const mechanism of SCRAM_MECHANISMS) {
      const config = `${mechanism}=[iterations=8192,password=${user.password}]`;
      try {
        await execFileAsync(
          java,
          [
            '-Xmx256m',
            '-cp',
            join(libs, '*'),
            'kafka.admin.ConfigCommand',
            '--bootstrap-server',
            `localhost:${o.ports.kafka}`,
            '--alter',
            '--add-config',
            config,
            '--entity-type',
            'users',
            '--entity-name',
            user.username,
          ],
          { timeout: Math.min(o.timeoutMs, 120_000) },
        );
      } catch (err) {
        const e = err as { stderr?: string; message: string };
        // The password is part of the command line: never echo it.
        const text = redactScramPasswords(s, e.stderr || e.message);
        throw new Error(
          `kafka: adding the SCRAM user ${user.username} failed: ${text.split('\n').slice(0, 3).join('\n')}`,
        );
      }
    }
  writeFileSync(marker, scramMarkerText(s));
}
