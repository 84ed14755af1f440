/**
 * Verification of Standard Webhooks deliveries: HMAC-SHA256 over `id.timestamp.body` with the
 * base64 key of a `whsec_` secret, compared in constant time against each `v1,` signature of the
 * header, with a timestamp tolerance against replays. Several secrets are accepted at once so a
 * secret can be rotated without refusing deliveries in flight.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

type RefusalReason = 'missing_headers' | 'invalid_timestamp' | 'stale_timestamp' | 'invalid_signature';

type Verification = { ok: true; id: string; timestamp: number } | { ok: false; reason: RefusalReason };

interface VerifyInput {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
  body: Buffer;
}

/** Decodes a `whsec_<base64>` secret (or a bare base64 one) into the HMAC key. */
export function decodeSecret(secret: string): Buffer {
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const key = Buffer.from(b64, 'base64');
  if (key.length === 0) throw new Error('webhook secret: not a whsec_ base64 secret');
  return key;
}

/**
 * Why a configured signing secret cannot be the sender's, or null. The verifier would take any text
 * (base64 decoding is lenient) and then refuse every delivery, so the configuration refuses it:
 * `whsec_` and a strict base64 key. The secret itself is never part of the answer.
 */
export function secretProblem(secret: string): string | null {
  if (!secret.startsWith('whsec_'))
    return 'must start with whsec_ (the signing secret as the sender shows it)';
  const b64 = secret.slice('whsec_'.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.replace(/=+$/, '').length % 4 === 1) {
    return 'must be whsec_ followed by a base64 key (A-Z, a-z, 0-9, + and /, = padding)';
  }
  return null;
}

export function sign(key: Buffer, id: string, timestamp: number | string, body: Buffer | string): string {
  const mac = createHmac('sha256', key);
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return mac.digest('base64');
}

export class WebhookVerifier {
  private readonly keys: Buffer[];

  constructor(
    secrets: string[],
    private readonly toleranceSeconds = 300,
    private readonly now: () => number = Date.now,
  ) {
    if (secrets.length === 0) throw new Error('webhook receiver: at least one signing secret is required');
    this.keys = secrets.map(decodeSecret);
  }

  verify(input: VerifyInput): Verification {
    const { id, timestamp, signature, body } = input;
    if (!id || !timestamp || !signature) return { ok: false, reason: 'missing_headers' };
    if (!/^\d{1,15}$/.test(timestamp)) return { ok: false, reason: 'invalid_timestamp' };
    const ts = Number(timestamp);
    if (Math.abs(this.now() / 1000 - ts) > this.toleranceSeconds)
      return { ok: false, reason: 'stale_timestamp' };

    const offered = signature
      .split(' ')
      .filter((part) => part.startsWith('v1,'))
      .map((part) => Buffer.from(part.slice(3), 'base64'));
    for (const key of this.keys) {
      const expected = Buffer.from(sign(key, id, timestamp, body), 'base64');
      for (const candidate of offered) {
        if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) {
          return { ok: true, id, timestamp: ts };
        }
      }
    }
    return { ok: false, reason: 'invalid_signature' };
  }
}
