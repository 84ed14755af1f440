/**
 * How docstream authenticates to a secured Kafka: TLS with a private CA and client certificates,
 * SASL PLAIN/SCRAM, OAUTHBEARER with an OIDC client-credentials token, and AWS MSK IAM (a SigV4
 * presigned token from AWS's own signer, sent through OAUTHBEARER). Built once from the `kafka`
 * settings and handed to every Kafka client docstream makes. A connection that fails for a
 * security reason is explained by the setting to fix (`securityHint`).
 */
import type { generateAuthTokenFromCredentialsProvider } from 'aws-msk-iam-sasl-signer-js';
import { OidcTokenSource } from '../client/oidc-token.js';
import { kafkaTlsOn } from '../config/effective.js';
import { loadTlsFiles, type TlsMaterial } from '../util/tls-files.js';
import { SettingError } from '../util/setting-error.js';

/** The `kafka` settings this module reads (the shape of the configuration's `kafka` section). */
export interface KafkaSecuritySettings {
  brokers: string[];
  ssl: boolean;
  sslCaFile: string;
  sslCertFile: string;
  sslKeyFile: string;
  sslKeyPassword: string;
  sslServerName: string;
  sslVerify: boolean;
  saslMechanism: 'none' | 'plain' | 'scram-sha-256' | 'scram-sha-512' | 'oauthbearer' | 'aws-msk-iam';
  saslUsername: string;
  saslPassword: string;
  oauthTokenUrl: string;
  oauthClientId: string;
  oauthClientSecret: string;
  oauthScope: string;
  oauthExtensions: unknown;
  awsRegion: string;
}

export interface KafkaTls extends TlsMaterial {
  servername?: string;
  rejectUnauthorized: boolean;
}

/** A bearer token for SASL OAUTHBEARER, with the extensions to send beside it. */
export interface OAuthBearerToken {
  value: string;
  extensions?: Record<string, string>;
}

export type KafkaSasl =
  | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string }
  | { mechanism: 'oauthbearer'; token: () => Promise<OAuthBearerToken> };

export interface KafkaSecurity {
  /** true: TLS with the system's CAs; an object: TLS with this material. */
  ssl?: true | KafkaTls;
  sasl?: KafkaSasl;
}

const TLS_NAMES = {
  caFile: 'kafka.sslCaFile',
  certFile: 'kafka.sslCertFile',
  keyFile: 'kafka.sslKeyFile',
  keyPassword: 'kafka.sslKeyPassword',
};

/** The TLS part: none, the system's CAs, or files (read and checked now). */
function tlsOf(s: KafkaSecuritySettings): KafkaSecurity['ssl'] {
  const files = Boolean(s.sslCaFile || s.sslCertFile || s.sslKeyFile);
  const custom = files || s.sslServerName !== '' || !s.sslVerify;
  if (!kafkaTlsOn(s)) {
    if (s.saslMechanism === 'aws-msk-iam') {
      throw new SettingError(
        'kafka.ssl',
        'aws-msk-iam needs TLS (MSK serves IAM on its TLS port): set it to true',
      );
    }
    return undefined;
  }
  if (!custom) return true;
  const material = loadTlsFiles(
    { caFile: s.sslCaFile, certFile: s.sslCertFile, keyFile: s.sslKeyFile, keyPassword: s.sslKeyPassword },
    TLS_NAMES,
  );
  return {
    ...material,
    ...(s.sslServerName ? { servername: s.sslServerName } : {}),
    rejectUnauthorized: s.sslVerify,
  };
}

function extensionsOf(value: unknown): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new SettingError('kafka.oauthExtensions', 'expected an object of strings');
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    // RFC 7628 §3.1: key = 1*(ALPHA), value without control characters; "auth" is reserved.
    if (!/^[A-Za-z]+$/.test(k) || k === 'auth') {
      throw new SettingError(
        'kafka.oauthExtensions',
        `"${k}" is not a valid extension name (dead letters only, not "auth")`,
      );
    }
    if (typeof v !== 'string' || [...v].some((c) => c.charCodeAt(0) < 0x20)) {
      throw new SettingError(
        'kafka.oauthExtensions',
        `the value of "${k}" must be a string without control characters`,
      );
    }
    out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The region of an MSK broker address (`b-1.name.abc.c2.kafka.eu-west-1.amazonaws.com:9098`). */
