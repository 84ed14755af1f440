import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { sampleBytes } from '../../src/demo/corpus.js';
import type { Connector } from '../../src/connector/connector.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const secret = `whsec_${randomBytes(32).toString('base64')}`;

/** This instance's count of decision events published, of documents it finished, of deliveries it received. */
async function counts(c: Connector): Promise<{ decisions: number; done: number; received: number }> {
  const published = (await c.metrics.resultsPublished.get()).values;
  const completed = (await c.metrics.completed.get()).values;
  const webhooks = (await c.metrics.webhooks.get()).values;
  return {
    decisions: published.find((v) => v.labels.kind === 'decision')?.value ?? 0,
    done: completed.find((v) => v.labels.outcome === 'done')?.value ?? 0,
    received: webhooks.reduce((sum, v) => sum + v.value, 0),
  };
}

describe('webhooks: the Adaptive Decision fast path', () => {
  const env = new E2E(2);
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'uniform', meanMs: 400, minMs: 200, maxMs: 600 } });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('delivers decisions with polling for decisions turned off, one per document, across instances', async () => {
    const webhooks = { enabled: true, port: 0, secrets: [secret] };
    const connector = { decisionPolling: false };
    // Only the first instance's receiver is given to the sandbox: documents owned by the second
    // instance get their decision through the first one's record, and the second publishes them.
    const a = await env.startConnector({ webhooks, connector });
    const b = await env.startConnector({ webhooks, connector });
    env.sandbox.configure({ webhook: { url: a.webhookUrl!, secret, duplicateRate: 0.5, outOfOrder: true } });
    await env.collect();
    // One input partition each before anything arrives, so that both own documents.
    await waitFor(
      'one partition per instance',
      () => a.isReady().assigned === 1 && b.isReady().assigned === 1,
      60_000,
    );

    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const n = 20;
    await env.produce(
      Array.from({ length: n }, (_, i) => arrival(`wh-${i}`, file, { enable_decision: true })),
      (i) => `key-${i}`,
    );

    await waitFor(
      'a decision for every document',
      () => new Set(env.on('decision').map((d) => d.key)).size === n,
      90_000,
    );
    // Let duplicate deliveries and retries play out, then check nothing was published twice.
    await waitFor('the sandbox to send its duplicates', () => env.sandbox.stats().webhooksSent > n, 30_000);
    await new Promise((r) => setTimeout(r, 1500));
    const decisions = env.on('decision');
    expect(decisions).toHaveLength(n);
    expect(decisions.every((d) => d.value.source === 'webhook')).toBe(true);
    // The same file submitted 20 times trips the serial-fraud rule, so verdicts differ; all are final.
    expect(decisions.every((d) => d.value.status === 'SUCCESS')).toBe(true);
    expect(
      decisions.every((d) => ['APPROVED', 'DECLINED', 'MANUAL_REVIEW'].includes(String(d.value.decision))),
    ).toBe(true);
    const polls = Object.entries(env.sandbox.stats().requests).filter(([route]) =>
      route.includes('/decision'),
    );
    // One decision GET per document, by the instance that runs it on a delivery; none by a poller.
    expect(polls.reduce((sum, [, count]) => sum + count, 0)).toBe(n);
    // Both instances finished their documents: every document's fraud result is out too.
    await waitFor('all fraud results', () => env.on('fraud').length >= n);
    expect(env.on('dlq')).toHaveLength(0);

    // The owner publishes: each instance published the decisions of exactly the documents it finished,
    // and the second did so for deliveries only the first instance received.
    await waitFor(
      'every document done',
      () => env.on('fraud').length >= n && a.engine.inFlight + b.engine.inFlight === 0,
    );
    const [ca, cb] = [await counts(a), await counts(b)];
    expect(ca.decisions + cb.decisions).toBe(n);
    expect(ca.decisions).toBe(ca.done);
    expect(cb.decisions).toBe(cb.done);
    expect(cb.decisions).toBeGreaterThan(0);
    expect(ca.decisions).toBeGreaterThan(0);
    expect(ca.received).toBeGreaterThan(n);
    expect(cb.received).toBe(0);

    // The second instance never received a delivery itself, yet knows every one handled: a new
    // webhook-id for an event already handled (same submission, type and version) is a duplicate.
    const first = decisions[0]!;
    const body = JSON.stringify({
      type: 'documents.adaptive_decision.finished',
      version: 0,
      tenant_id: 'sandbox',
      payload: {
        id: first.key,
        status: 'SUCCESS',
        analysis_time: new Date().toISOString(),
        query_id: first.value.query_id,
        result_url: `/v2/submission/${first.key}/decision`,
      },
    });
    const at = new Date();
    const response = await fetch(b.webhookUrl!, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_resent_by_hand',
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign('msg_resent_by_hand', at, body),
      },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ message: 'duplicate' });
    await new Promise((r) => setTimeout(r, 500));
    expect(env.on('decision')).toHaveLength(n);
  });
});
