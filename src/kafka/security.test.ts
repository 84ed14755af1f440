import { createHash, createHmac } from 'node:crypto';
import { jest } from '@jest/globals';
import { kafkaSecurityOf, mskIamTokens, mskRegionOf, type KafkaSecuritySettings } from './security.js';
import { connectionHint, securityHint } from './security-hints.js';

const base: KafkaSecuritySettings = {
  brokers: ['localhost:9092'],
  ssl: false,
  sslCaFile: '',
  sslCertFile: '',
  sslKeyFile: '',
  sslKeyPassword: '',
  sslServerName: '',
  sslVerify: true,
  saslMechanism: 'none',
  saslUsername: '',
  saslPassword: '',
  oauthTokenUrl: '',
  oauthClientId: '',
  oauthClientSecret: '',
  oauthScope: '',
  oauthExtensions: {},
  awsRegion: '',
};

describe('kafkaSecurityOf', () => {
  it('is empty for an open broker and TLS with the system CAs for kafka.ssl alone', () => {
    expect(kafkaSecurityOf(base)).toEqual({});
    expect(kafkaSecurityOf({ ...base, ssl: true })).toEqual({ ssl: true });
  });

  it('passes SCRAM credentials, and names kafka.saslUsername when it is missing', () => {
    const sasl = kafkaSecurityOf({
      ...base,
      saslMechanism: 'scram-sha-512',
      saslUsername: 'u',
      saslPassword: 'p',
    }).sasl;
    expect(sasl).toEqual({ mechanism: 'scram-sha-512', username: 'u', password: 'p' });
    expect(() => kafkaSecurityOf({ ...base, saslMechanism: 'plain' })).toThrow(
      /^kafka\.saslUsername: is required/,
    );
  });

  it('turns off verification and sets the server name only when asked', () => {
    expect(
      kafkaSecurityOf({ ...base, ssl: true, sslVerify: false, sslServerName: 'broker.internal' }).ssl,
    ).toEqual({
      rejectUnauthorized: false,
      servername: 'broker.internal',
    });
  });

  it('names the missing oauthbearer settings and checks the extensions', () => {
    expect(() => kafkaSecurityOf({ ...base, saslMechanism: 'oauthbearer' })).toThrow(
      /^kafka\.oauthTokenUrl: is required/,
    );
    const oauth = {
      ...base,
      saslMechanism: 'oauthbearer' as const,
      oauthTokenUrl: 'https://idp/token',
      oauthClientId: 'c',
    };
    expect(() => kafkaSecurityOf({ ...oauth, oauthExtensions: { auth: 'x' } })).toThrow(
      /^kafka\.oauthExtensions: "auth"/,
    );
    expect(() => kafkaSecurityOf({ ...oauth, oauthExtensions: { pool: 'a\u0001b' } })).toThrow(
      /control characters/,
    );
    expect(() => kafkaSecurityOf({ ...oauth, oauthExtensions: ['x'] })).toThrow(/an object of strings/);
    expect(kafkaSecurityOf({ ...oauth, oauthExtensions: { logicalCluster: 'lkc-1' } }).sasl?.mechanism).toBe(
      'oauthbearer',
    );
  });

  it('needs TLS and a region for aws-msk-iam', () => {
    const msk = { ...base, saslMechanism: 'aws-msk-iam' as const };
    expect(() => kafkaSecurityOf(msk)).toThrow(/^kafka\.ssl: aws-msk-iam needs TLS/);
    const saved = process.env.AWS_REGION;
    delete process.env.AWS_REGION;
    try {
      expect(() => kafkaSecurityOf({ ...msk, ssl: true })).toThrow(/^kafka\.awsRegion: is required/);
      expect(kafkaSecurityOf({ ...msk, ssl: true, awsRegion: 'eu-west-1' }).sasl?.mechanism).toBe(
        'oauthbearer',
      );
    } finally {
      if (saved !== undefined) process.env.AWS_REGION = saved;
    }
  });

  it('reads the region from MSK broker host names', () => {
    expect(mskRegionOf(['b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098'])).toBe('eu-west-1');
    expect(mskRegionOf(['boot-abc.c1.kafka-serverless.us-east-2.amazonaws.com:9098'])).toBe('us-east-2');
    expect(mskRegionOf(['localhost:9092'])).toBeUndefined();
  });
});