export function mskRegionOf(brokers: string[]): string | undefined {
  for (const broker of brokers) {
    const m = /\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com/.exec(broker);
    if (m?.[1]) return m[1];
  }
  return undefined;
}

/**
 * MSK IAM tokens: SigV4-presigned `kafka-cluster:Connect` URLs, made by AWS's signer from the
 * standard credential chain (environment, profile, web identity for EKS, container and instance
 * metadata). Cached until a minute before they expire, one signing at a time.
 */
export function mskIamTokens(
  region: string,
  /** Replaceable for tests; default: AWS's standard chain. */
  credentials?: Parameters<typeof generateAuthTokenFromCredentialsProvider>[0]['awsCredentialsProvider'],
  now: () => number = Date.now,
): () => Promise<OAuthBearerToken> {
  let cached: { value: string; refreshAt: number } | undefined;
  let inflight: Promise<OAuthBearerToken> | undefined;
  return async () => {
    if (cached && now() < cached.refreshAt) return { value: cached.value };
    // Loaded on first use: AWS's SDK is large, and only MSK users need it.
    const sign = async () => {
      const signer = await import('aws-msk-iam-sasl-signer-js');
      return credentials
        ? signer.generateAuthTokenFromCredentialsProvider({ region, awsCredentialsProvider: credentials })
        : signer.generateAuthToken({ region });
    };
    inflight ??= sign()
      .then(
        ({ token, expiryTime }) => {
          cached = { value: token, refreshAt: Math.min(expiryTime - 60_000, now() + 10 * 60_000) };
          return { value: token };
        },
        (err: unknown) => {
          throw new SettingError(
            'kafka.saslMechanism',
            `aws-msk-iam: could not sign a token (${(err as Error).message}); the AWS credential chain found no usable credentials`,
          );
        },
      )
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
}

function saslOf(s: KafkaSecuritySettings): KafkaSasl | undefined {
  switch (s.saslMechanism) {
    case 'none':
      return undefined;
    case 'plain':
    case 'scram-sha-256':
    case 'scram-sha-512':
      if (s.saslUsername === '') {
        throw new SettingError(
          'kafka.saslUsername',
          `is required with kafka.saslMechanism ${s.saslMechanism}`,
        );
      }
      return { mechanism: s.saslMechanism, username: s.saslUsername, password: s.saslPassword };
    case 'oauthbearer': {
      for (const [key, value] of [
        ['kafka.oauthTokenUrl', s.oauthTokenUrl],
        ['kafka.oauthClientId', s.oauthClientId],
      ] as const) {
        if (value === '') throw new SettingError(key, 'is required with kafka.saslMechanism oauthbearer');
      }
      const extensions = extensionsOf(s.oauthExtensions);
      const source = new OidcTokenSource({
        tokenUrl: s.oauthTokenUrl,
        clientId: s.oauthClientId,
        clientSecret: s.oauthClientSecret,
        scope: s.oauthScope,
        settingPrefix: 'kafka.oauth',
      });
      return {
        mechanism: 'oauthbearer',
        token: async () => ({ value: await source.token(), ...(extensions ? { extensions } : {}) }),
      };
    }
    case 'aws-msk-iam': {
      const region = s.awsRegion || process.env.AWS_REGION || mskRegionOf(s.brokers);
      if (!region) {
        throw new SettingError(
          'kafka.awsRegion',
          'is required with aws-msk-iam (no AWS_REGION, and the brokers are not MSK host names)',
        );
      }
      return { mechanism: 'oauthbearer', token: mskIamTokens(region) };
    }
  }
}

/** Builds the security of every Kafka client from the settings; throws naming the setting at fault. */
export function kafkaSecurityOf(s: KafkaSecuritySettings): KafkaSecurity {
  const ssl = tlsOf(s);
  const sasl = saslOf(s);
  return { ...(ssl !== undefined ? { ssl } : {}), ...(sasl ? { sasl } : {}) };
}
