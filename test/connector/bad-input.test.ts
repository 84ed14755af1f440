/**
 * Bad input on the real stack: every class of bad record ends in exactly one DeadLetter event with a
 * clear reason and the original bytes, and the partition keeps moving (a good event produced after
 * all of them is processed, and the group's offset passes every record).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { redactSource } from '../../src/connector/outputs/dead-letters.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor, type Decoded } from '../harness/e2e.js';
import { forward } from '../harness/proxy.js';

/**
 * A transparent proxy in front of the sandbox that answers 400 to the creation of a submission whose
 * query_id is `force-400`: the API rejecting a request the connector considered valid.
 */
async function rejectingProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    const isCreate = req.method === 'POST' && req.url === '/v2/submission';
    const send = (body?: Buffer) => forward(upstream, req, res, body);
    if (!isCreate) return send();
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if ((JSON.parse(body.toString('utf8') || '{}') as { query_id?: string }).query_id === 'force-400') {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'query_id: rejected by the API' }));
        return;
      }
      send(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('bad input: a dead letter per bad record, and the partition keeps moving', () => {
  const env = new E2E();
  let proxy: Awaited<ReturnType<typeof rejectingProxy>>;
  beforeAll(async () => {
    await env.start({ maxUploadBytes: 1024 * 1024 });
    proxy = await rejectingProxy(env.sandbox.baseUrl);
  });
  afterAll(async () => {
    await env.stop();
    await proxy.close();
  });

  it('dead-letters each bad record with its reason, then processes the good event after them', async () => {
    const pdf = await sampleBytes('clean-pdf');
    const file = await env.writeFile('good.pdf', pdf);
    const big = await env.writeFile('big.pdf', Buffer.concat([pdf, Buffer.alloc(2 * 1024 * 1024, 0x20)]));
    const unknownSchema = Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0x01]), Buffer.from('garbage')]);
    const cases: Array<{
      name: string;
      value: Buffer | string | Record<string, unknown>;
      stage: string;
      code: string;
      message: RegExp;
      eventId?: string;
      httpStatus?: number;
    }> = [
      {
        name: 'not JSON',
        value: 'this is { not json',
        stage: 'decode',
        code: 'invalid_json',
        message: /JSON/,
      },
      {
        name: 'JSON array',
        value: '[{"event_id":"x"}]',
        stage: 'validate',
        code: 'schema_invalid',
        message: /object/i,
      },
      {
        name: 'missing event_id',
        value: { blob: { url: `file://${file}` } },
        stage: 'validate',
        code: 'schema_invalid',
        message: /event_id/,
      },
      {
        name: 'event_id too long',
        value: arrival('e'.repeat(257), file),
        stage: 'validate',
        code: 'schema_invalid',
        message: /event_id/,
      },
      {
        name: 'bad blob scheme',
        value: { event_id: 'evt-ftp', blob: { url: 'ftp://example.com/a.pdf' } },
        stage: 'validate',
        code: 'schema_invalid',
        message: /blob\.url.*ftp/,
        eventId: 'evt-ftp',
      },
      {
        name: 'blob outside fileRoots',
        value: arrival('evt-outside', '/etc/hostname'),
        stage: 'blob',
        code: 'blob_not_allowed',
        message: /fileRoots/,
        eventId: 'evt-outside',
      },
      {
        name: 'missing file',
        value: arrival('evt-missing', `${env.dir}/nope.pdf`),
        stage: 'blob',
        code: 'blob_not_found',
        message: /does not exist/,
        eventId: 'evt-missing',
      },
      {
        name: 'sha256 mismatch',
        value: arrival('evt-sha', file, {
          blob: { url: `file://${file}`, sha256: createHash('sha256').update('other').digest('hex') },
        }),
        stage: 'blob',
        code: 'sha256_mismatch',
        message: /sha256|SHA-256/i,
        eventId: 'evt-sha',
      },
      {
        name: 'invalid characteristics field',
        value: arrival('evt-chars', file, {
          submission_characteristics: { document_characteristics: { document_side: 'sideways' } },
        }),
        stage: 'validate',
        code: 'schema_invalid',
        message: /document_side/,
        eventId: 'evt-chars',
      },
      {
        name: 'query_id too long',
        value: arrival('evt-qid', file, { query_id: 'q'.repeat(1025) }),
        stage: 'validate',
        code: 'schema_invalid',
        message: /query_id/,
        eventId: 'evt-qid',
      },
      {
        name: 'unknown pipeline',
        value: arrival('evt-pipeline', file, { pipeline_configuration: 'EVERYTHING' }),
        stage: 'validate',
        code: 'schema_invalid',
        message: /pipeline_configuration/,
        eventId: 'evt-pipeline',
      },
      {
        name: 'Avro with an unknown schema id',
        value: unknownSchema,
        stage: 'decode',
        code: 'unknown_schema',
        message: /schema id/,
      },
      {
        name: 'API 400 on create',
        value: arrival('evt-400', file, { query_id: 'force-400' }),
        stage: 'create',
        code: 'api_400',
        message: /query_id/,
        eventId: 'evt-400',
        httpStatus: 400,
      },
      {
        name: 'API 413 on upload (over the sandbox maxUploadBytes)',
        value: arrival('evt-413', big),
        stage: 'upload',
        code: 'api_413',
        message: /.+/,
        eventId: 'evt-413',
        httpStatus: 413,
      },
    ];
    await env.startConnector({ api: { baseUrl: proxy.url, ratePerSecond: 200 } });
    await env.collect();
    await env.produce([...cases.map((c) => c.value), arrival('evt-good', file)]);

    await waitFor('the good event', () => env.forEvent('evt-good').length === 3, 40_000);
    await waitFor('every dead letter', () => env.on('dlq').length >= cases.length, 20_000);
    // Every record handled and its outcome read back: a surplus dead letter would be here by now.
    await env.waitForHandled();
    await env.waitForOutputsRead();
    const deadLetters = env.on('dlq');
    expect(deadLetters).toHaveLength(cases.length);

    const pointer = (offset: number) => ({
      topic: env.topics.arrived,
      partition: 0,
      offset: String(offset),
      key: null,
      traceparent: null,
    });
    const bytesOf = (v: (typeof cases)[number]['value']) =>
      Buffer.isBuffer(v) ? v : Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
    for (const [offset, c] of cases.entries()) {
      // Dead letters of records rejected while admitted carry their source; later failures their event id.
      const deadLetter: Decoded | undefined =
        deadLetters.find(
          (l) => l.value.source_offset === offset && l.value.source_topic === env.topics.arrived,
        ) ?? (c.eventId ? deadLetters.find((l) => l.value.event_id === c.eventId) : undefined);
      expect({ case: c.name, found: deadLetter !== undefined }).toEqual({ case: c.name, found: true });
      const v = deadLetter!.value;
      expect({ case: c.name, stage: v.stage, code: v.error_code }).toEqual({
        case: c.name,
        stage: c.stage,
        code: c.code,
      });
      expect(String(v.message)).toMatch(c.message);
      expect(v.http_status ?? null).toBe(c.httpStatus ?? null);
      expect(v.source_topic).toBe(env.topics.arrived);
      expect(v.source_partition).toBe(0);
      expect(v.source_offset).toBe(offset);
      if (c.eventId) {
        expect(v.event_id).toBe(c.eventId);
        expect(deadLetter!.headers.event_id).toBe(c.eventId);
      }
      // Every dead letter, also one raised after admission (the upload), carries the original bytes,
      // less the personal fields (characteristics); an Avro value is withheld (see dead-letters.ts).
      const original = bytesOf(c.value);
      const expected = redactSource({ ...pointer(offset), value: original }).source.value;
      expect(v.value === null ? null : Buffer.from(v.value as Buffer)).toEqual(expected);
      if (expected !== original)
        expect(String(v.message)).toContain(`the original is ${env.topics.arrived}/0@${offset}`);
    }
    // Nothing rejected before creation reached the API; the 413 one was created once.
    expect(env.sandbox.stats().submissionsByQueryId).toEqual({ 'evt-good': 1, 'evt-413': 1 });

    // The group's committed offset passes every record of the partition.
    const admin = env.kafka.admin();
    await admin.connect();
    try {
      let committed: string | null | undefined;
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        committed = (await admin.groupOffsets(`${env.id}-group`, env.topics.arrived)).get(0);
        if (committed === String(cases.length + 1)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(committed).toBe(String(cases.length + 1));
    } finally {
      await admin.disconnect();
    }
  });
});

