import { randomBytes } from 'node:crypto';
import { Connector } from '../../src/connector/connector.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { silentLogger } from '../../src/observability/logger.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const secret = `whsec_${randomBytes(32).toString('base64')}`;

describe('webhooks: a resumed document looks up the deliveries recorded while nobody ran it', () => {
  const env = new E2E(1);
  let receiver: Connector | null = null;
  beforeAll(async () => {
    await env.start({ processing: { distribution: 'fixed', meanMs: 12_000 } });
  });
  afterAll(async () => {
    await receiver?.stop();
    await env.stop();
  });

  it('publishes decisions delivered between two connectors, by webhook, once each', async () => {
    const webhooks = { enabled: true, port: 0, secrets: [secret] };
    const connector = { decisionPolling: false };
    // A receiver-only instance (`docstream webhooks`) records the deliveries; it runs no document.
    receiver = await Connector.start({
      config: env.config({ webhooks }),
      logger: silentLogger,
      consume: false,
    });
    env.sandbox.configure({ webhook: { url: receiver.webhookUrl!, secret } });
    await env.collect();

    const first = await env.startConnector({ connector });
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const n = 4;
    await env.produce(
      Array.from({ length: n }, (_, i) => arrival(`rs-${i}`, file, { enable_decision: true })),
    );
    // Uploaded (processing takes seconds): stop the connector before any decision is ready.
    await waitFor('every upload', () => env.sandbox.stats().uploads >= n, 30_000);
    await waitFor('the state of every upload recorded', () => first.engine.inFlight === n, 10_000);
    await first.stop();
    // Processing takes 12 s: no decision was delivered while the first connector ran.
    expect(env.sandbox.stats().webhooksAcknowledged).toBe(0);

    await waitFor('every delivery recorded', () => env.sandbox.stats().webhooksAcknowledged >= n, 30_000);
    expect(env.on('decision')).toEqual([]);

    // The next connector resumes the documents from their state and finds their deliveries.
    await env.startConnector({ connector });
    await waitFor('a decision for every document', () => env.on('decision').length >= n, 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    const decisions = env.on('decision');
    expect(decisions).toHaveLength(n);
    expect(new Set(decisions.map((d) => d.key)).size).toBe(n);
    expect(decisions.every((d) => d.value.source === 'webhook')).toBe(true);
    expect(env.on('dlq')).toEqual([]);
    const gets = Object.entries(env.sandbox.stats().requests)
      .filter(([route]) => route.includes('/decision'))
      .reduce((sum, [, count]) => sum + count, 0);
    expect(gets).toBe(n);
  });
});
