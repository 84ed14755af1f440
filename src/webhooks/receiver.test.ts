import { randomBytes } from 'node:crypto';
import net from 'node:net';
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

async function postTyped(url: string, body: string, contentType: string, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: { ...headers, 'content-type': contentType },
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

describe('webhook receiver against a hostile sender', () => {
  let calls = 0;
  const start = () =>
    startWebhookReceiver({
      host: '127.0.0.1',
      port: 0,
      path: '/hook',
      maxBodyBytes: 2048,
      verifier: new WebhookVerifier([secret]),
      logger: silentLogger,
      handler: async (): Promise<HandlerOutcome> => {
        calls++;
        return 'accepted';
      },
      timeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 300 },
    });

  it('refuses a signed delivery that is not declared as JSON, accepts JSON with a charset', async () => {
    const receiver = await start();
    try {
      calls = 0;
      const body = JSON.stringify(event);
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp']) {
        const res = await postTyped(receiver.url, body, type, signedHeaders(body, `msg_${type}`));
        expect(res.status).toBe(415);
      }
      expect(calls).toBe(0);
      const ok = await postTyped(receiver.url, body, 'application/json; charset=utf-8', signedHeaders(body));
      expect(ok.status).toBe(200);
      expect(calls).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  /** Writes `first`, then nothing; resolves with what the server sent once it closed the socket. */
  function stall(url: string, first: string): Promise<string> {
    const { port } = new URL(url);
    return new Promise((resolve, reject) => {
      let received = '';
      // Far above the configured bounds: only a server that never times out reaches it.
      const guard = setTimeout(() => {
        socket.destroy();
        reject(new Error('the receiver kept the stalled connection open'));
      }, 5000);
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(first));
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(guard);
        resolve(received);
      });
    });
  }

  it('closes a connection whose body never finishes', async () => {
    const receiver = await start();
    try {
      const answer = await stall(
        receiver.url,
        'POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"ty',
      );
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await receiver.close();
    }
  });

  it('closes a connection whose headers never finish', async () => {
    const receiver = await start();
    try {
      const answer = await stall(receiver.url, 'POST /hook HTTP/1.1\r\nHost: x\r\nContent-Ty');
      // Node answers 408 when it can, or just closes; either way the slot is freed (the stall rejects if not).
      expect(answer === '' || answer.startsWith('HTTP/1.1 408')).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});
