/**
 * Which setting to fix when a Kafka connection failed for a security reason: read from the error
 * chain (Node's TLS codes and alerts, kafkajs' SASL errors). Kept apart from `security.ts` so that
 * every Kafka error can be explained without loading what builds the security.
 */
import { errorChainText, tlsProblem, type TlsProblem } from '../util/tls-problem.js';

/** What a client was set up with, for explaining why its first connection failed. */
export interface ConnectionSettings {
  brokers: readonly string[];
  tls: boolean;
}

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

/**
 * The setting to fix when the first connection of a client failed (kafkajs has retried it for some
 * seconds by then): a refused or unresolvable address is `kafka.brokers`, a broker that closes the
 * connection without answering a plain client is a TLS listener. Only for connecting: the same
 * errors later are an outage, not a setting. Undefined when the failure says nothing of the kind.
 */
export function connectionHint(error: unknown, settings: ConnectionSettings): string | undefined {
  const text = errorChainText(error);
  const brokers = settings.brokers.join(',');
  const refused = /ECONNREFUSED\s+(\S+)/.exec(text);
  if (refused) {
    return `kafka.brokers: nothing accepts connections at ${refused[1]} (connection refused); check the hosts and ports in kafka.brokers (${brokers}) and that Kafka listens there`;
  }
  const unknown = /(?:ENOTFOUND|EAI_AGAIN)\s+(\S+)/.exec(text);
  if (unknown) {
    return `kafka.brokers: the host name ${unknown[1]} does not resolve; check the hosts in kafka.brokers (${brokers})`;
  }
  if (/ETIMEDOUT|Connection timeout/i.test(text)) {
    return `kafka.brokers: no broker answered within the connection timeout at ${brokers}; check kafka.brokers, and that no firewall drops the connection`;
  }
  if (/KafkaJSConnectionClosedError|Closed connection/.test(text) && !settings.tls) {
    return `kafka.ssl: the broker at ${brokers} closed the connection without answering, as a TLS listener does with a plain client; set kafka.ssl (and kafka.sslCaFile for a private CA), or use the broker's plaintext port`;
  }
  return undefined;
}
