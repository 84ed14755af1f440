/**
 * Which setting to fix when a Kafka connection failed for a security reason: read from the error
 * chain (Node's TLS codes and alerts, kafkajs' SASL errors). Kept apart from `security.ts` so that
 * every Kafka error can be explained without loading what builds the security.
 */
import { errorChainText, tlsProblem, type TlsProblem } from '../util/tls-problem.js';

const TLS_HINTS: Record<TlsProblem, string> = {
  untrusted:
    "kafka.sslCaFile: the broker's certificate is not signed by a trusted CA; set kafka.sslCaFile to the CA that signed it",
  hostname:
    "kafka.sslServerName: the broker's certificate is for another host name; connect by a name it holds or set kafka.sslServerName",
  expired: "kafka.sslCaFile: the broker's certificate is expired or not yet valid",
  'client-certificate-required':
    'kafka.sslCertFile: the broker requires a client certificate (mutual TLS); set kafka.sslCertFile and kafka.sslKeyFile',
  'client-certificate-refused':
    'kafka.sslCertFile: the broker refused the client certificate (not signed by a CA it trusts, or expired)',
  'not-tls':
    'kafka.ssl: the broker answered without TLS on this port; turn kafka.ssl off or use its TLS listener',
};

/**
 * The setting to fix when a connection failed for a security reason, as a sentence starting with
 * its name; undefined when the failure says nothing about security.
 */
export function securityHint(error: unknown): string | undefined {
  const text = errorChainText(error);
  if (/SettingError/.test(text)) return undefined; // names its setting already
  const tls = tlsProblem(text);
  if (tls) return TLS_HINTS[tls];
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
