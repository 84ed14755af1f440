/**
 * Property-based fuzzing of webhook verification, on the verifier and through the receiver's
 * HTTP server: whatever the headers and body, the answer is a verdict (a 4xx on the wire), never
 * an exception, a 5xx or a hang; and only a delivery signed with a configured secret passes.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { fuzz } from '../fuzz/test-helpers.js';
import { silentLogger } from '../observability/logger.js';
import { startWebhookReceiver, type WebhookReceiver } from './receiver.js';
import { decodeSecret, sign, WebhookVerifier } from './verify.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const key = decodeSecret(secret);
const NOW_MS = Date.parse('2026-01-01T00:00:00Z');
const verifier = new WebhookVerifier([secret], 300, () => NOW_MS);
const nowSeconds = Math.floor(NOW_MS / 1000);
const REASONS = ['missing_headers', 'invalid_timestamp', 'stale_timestamp', 'invalid_signature'];

/** Header values as a hostile sender writes them: absent, empty, odd characters, near-valid. */
const headerValue = fc.option(
  fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.integer({ min: -1e12, max: 1e16 }).map(String),
    fc.constantFrom(String(nowSeconds), `${nowSeconds}.5`, ` ${nowSeconds}`, '0', '1e9', ''),
    fc
      .array(fc.string({ maxLength: 60 }), { maxLength: 4 })
      .map((parts) => parts.map((p) => `v1,${p}`).join(' ')),
  ),
  { nil: undefined },
);
const body = fc.oneof(
  fc.uint8Array({ maxLength: 512 }),
  fc.json({ maxDepth: 3 }).map((j) => new TextEncoder().encode(j)),
);

describe('webhook verification (fuzz)', () => {
  it('returns a typed verdict for any headers and body, and never accepts an unsigned one', async () => {
    await fuzz(
      'verify: arbitrary headers and body',
      fc.property(headerValue, headerValue, headerValue, body, (id, timestamp, signature, bytes) => {
        const verdict = verifier.verify({ id, timestamp, signature, body: Buffer.from(bytes) });
        if (verdict.ok) throw new Error('an unsigned delivery was accepted');
        expect(REASONS).toContain(verdict.reason);
      }),
      1500,
    );
  });

  it('accepts exactly the signed delivery: any change to id, timestamp or body is refused', async () => {
    const id = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !s.includes('\n'));
    await fuzz(
      'verify: signed, then one part altered',
      fc.property(
        id,
        fc.integer({ min: -300, max: 300 }),
        body,
        fc.nat(),
        fc.constantFrom('id', 'timestamp', 'body', 'none'),
        (webhookId, skew, bytes, at, altered) => {
          const timestamp = String(nowSeconds + skew);
          const payload = Buffer.from(bytes);
          const signature = `v1,${sign(key, webhookId, timestamp, payload)}`;
          const input = { id: webhookId, timestamp, signature, body: payload };
          if (altered === 'id') input.id = `${webhookId}x`;
          if (altered === 'timestamp') input.timestamp = String(nowSeconds + skew + (skew >= 0 ? -1 : 1));
          if (altered === 'body') {
            const changed = Buffer.from(payload);
            if (changed.length === 0) input.body = Buffer.from([0]);
            else {
              changed[at % changed.length] = (changed[at % changed.length]! + 1) % 256;
              input.body = changed;
            }
          }
          const verdict = verifier.verify(input);
          expect(verdict.ok).toBe(altered === 'none');
        },
      ),
      1500,
    );
  });
});

describe('webhook receiver over HTTP (fuzz)', () => {
  let receiver: WebhookReceiver;
  let handled = 0;

  beforeAll(async () => {
    receiver = await startWebhookReceiver({
      host: '127.0.0.1',
      port: 0,
      path: '/hook',
      maxBodyBytes: 1024,
      verifier: new WebhookVerifier([secret]),
      logger: silentLogger,
      handler: async () => {
        handled++;
        return 'accepted';
      },
    });
  });

  afterAll(async () => {
    await receiver.close();
  });

  // fetch refuses header values with control characters; what it refuses never reaches a server.
  const wireHeader = headerValue.map((v) => (v === undefined ? undefined : v.replace(/[^\x20-\x7e]/g, '')));

  it('answers every unsigned or malformed delivery with a 4xx, and stays up', async () => {
    await fuzz(
      'receiver: arbitrary deliveries over HTTP',
      fc.asyncProperty(
        wireHeader,
        wireHeader,
        wireHeader,
        fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', ''),
        fc.constantFrom('POST', 'PUT', 'GET'),
        fc.uint8Array({ maxLength: 1500 }),
        async (id, timestamp, signature, type, method, bytes) => {
          const headers: Record<string, string> = {};
          if (id !== undefined) headers['webhook-id'] = id;
          if (timestamp !== undefined) headers['webhook-timestamp'] = timestamp;
          if (signature !== undefined) headers['webhook-signature'] = signature;
          if (type !== '') headers['content-type'] = type;
          const res = await fetch(receiver.url, {
            method,
            headers,
            ...(method === 'GET' ? {} : { body: Buffer.from(bytes) }),
          });
          await res.arrayBuffer();
          expect([400, 401, 405, 413, 415]).toContain(res.status);
        },
      ),
      100,
    );
    expect(handled).toBe(0);
  });
});
