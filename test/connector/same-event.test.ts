/**
 * The same event twice in one fetched batch, on the real stack (issue 29): producers retrying a send
 * do this routinely. Each event is admitted once: one submission, analysed from the first copy's
 * blob, one result per awaited kind; a second copy pointing at another blob is not analysed and says
 * so in a dead letter (`event_id_reused`), in the same batch as after its document finished; nothing is
 * dropped silently.
 */
import { createHash } from 'node:crypto';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('the same event twice in one batch', () => {
  const env = new E2E(2);
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('gives one submission per event, from its first blob, and one result each', async () => {
    const pdf = await sampleBytes('clean-pdf');
    const other = Buffer.concat([pdf, Buffer.from('\n% another file\n')]);
    const first = await env.writeFile('first.pdf', pdf);
    const second = await env.writeFile('second.pdf', other);
    const ids = Array.from({ length: 15 }, (_, i) => `evt-twice-${i}`);
    // Back to back, keyed by event id (as producers key them): both copies land in one partition's batch.
    const events = ids.flatMap((id, i) => [
      arrival(id, first, { pipeline_configuration: 'FRAUD_ONLY' }),
      arrival(id, i < 5 ? second : first, { pipeline_configuration: 'FRAUD_ONLY' }),
    ]);
    await env.collect();
    await env.produce(events, (i) => ids[Math.floor(i / 2)]!);
    await env.startConnector();

    await waitFor(
      'every event fraud, quality and classification results',
      () =>
        ids.every((id) =>
          ['fraud', 'quality', 'classification'].every((kind) =>
            env.forEvent(id).some((o) => env.kindOf(o) === kind),
          ),
        ),
      90_000,
    );
    // Every copy handled (the group committed past it, so its outcome is out) and read back: a second
    // submission's results, had there been one, would be in the outputs by now.
    await env.waitForHandled();
    await env.waitForOutputsRead();

    const submissions = await Promise.all(ids.map((id) => env.submissions(id)));
    expect(submissions.map((s) => s.length)).toEqual(ids.map(() => 1));
    // Analysed from the first copy's blob: the second copy did not replace it.
    expect(submissions.map((s) => (s[0] as unknown as { sha256: string }).sha256)).toEqual(
      ids.map(() => sha256(pdf)),
    );
    for (const id of ids) {
      const kinds = env
        .forEvent(id)
        .map((o) => env.kindOf(o))
        .filter((k) => k !== 'dlq');
      expect(kinds.sort()).toEqual(['classification', 'fraud', 'quality']);
    }
    const deadLetters = () =>
      env
        .on('dlq')
        .map((l) => [l.headers.event_id, l.value.stage, l.value.error_code])
        .sort();
    // The five copies with another blob, one dead letter each.
    expect(deadLetters()).toEqual(ids.slice(0, 5).map((id) => [id, 'validate', 'event_id_reused']));

    // Later copies, once their documents finished: the same rule.
    await env.produce(
      [
        arrival(ids[5]!, second, { pipeline_configuration: 'FRAUD_ONLY' }),
        arrival(ids[6]!, first, { pipeline_configuration: 'FRAUD_ONLY' }),
      ],
      (i) => ids[5 + i]!,
    );
    await waitFor(
      'a dead letter for the later copy with another blob',
      () => env.on('dlq').length >= 6,
      60_000,
    );
    await env.waitForHandled();
    await env.waitForOutputsRead();
    expect(deadLetters()).toEqual(
      [...ids.slice(0, 6)].sort().map((id) => [id, 'validate', 'event_id_reused']),
    );
    const after = await Promise.all(ids.map((id) => env.submissions(id)));
    expect(after.map((s) => s.length)).toEqual(ids.map(() => 1));
    expect(env.outputs.filter((o) => env.kindOf(o) === 'fraud')).toHaveLength(ids.length);
  });
});
