/**
 * s3:// blobs through the connector on the real stack (Kafka, registry, the stack's S3 store): a
 * document whose object exists finishes with one signed GET; a GET answered 503 SlowDown is tried
 * again and the document finishes, no dead letter; a missing key ends in a dead letter that says why. A
 * loopback front of the store counts the GETs and checks each signature as S3 does (the store
 * checks none).
 */
import { CountingBlobServer, s3ErrorXml } from '../../src/blobs/test-helpers.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, waitFor } from '../harness/e2e.js';
import { S3_ENDPOINT, ScratchBucket } from '../harness/s3-store.js';

const store = new ScratchBucket('docstream-s3-e2e');
const bucket = store.name;
const env = new E2E(1);
let front: CountingBlobServer;

const event = (id: string, key: string) => ({
  event_id: id,
  query_id: id,
  blob: { url: `s3://${bucket}/${key}` },
  pipeline_configuration: 'FRAUD_ONLY',
});

beforeAll(async () => {
  await env.start();
  await store.create();
  const pdf = await sampleBytes('clean-pdf');
  for (const key of ['docs/ok.pdf', 'docs/busy.pdf']) await store.put(key, pdf);
  front = await new CountingBlobServer(new URL(S3_ENDPOINT)).start();
  front.secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
});

afterAll(async () => {
  await env.stop();
  await front?.stop();
  await store.remove();
});

describe('s3:// blobs through the connector', () => {
  it('finishes a found object and one answered 503 once; dead letters a missing key with its reason', async () => {
    front.reply(`/${bucket}/docs/busy.pdf`, 503, s3ErrorXml('SlowDown'), {}, 1);
    await env.collect();
    await env.startConnector({
      blobs: { s3Buckets: [bucket], s3Endpoint: front.origin, s3ForcePathStyle: true },
    });
    await env.produce([
      event('evt-s3-ok', 'docs/ok.pdf'),
      event('evt-s3-busy', 'docs/busy.pdf'),
      event('evt-s3-missing', 'docs/nope.pdf'),
    ]);
    const finished = ['evt-s3-ok', 'evt-s3-busy'];
    await waitFor(
      'a fraud result for each found object, and a dead letter for the missing one',
      () =>
        finished.every((id) => env.forEvent(id).some((o) => env.kindOf(o) === 'fraud')) &&
        env.on('dlq').length >= 1,
      60_000,
    );
    const deadLetters = env.on('dlq').map((l) => {
      const v = l.value as { event_id: string; stage: string; error_code: string; message: string };
      return [v.event_id, v.stage, v.error_code, v.message];
    });
    expect(deadLetters).toEqual([
      ['evt-s3-missing', 'blob', 'blob_not_found', `s3://${bucket}/docs/nope.pdf does not exist (NoSuchKey)`],
    ]);
    // ok: 1 GET; busy: the 503 and the GET after it; missing: 1 (not found is not tried again).
    expect(front.gets).toBe(4);
    const counts = await Promise.all(finished.map(async (id) => (await env.submissions(id)).length));
    expect(counts).toEqual([1, 1]);
  });
});
