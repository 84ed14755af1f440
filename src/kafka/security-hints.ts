/**
 * Which setting to fix when a Kafka connection failed for a security reason: read from the error
 * chain (Node's TLS codes and alerts, kafkajs' SASL errors). Kept apart from `security.ts` so that
 * every Kafka error can be explained without loading what builds the security.
 */

const TLS_HINTS: Array<{ codes: RegExp; hint: string }> = [
  {
    codes:
      /SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|CERT_SIGNATURE_FAILURE/,
    hint: "kafka.sslCaFile: the broker's certificate is not signed by a trusted CA; set kafka.sslCaFile to the CA that signed it",
  },
  {
    codes: /ERR_TLS_CERT_ALTNAME_INVALID|Hostname\/IP does not match/,
    hint: "kafka.sslServerName: the broker's certificate is for another host name; connect by a name it holds or set kafka.sslServerName",
  },
  {
    codes: /CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/,
    hint: "kafka.sslCaFile: the broker's certificate is expired or not yet valid",
  },
  {
    codes: /CERTIFICATE_REQUIRED|ALERT_HANDSHAKE_FAILURE|ALERT_BAD_CERTIFICATE/,
    hint: 'kafka.sslCertFile: the broker requires a client certificate (mutual TLS); set kafka.sslCertFile and kafka.sslKeyFile',
  },
  {
    codes: /ALERT_UNKNOWN_CA|ALERT_CERTIFICATE_UNKNOWN|ALERT_DECRYPT_ERROR|ALERT_CERTIFICATE_EXPIRED/,
    hint: 'kafka.sslCertFile: the broker refused the client certificate (not signed by a CA it trusts, or expired)',
  },
  {
    codes: /WRONG_VERSION_NUMBER|EPROTO.*wrong version/,
    hint: 'kafka.ssl: the broker answered without TLS on this port; turn kafka.ssl off or use its TLS listener',
  },
];

function chainText(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    const err = e as {
      name?: string;
      message?: string;
      code?: unknown;
      originalError?: unknown;
      cause?: unknown;
    };
    parts.push(`${err.name ?? ''} ${typeof err.code === 'string' ? err.code : ''} ${err.message ?? ''}`);
    e = err.originalError ?? err.cause;
  }
  return parts.join(' | ');
}

/**
 * The setting to fix when a connection failed for a security reason, as a sentence starting with
 * its name; undefined when the failure says nothing about security.
 */
export function securityHint(error: unknown): string | undefined {
  const text = chainText(error);
  if (/SettingError/.test(text)) return undefined; // names its setting already
  for (const { codes, hint } of TLS_HINTS) if (codes.test(text)) return hint;
  if (
    /SASL (PLAIN|SCRAM)[^|]*authentication failed|SASL_AUTHENTICATION_FAILED.*(SCRAM|PLAIN)|Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM/i.test(
      text,
    )
  ) {
    return 'kafka.saslPassword: the broker refused kafka.saslUsername with this password';
  }
  if (/SASL OAUTHBEARER authentication failed/i.test(text)) {
    return 'kafka.oauthTokenUrl: the broker refused the OAUTHBEARER token (issuer, audience, scope or signing key it does not accept)';
  }
  if (/UNSUPPORTED_SASL_MECHANISM|Unsupported SASL mechanism/i.test(text)) {
    return 'kafka.saslMechanism: the broker does not offer this mechanism on this listener';
  }
  if (
    /ILLEGAL_SASL_STATE|Connection (closed|error).*(before|during) .*SASL|ECONNRESET/i.test(text) &&
    /sasl/i.test(text)
  ) {
    return "kafka.saslMechanism: the broker closed the connection during authentication; check the listener's security protocol";
  }
  return undefined;
}