describe('values nested too deep: one dead letter each, on the input and the feedback topic, and the rest flows', () => {
  const env = new E2E(2);
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('dead-letters 5,000-deep and 40 KB nested events while every good document finishes', async () => {
    const file = await env.writeFile('good.pdf', await sampleBytes('clean-pdf'));
    const arrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    // ~10 KB and ~40 KB: the sizes that overflowed the stack (the first) and crashed the process.
    const deep = (eventId: string, depth: number, field = 'submission_characteristics') =>
      `{"event_id":"${eventId}","blob":{"url":"file://${file}"},"${field}":{"a":${arrays(depth)}}}`;
    const hostile = [
      { id: 'deep-5000', text: deep('deep-5000', 5000) },
      { id: 'deep-40k', text: deep('deep-40k', 20_000) },
      { id: 'deep-extra', text: deep('deep-extra', 5000, 'extra') },
    ];
    expect(Buffer.byteLength(hostile[1]!.text)).toBeGreaterThan(40_000);
    const feedbackDeep = (eventId: string, depth: number) =>
      `{"submission_id":"sub_0123456789abcdefghijkl","event_id":"${eventId}","feedback":{"outcome":"FRAUD","labels":${arrays(depth)}}}`;
    const feedback = [
      { id: 'fb-deep-5000', text: feedbackDeep('fb-deep-5000', 5000) },
      { id: 'fb-deep-40k', text: feedbackDeep('fb-deep-40k', 20_000) },
    ];
    await env.startConnector();
    await env.collect();
    // Each partition gets hostile records before and between good ones.
    const good = Array.from({ length: 6 }, (_, i) => `good-${i}`);
    for (const partition of [0, 1]) {
      await env.producer.send(env.topics.arrived, [
        ...hostile.map((h) => ({ key: null, value: h.text, partition })),
        ...good
          .filter((_, i) => i % 2 === partition)
          .map((id) => ({ key: null, value: JSON.stringify(arrival(id, file)), partition })),
      ]);
      await env.producer.send(
        env.topics.feedback,
        feedback.map((f) => ({ key: null, value: f.text, partition })),
      );
    }

    await waitFor('every good document', () => good.every((id) => env.forEvent(id).length === 3), 60_000);
    const expected = 2 * (hostile.length + feedback.length);
    await waitFor('a dead letter per hostile record', () => env.on('dlq').length >= expected, 20_000);
    // Both input topics handled to their end and the outputs read back: no surplus dead letter is on its way.
    await env.waitForHandled();
    await env.waitForHandled({ topic: env.topics.feedback });
    await env.waitForOutputsRead();
    const deadLetters = env.on('dlq').map((l) => l.value);
    expect(deadLetters).toHaveLength(expected);
    for (const [items, topic, stage] of [
      [hostile, env.topics.arrived, 'decode'],
      [feedback, env.topics.feedback, 'feedback'],
    ] as const) {
      for (const item of items) {
        const mine = deadLetters.filter((l) => l.event_id === item.id);
        expect(mine.map((l) => [l.source_topic, l.source_partition, l.stage, l.error_code]).sort()).toEqual([
          [topic, 0, stage, 'value_too_deep'],
          [topic, 1, stage, 'value_too_deep'],
        ]);
        expect(String(mine[0]!.message)).toMatch(/nested deeper than 64 levels/);
      }
    }
    // Nothing hostile reached the API; each good document was submitted once.
    expect(Object.keys(env.sandbox.stats().submissionsByQueryId).sort()).toEqual([...good].sort());
  });
});
