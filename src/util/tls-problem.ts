/**
 * What went wrong in a TLS handshake, read from an error and its causes (Node's certificate codes
 * and the peer's TLS alerts), so that each client can name the setting to fix: Kafka's
 * (`kafka/security-hints.ts`) and the registry's (`serde/registry.ts`).
 */

export type TlsProblem =
  /** The peer's certificate is not signed by a CA we trust. */
  | 'untrusted'
  /** The peer's certificate is for another host name. */
  | 'hostname'
  /** The peer's certificate is expired or not yet valid. */
  | 'expired'
  /** The peer requires a client certificate. */
  | 'client-certificate-required'
  /** The peer refused our client certificate. */
  | 'client-certificate-refused'
  /** The peer does not speak TLS on this port. */
  | 'not-tls';

const PROBLEMS: Array<[RegExp, TlsProblem]> = [
  [
    /SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|CERT_SIGNATURE_FAILURE/,
    'untrusted',
  ],
  [/ERR_TLS_CERT_ALTNAME_INVALID|Hostname\/IP does not match/, 'hostname'],
  [/CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/, 'expired'],
  [/CERTIFICATE_REQUIRED|ALERT_HANDSHAKE_FAILURE|ALERT_BAD_CERTIFICATE/, 'client-certificate-required'],
  [
    /ALERT_UNKNOWN_CA|ALERT_CERTIFICATE_UNKNOWN|ALERT_DECRYPT_ERROR|ALERT_CERTIFICATE_EXPIRED/,
    'client-certificate-refused',
  ],
  [/WRONG_VERSION_NUMBER|EPROTO.*wrong version/, 'not-tls'],
];

/** Name, code and message of an error and each of its causes (`cause`, kafkajs' `originalError`). */
export function errorChainText(error: unknown): string {
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

/** The TLS problem behind an error (or the text of its chain), if it is one. */
export function tlsProblem(error: unknown): TlsProblem | undefined {
  const text = typeof error === 'string' ? error : errorChainText(error);
  return PROBLEMS.find(([codes]) => codes.test(text))?.[1];
}
