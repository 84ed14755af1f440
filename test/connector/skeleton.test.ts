import { createHash } from 'node:crypto';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, REGISTRY_URL, arrival, waitFor } from '../harness/e2e.js';

describe('walking skeleton: one document end to end on the real stack', () => {
  const env = new E2E();
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('turns a JSON arrival event with a file:// blob into an Avro fraud event keyed by submission id', async () => {
    const bytes = await sampleBytes('clean-pdf');
    const file = await env.writeFile('payslip.pdf', bytes);
    await env.startConnector();
    await env.collect();
    await env.produce([arrival('evt-skeleton-1', file, { attributes: { tenant: 'acme' } })]);

    await waitFor('the fraud event', () => env.on('fraud').length === 1);
    const [fraud] = env.on('fraud');
    const created = (await (
      await fetch(`${env.sandbox.baseUrl}/_sandbox/submissions?query_id=evt-skeleton-1`)
    ).json()) as {
      items: Array<{ id: string }>;
    };
    expect(created.items).toHaveLength(1);
    expect(fraud!.key).toBe(created.items[0]!.id);
    expect(fraud!.value).toMatchObject({
      submission_id: created.items[0]!.id,
      event_id: 'evt-skeleton-1',
      query_id: 'evt-skeleton-1',
      attributes: { tenant: 'acme' },
      status: 'SUCCESS',
      file_type: 'pdf',
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(fraud!.headers.event_id).toBe('evt-skeleton-1');

    const subject = `${env.topics.fraud}-value`;
    const versions = await fetch(`${REGISTRY_URL}/subjects/${subject}/versions`);
    expect(versions.status).toBe(200);
    expect(await versions.json()).toEqual([1]);
  });
});
