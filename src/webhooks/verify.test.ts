import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WebhookVerifier } from './verify.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const other = `whsec_${randomBytes(24).toString('base64')}`;
const body = JSON.stringify({ type: 'documents.adaptive_decision.finished', version: 0 });

/** Signs with the standardwebhooks package: an implementation independent of ours. */
function signed(withSecret: string, id = 'msg_1', at = new Date()) {
  const signature = new Webhook(withSecret).sign(id, at, body);
  return { id, timestamp: String(Math.floor(at.getTime() / 1000)), signature, body: Buffer.from(body) };
}

describe('WebhookVerifier', () => {
  it('accepts a delivery signed by the standardwebhooks package', () => {
    const result = new WebhookVerifier([secret]).verify(signed(secret));
    expect(result).toMatchObject({ ok: true, id: 'msg_1' });
  });

  it('accepts any of several secrets and any of several signatures (rotation)', () => {
    const a = signed(other);
    const b = signed(secret);
    const both = { ...b, signature: `${a.signature} ${b.signature}` };
    expect(new WebhookVerifier([secret]).verify(both).ok).toBe(true);
    expect(new WebhookVerifier([other, secret]).verify(signed(secret)).ok).toBe(true);
  });

  it('refuses forged, tampered, unsigned and stale deliveries', () => {
    const v = new WebhookVerifier([secret], 300);
    expect(v.verify(signed(other))).toEqual({ ok: false, reason: 'invalid_signature' });
    expect(v.verify({ ...signed(secret), body: Buffer.from(`${body} `) })).toEqual({
      ok: false,
      reason: 'invalid_signature',
    });
    expect(v.verify({ ...signed(secret), signature: undefined })).toEqual({
      ok: false,
      reason: 'missing_headers',
    });
    expect(v.verify({ ...signed(secret), timestamp: 'yesterday' })).toEqual({
      ok: false,
      reason: 'invalid_timestamp',
    });
    const old = signed(secret, 'msg_2', new Date(Date.now() - 301_000));
    expect(v.verify(old)).toEqual({ ok: false, reason: 'stale_timestamp' });
    const future = signed(secret, 'msg_3', new Date(Date.now() + 301_000));
    expect(v.verify(future)).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it('refuses to start without a secret', () => {
    expect(() => new WebhookVerifier([])).toThrow(/secret/);
  });
});
