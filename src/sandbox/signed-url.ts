/**
 * Pre-signed URLs for uploads and report downloads: an HMAC over (purpose, id, expiry) with a key
 * that lives only in this sandbox process, the way object-storage pre-signing works.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

type SignatureCheck = 'ok' | 'forged' | 'expired';

export class UrlSigner {
  private readonly key = randomBytes(32);

  sign(purpose: string, id: string, ttlSeconds: number, now = Date.now()): { expires: number; sig: string } {
    const expires = Math.floor(now / 1000) + ttlSeconds;
    return { expires, sig: this.mac(purpose, id, expires) };
  }

  check(purpose: string, id: string, expires: unknown, sig: unknown, now = Date.now()): SignatureCheck {
    if (typeof expires !== 'string' || typeof sig !== 'string' || !/^\d{1,12}$/.test(expires))
      return 'forged';
    const expected = Buffer.from(this.mac(purpose, id, Number(expires)));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'forged';
    return Number(expires) * 1000 <= now ? 'expired' : 'ok';
  }

  private mac(purpose: string, id: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${purpose}\n${id}\n${expires}`).digest('base64url');
  }
}