/** AWS SigV4 query-string signing, written here from the published algorithm to check the signer's output. */
function sigV4Signature(url: URL, secretKey: string, region: string): string {
  const params = [...url.searchParams.entries()].filter(
    ([k]) => k !== 'X-Amz-Signature' && k !== 'User-Agent',
  );
  const enc = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const query = params
    .map(([k, v]) => [enc(k), enc(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const amzDate = url.searchParams.get('X-Amz-Date')!;
  const day = amzDate.slice(0, 8);
  const canonical = [
    'GET',
    '/',
    query,
    `host:${url.host}\n`,
    'host',
    createHash('sha256').update('').digest('hex'),
  ].join('\n');
  const scope = `${day}/${region}/kafka-cluster/aws4_request`;
  const toSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonical).digest('hex'),
  ].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${secretKey}`).update(day).digest();
  for (const part of [region, 'kafka-cluster', 'aws4_request'])
    key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex');
}

describe('mskIamTokens (AWS msk-iam-sasl-signer)', () => {
  const credentials = async () => ({
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  });

  afterEach(() => jest.useRealTimers());

  it('signs a kafka-cluster:Connect URL whose SigV4 signature checks out, for 15 minutes', async () => {
    jest.useFakeTimers({
      now: new Date('2026-11-25T12:00:00Z'),
      doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'],
    });
    const { value } = await mskIamTokens('eu-west-1', credentials)();
    const url = new URL(Buffer.from(value, 'base64url').toString('utf8'));
    expect(url.host).toBe('kafka.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('Action')).toBe('kafka-cluster:Connect');
    expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(url.searchParams.get('X-Amz-Credential')).toBe(
      'AKIDEXAMPLE/20261125/eu-west-1/kafka-cluster/aws4_request',
    );
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261125T120000Z');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect(url.searchParams.get('User-Agent')).toMatch(/^aws-msk-iam-sasl-signer-js\//);
    expect(url.searchParams.get('X-Amz-Signature')).toBe(
      sigV4Signature(url, 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'eu-west-1'),
    );
  });

  it('reuses a token until it nears expiry, one signing at a time', async () => {
    let now = Date.parse('2026-11-25T12:00:00Z');
    let calls = 0;
    const counted = async () => {
      calls += 1;
      return credentials();
    };
    const tokens = mskIamTokens('eu-west-1', counted, () => now);
    const [a, b] = await Promise.all([tokens(), tokens()]);
    expect(a).toEqual(b);
    expect(calls).toBe(1);
    now += 9 * 60_000;
    await tokens();
    expect(calls).toBe(1);
    now += 2 * 60_000;
    await tokens();
    expect(calls).toBe(2);
  });

  it('names the mechanism when the credential chain has nothing', async () => {
    const none = async () => {
      throw new Error('Could not load credentials from any providers');
    };
    await expect(mskIamTokens('eu-west-1', none)()).rejects.toThrow(
      /^kafka\.saslMechanism: aws-msk-iam: could not sign a token/,
    );
  });
});

describe('securityHint', () => {
  const kafkajsLike = (message: string, code?: string) =>
    Object.assign(new Error('Connection error'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: Object.assign(new Error(message), { code }),
    });

  it.each([
    ['self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN', /^kafka\.sslCaFile:/],
    [
      "Hostname/IP does not match certificate's altnames",
      'ERR_TLS_CERT_ALTNAME_INVALID',
      /^kafka\.sslServerName:/,
    ],
    [
      'tlsv13 alert certificate required',
      'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
      /^kafka\.sslCertFile: the broker requires/,
    ],
    ['tlsv1 alert unknown ca', 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', /^kafka\.sslCertFile: the broker refused/],
    ['wrong version number', 'ERR_SSL_WRONG_VERSION_NUMBER', /^kafka\.ssl: the broker answered without TLS/],
  ])('%s → the setting to fix', (message, code, hint) => {
    expect(securityHint(kafkajsLike(message, code))).toMatch(hint);
  });

  it('names the password for a refused SCRAM login and the token for a refused OAUTHBEARER one', () => {
    expect(securityHint(new Error('SASL SCRAM SHA512 authentication failed: invalid credentials'))).toMatch(
      /^kafka\.saslPassword:/,
    );
    expect(securityHint(new Error('SASL OAUTHBEARER authentication failed: Authentication failed'))).toMatch(
      /^kafka\.oauthTokenUrl:/,
    );
  });

  it('says nothing about failures that are not about security', () => {
    expect(securityHint(kafkajsLike('connect ECONNREFUSED 127.0.0.1:9092', 'ECONNREFUSED'))).toBeUndefined();
  });
});

describe('connectionHint (a first connection that failed)', () => {
  // kafkajs' error after its connection retries, as the local stack produced them.
  const retriesExceeded = (name: string, message: string, code?: string) =>
    Object.assign(new Error(message), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: Object.assign(new Error(message), { name, code }),
    });
  const plain = { brokers: ['localhost:9094'], tls: false };

  it('names kafka.brokers for a refused or unresolvable address, with the address', () => {
    expect(
      connectionHint(
        retriesExceeded(
          'KafkaJSConnectionError',
          'Connection error: connect ECONNREFUSED 127.0.0.1:9999',
          'ECONNREFUSED',
        ),
        { brokers: ['localhost:9999'], tls: false },
      ),
    ).toBe(
      'kafka.brokers: nothing accepts connections at 127.0.0.1:9999 (connection refused); check the hosts and ports in kafka.brokers (localhost:9999) and that Kafka listens there',
    );
    expect(
      connectionHint(
        retriesExceeded(
          'KafkaJSConnectionError',
          'Connection error: getaddrinfo ENOTFOUND kafka-1.internal',
          'ENOTFOUND',
        ),
        { brokers: ['kafka-1.internal:9092'], tls: true },
      ),
    ).toMatch(/^kafka\.brokers: the host name kafka-1\.internal does not resolve/);
  });

  it('names kafka.ssl when a plain client is closed on without an answer (a TLS listener)', () => {
    const closed = retriesExceeded('KafkaJSConnectionClosedError', 'Closed connection');
    expect(connectionHint(closed, plain)).toMatch(
      /^kafka\.ssl: the broker at localhost:9094 closed the connection without answering, as a TLS listener does/,
    );
    // With TLS on, a closed connection is something else: no guess.
    expect(connectionHint(closed, { ...plain, tls: true })).toBeUndefined();
  });

  it('says nothing of other failures', () => {
    expect(connectionHint(new Error('SASL SCRAM SHA512 authentication failed'), plain)).toBeUndefined();
  });
});
