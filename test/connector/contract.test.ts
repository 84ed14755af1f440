/**
 * The event contract on the real stack: every pipeline configuration, with and without decision and
 * characteristics, yields exactly the awaited result events (Avro through the registry, key =
 * submission id, headers event_id and traceparent, attributes echoed); Avro input is accepted.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { Registry } from '../../src/serde/registry.js';
import { E2E, REGISTRY_URL, arrival, waitFor } from '../harness/e2e.js';

const PIPELINES = ['FRAUD_ONLY', 'QUALITY_ONLY', 'CLASSIFICATION_ONLY'] as const;
const AWAITED: Record<(typeof PIPELINES)[number], string[]> = {
  FRAUD_ONLY: ['fraud', 'quality', 'classification'],
  QUALITY_ONLY: ['quality'],
  CLASSIFICATION_ONLY: ['classification'],
};
const CHARACTERISTICS = {
  document_characteristics: { document_side: 'front', source_channel: 'api' },
  transaction_characteristics: { amount_usd: 12.5 },
  customer_case_id: 'case-7',
};

describe('event contract: outputs per pipeline configuration', () => {
  const env = new E2E();
  let file: string;
  beforeAll(async () => {
    await env.start();
    file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    await env.startConnector();
    await env.collect();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('publishes exactly the awaited results of each of the 12 combinations, keyed by submission id', async () => {
    const cases = PIPELINES.flatMap((pipeline) =>
      [false, true].flatMap((decision) =>
        [false, true].map((chars) => ({
          id: `evt-${pipeline}-${decision ? 'dec' : 'nodec'}-${chars ? 'chars' : 'nochars'}`,
          pipeline,
          decision,
          chars,
          expected: [...AWAITED[pipeline], ...(decision ? ['decision'] : [])].sort(),
        })),
      ),
    );
    const traceparent = (i: number) =>
      `00-${'a'.repeat(30)}${String(i).padStart(2, '0')}-${'b'.repeat(16)}-01`;
    await env.produce(
      cases.map((c, i) =>
        arrival(c.id, file, {
          pipeline_configuration: c.pipeline,
          enable_decision: c.decision,
          ...(c.chars ? { submission_characteristics: CHARACTERISTICS } : {}),
          attributes: { case: c.id, index: String(i) },
        }),
      ),
      (i) => `input-key-${i}`,
      // Half the inputs carry a traceparent; the others must not get one.
      (i) => (i % 2 === 0 ? { traceparent: traceparent(i) } : undefined),
    );
    const total = cases.reduce((n, c) => n + c.expected.length, 0);
    await waitFor(`${total} result events`, () => env.outputs.length >= total, 50_000);
    // Every input handled (committed past) and the outputs read back before asserting "exactly": a
    // surplus event would be in them by now.
    await env.waitForHandled();
    await env.waitForOutputsRead();

    expect(env.on('dlq')).toEqual([]);
    expect(env.outputs).toHaveLength(total);
    for (const [i, c] of cases.entries()) {
      const subs = await env.submissions(c.id);
      expect(subs).toHaveLength(1);
      expect(subs[0]!.pipeline_configuration).toBe(c.pipeline);
      const outs = env.forEvent(c.id);
      expect(outs.map((o) => env.kindOf(o)).sort()).toEqual(c.expected);
      for (const o of outs) {
        expect(o.key).toBe(subs[0]!.id);
        expect(o.value).toMatchObject({
          submission_id: subs[0]!.id,
          event_id: c.id,
          query_id: c.id,
          attributes: { case: c.id, index: String(i) },
        });
        if (i % 2 === 0) expect(o.headers.traceparent).toBe(traceparent(i));
        else expect(o.headers.traceparent).toBeUndefined();
      }
    }
    const stats = env.sandbox.stats();
    expect(stats.submissionsCreated).toBe(cases.length);
    // Characteristics were sent exactly for the cases that carried them.
    const putChars = Object.entries(stats.requests)
      .filter(([k]) => k.startsWith('PUT /v2/submission/:id/characteristics 2'))
      .reduce((n, [, v]) => n + v, 0);
    expect(putChars).toBe(cases.filter((c) => c.chars).length);
    // Every output subject has one schema version: the values were written with the registered schemas.
    for (const kind of ['fraud', 'quality', 'classification', 'decision'] as const) {
      const res = await fetch(`${REGISTRY_URL}/subjects/${env.topics[kind]}-value/versions`);
      expect(await res.json()).toEqual([1]);
    }
  });

  it('accepts an Avro-encoded DocumentArrived (Confluent wire format) like a JSON one', async () => {
    const producerRegistry = new Registry({ url: REGISTRY_URL });
    await producerRegistry.registerValueSchema(env.topics.arrived, 'DocumentArrived');
    const value = producerRegistry.encode(env.topics.arrived, {
      event_id: 'evt-avro-1',
      blob: { url: `file://${file}`, content_type: 'application/pdf', size_bytes: null, sha256: null },
      query_id: 'evt-avro-1',
      pipeline_configuration: 'QUALITY_ONLY',
      enable_decision: true,
      submission_characteristics: JSON.stringify(CHARACTERISTICS),
      attributes: { via: 'avro' },
      reprocess: false,
    });
    expect(value[0]).toBe(0);
    await env.produce([value]);
    await waitFor('the Avro event results', () => env.forEvent('evt-avro-1').length >= 2, 30_000);
    const outs = env.forEvent('evt-avro-1');
    expect(outs.map((o) => env.kindOf(o)).sort()).toEqual(['decision', 'quality']);
    const subs = await env.submissions('evt-avro-1');
    expect(subs).toHaveLength(1);
    for (const o of outs) {
      expect(o.key).toBe(subs[0]!.id);
      expect(o.value).toMatchObject({ event_id: 'evt-avro-1', attributes: { via: 'avro' } });
    }
    expect(env.on('dlq')).toEqual([]);
  });
});
