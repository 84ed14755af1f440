/** Rate limits, fault injection and webhook delivery of the sandbox, over real HTTP. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WebhookEvent } from '../../src/api/schemas.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { api, basic, call, expectSchema, pdf, token, upload, waitFor } from './helpers.js';

const SECRET = 'whsec_dGVzdC13ZWJob29rLXNlY3JldC0xMjM0NQ==';

describe('rate limit and 429', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ rateLimit: { ratePerSecond: 0.1, burst: 2 } });
  });
  afterAll(() => sb.close());

  test('per-client token bucket: 429 with Retry-After in seconds, then as an HTTP date', async () => {
    const c = api(sb, await token(sb));
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await c.get('/v2/submission/x/fraud')).status);
    expect(statuses).toEqual([404, 404, 429]);
    const limited = await c.get('/v2/submission/x/fraud');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((limited.body as { message: string }).message).toMatch(/too many/);

    sb.configure({ retryAfterFormat: 'http-date' });
    const dated = await c.get('/v2/submission/x/fraud');
    expect(dated.status).toBe(429);
    const when = Date.parse(dated.headers.get('retry-after') ?? '');
    expect(Number.isNaN(when)).toBe(false);
    expect(when).toBeGreaterThan(Date.now() - 1000);
    expect(sb.stats().rateLimited).toBeGreaterThanOrEqual(3);
  });

  test('the token endpoint is not rate-limited', async () => {
    // The client's API bucket is empty (0.1 per second, burst 2): its API calls are answered 429...
    const c = api(sb, await token(sb));
    let status = 0;
    for (let i = 0; i < 5 && status !== 429; i++) status = (await c.get('/v2/submission/x/fraud')).status;
    expect(status).toBe(429);
    const limited = sb.stats().rateLimited;
    // ...while the same client's token requests, more than the burst, are all answered.
    const form = new URLSearchParams({ grant_type: 'client_credentials' }).toString();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(sb.tokenUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic('sandbox-client', 'sandbox-secret'),
        },
        body: form,
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(sb.stats().rateLimited).toBe(limited);
  });

  test('a 429 storm answers every API request 429 for its duration', async () => {
    const storm = await startSandbox({});
    try {
      const c = api(storm, await token(storm));
      storm.configure({ faults: { storm429: { durationMs: 60_000 } } });
      const res = await c.get('/v2/submission/x/fraud');
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(1);
    } finally {
      await storm.close();
    }
  });
});

describe('fault injection', () => {
  test('errorRate 1 gives 503, dropRate 1 drops the connection', async () => {
    const sb = await startSandbox({});
    try {
      const c = api(sb, await token(sb));
      sb.configure({ faults: { errorRate: 1 } });
      const res = await c.get('/v2/submission/x/fraud');
      expect(res.status).toBe(503);
      sb.configure({ faults: { errorRate: 0, dropRate: 1 } });
      await expect(c.get('/v2/submission/x/fraud')).rejects.toThrow();
      expect(sb.stats().droppedConnections).toBe(1);
      sb.configure({ faults: { dropRate: 0 } });
      expect((await c.get('/v2/submission/x/fraud')).status).toBe(404);
    } finally {
      await sb.close();
    }
  });

  test('pipelineFailRate 1 makes every analysis result PIPELINE_FAILED', async () => {
    const sb = await startSandbox({
      processing: { distribution: 'fixed', meanMs: 10 },
      faults: { pipelineFailRate: 1 },
    });
    try {
      const c = api(sb, await token(sb));
      const s = await c.create();
      await upload(s.upload_url, await pdf());
      let res;
      await waitFor(
        async () => (res = await c.get(`/v2/submission/${s.submission_id}/fraud`)).status === 200,
      );
      expect(res).toMatchObject({ body: { status: 'PIPELINE_FAILED' } });
    } finally {
      await sb.close();
    }
  });
});

describe('webhooks', () => {
  interface Delivery {
    headers: IncomingHttpHeaders;
    body: string;
  }
  let receiver: Server;
  let url: string;
  const deliveries: Delivery[] = [];
  let failFirst = 0;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        deliveries.push({ headers: req.headers, body });
        res.statusCode = failFirst-- > 0 ? 500 : 204;
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  beforeEach(() => {
    deliveries.length = 0;
    failFirst = 0;
  });

  function verify(d: Delivery) {
    const headers = {
      'webhook-id': String(d.headers['webhook-id']),
      'webhook-timestamp': String(d.headers['webhook-timestamp']),
      'webhook-signature': String(d.headers['webhook-signature']),
    };
    return expectSchema(WebhookEvent, new Webhook(SECRET).verify(d.body, headers));
  }

  test('decision finished: signed event, retried with back-off after a failure', async () => {
    const sb = await startSandbox({
      processing: { distribution: 'fixed', meanMs: 10 },
      webhook: { url, secret: SECRET, retryBaseMs: 50, tenantId: 'tenant-42' },
    });
    try {
      const c = api(sb, await token(sb));
      failFirst = 1;
      const s = await c.create({ enable_decision: true, query_id: 'hook-1' });
      await upload(s.upload_url, await pdf());
      await waitFor(() => deliveries.length >= 2);
      const [first, second] = deliveries as [Delivery, Delivery];
      expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
      const event = verify(second);
      expect(event).toMatchObject({
        type: 'documents.adaptive_decision.finished',
        version: 0,
        tenant_id: 'tenant-42',
        payload: {
          id: s.submission_id,
          status: 'SUCCESS',
          query_id: 'hook-1',
          result_url: `/v2/submission/${s.submission_id}/decision`,
        },
      });
      expect(() =>
        new Webhook('whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA==').verify(second.body, {
          'webhook-id': String(second.headers['webhook-id']),
          'webhook-timestamp': String(second.headers['webhook-timestamp']),
          'webhook-signature': String(second.headers['webhook-signature']),
        }),
      ).toThrow();
      await waitFor(() => sb.stats().webhooksAcknowledged === 1);
      expect(sb.stats().webhooksSent).toBe(2);
      const decision = await c.get(`/v2/submission/${s.submission_id}/decision`);
      expect(decision.status).toBe(200);
    } finally {
      await sb.close();
    }
  });

  test('gives up after maxAttempts; duplicates share the webhook-id; out-of-order sends newest first', async () => {
    const sb = await startSandbox({
      processing: { distribution: 'fixed', meanMs: 10 },
      webhook: { url, secret: SECRET, retryBaseMs: 20, maxAttempts: 2 },
    });
    try {
      const c = api(sb, await token(sb));
      failFirst = 100;
      const s = await c.create({ enable_decision: true });
      await upload(s.upload_url, await pdf());
      await waitFor(() => deliveries.length >= 2);
      await new Promise((r) => setTimeout(r, 200));
      expect(deliveries).toHaveLength(2);

      deliveries.length = 0;
      failFirst = 0;
      sb.configure({ webhook: { duplicateRate: 1 } });
      const d = await c.create({ enable_decision: true });
      await upload(d.upload_url, await pdf({ title: 'dup' }));
      await waitFor(() => deliveries.length >= 2);
      expect(deliveries[0]?.headers['webhook-id']).toBe(deliveries[1]?.headers['webhook-id']);

      deliveries.length = 0;
      sb.configure({
        webhook: { duplicateRate: 0, outOfOrder: true, outOfOrderWindowMs: 3000 },
        processing: { distribution: 'fixed', meanMs: 0 },
      });
      const a = await c.create({ enable_decision: true, query_id: 'first' });
      const b = await c.create({ enable_decision: true, query_id: 'second' });
      await upload(a.upload_url, await pdf({ title: 'a' }));
      await upload(b.upload_url, await pdf({ title: 'b' }));
      await waitFor(() => deliveries.length >= 2);
      expect(deliveries.map((x) => verify(x).payload.query_id)).toEqual(['second', 'first']);
    } finally {
      await sb.close();
    }
  });
});

describe('/_sandbox control', () => {
  test('POST /_sandbox/config applies a patch and hides secrets', async () => {
    const sb = await startSandbox({});
    try {
      const res = await call(`${sb.baseUrl}/_sandbox/config`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rateLimit: { ratePerSecond: 5, burst: 5 } }),
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        rateLimit: { ratePerSecond: 5, burst: 5 },
        webhook: { secret: '[redacted]' },
      });
      expect(sb.config().rateLimit).toEqual({ ratePerSecond: 5, burst: 5 });
      const fixed = await call(`${sb.baseUrl}/_sandbox/config`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ port: 1 }),
      });
      expect(fixed.status).toBe(400);
    } finally {
      await sb.close();
    }
  });
});
