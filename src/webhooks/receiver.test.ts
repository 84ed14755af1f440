import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { silentLogger } from '../observability/logger.js';
import { startWebhookReceiver, type HandlerOutcome } from './receiver.js';
import { WebhookVerifier } from './verify.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const event = {
  type: 'documents.adaptive_decision.finished',
  version: 0,
  tenant_id: 't1',
  payload: {
    id: 'sub-000000000000000000000001',
    status: 'SUCCESS',
    analysis_time: new Date().toISOString(),
    query_id: 'q1',
    result_url: '/v2/submission/sub-000000000000000000000001/decision',
  },
};

async function post(url: string, body: string, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: res.status, body: (await res.json()) as { message: string } };
}

function signedHeaders(body: string, id = 'msg_1', withSecret = secret): Record<string, string> {
  const at = new Date();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(withSecret).sign(id, at, body),
  };
}

describe('webhook receiver', () => {
  it('accepts signed events, refuses forged, unsigned, oversized and malformed ones', async () => {
    const seen: string[] = [];
    let fail = false;
    const receiver = await startWebhookReceiver({
      host: '127.0.0.1',
      port: 0,
      path: '/hook',
      maxBodyBytes: 2048,
      verifier: new WebhookVerifier([secret]),
      logger: silentLogger,
      handler: async (_e, id): Promise<HandlerOutcome> => {
        if (fail) throw new Error('kafka down');
        const dup = seen.includes(id);
        seen.push(id);
        return dup ? 'duplicate' : 'accepted';
      },
    });
    try {
      const body = JSON.stringify(event);
      expect(await post(receiver.url, body, signedHeaders(body))).toEqual({
        status: 200,
        body: { message: 'accepted' },
      });
      expect((await post(receiver.url, body, signedHeaders(body))).body.message).toBe('duplicate');
      const forged = signedHeaders(body, 'msg_2', `whsec_${randomBytes(24).toString('base64')}`);
      expect((await post(receiver.url, body, forged)).status).toBe(401);
      expect((await post(receiver.url, body, {})).status).toBe(400);
      const big = JSON.stringify({ ...event, padding: 'x'.repeat(4096) });
      expect((await post(receiver.url, big, signedHeaders(big))).status).toBe(413);
      const notEvent = JSON.stringify({ hello: 'world' });
      expect((await post(receiver.url, notEvent, signedHeaders(notEvent, 'msg_3'))).status).toBe(400);
      fail = true;
      expect((await post(receiver.url, body, signedHeaders(body, 'msg_4'))).status).toBe(503);
      expect(seen).toEqual(['msg_1', 'msg_1']);
    } finally {
      await receiver.close();
    }
  });
});
