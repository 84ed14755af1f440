import avro from 'avsc';
import { avroSchemaJson, avroSchemaText } from './avro-schemas.js';
import { decodeDocumentArrived, decodeFeedbackEvent, type InputResult } from './input.js';
import { Registry, RegistryError } from './registry.js';

/** A registry whose HTTP API is a map of schema id to schema text: the real decode path, no server. */
function fakeRegistry(schemas: Record<number, string>): Registry {
  const fetchImpl = (async (url: string | URL | Request) => {
    const match = /\/schemas\/ids\/(\d+)$/.exec(String(url));
    const text = match ? schemas[Number(match[1])] : undefined;
    if (text === undefined) return new Response('{"error_code":40403}', { status: 404 });
    return new Response(JSON.stringify({ schema: text }), { status: 200 });
  }) as typeof fetch;
  return new Registry({ url: 'http://registry.invalid', fetch: fetchImpl });
}

function wire(schemaId: number, schema: avro.Schema, value: unknown): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, avro.Type.forSchema(schema).toBuffer(value)]);
}

const registry = fakeRegistry({ 1: avroSchemaText('DocumentArrived'), 2: avroSchemaText('FeedbackEvent') });
const json = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
const valid = { event_id: 'evt-1', blob: { url: 'file:///tmp/a.pdf' } };

async function failureOf(buffer: Buffer | null): Promise<Extract<InputResult<unknown>, { ok: false }>> {
  const result = await decodeDocumentArrived(buffer, registry);
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.event)}`);
  return result;
}

describe('decodeDocumentArrived from JSON', () => {
  it('applies the contract defaults', async () => {
    const result = await decodeDocumentArrived(json(valid), registry);
    expect(result).toEqual({
      ok: true,
      format: 'json',
      event: {
        event_id: 'evt-1',
        blob: { url: 'file:///tmp/a.pdf', content_type: null, size_bytes: null, sha256: null },
        query_id: null,
        pipeline_configuration: 'FRAUD_ONLY',
        enable_decision: false,
        submission_characteristics: null,
        attributes: {},
        reprocess: false,
      },
    });
  });

  it('keeps every field of a full event and ignores unknown top-level fields', async () => {
    const full = {
      event_id: 'e'.repeat(256),
      blob: {
        url: 's3://bucket/dir/key.pdf',
        content_type: 'application/pdf',
        size_bytes: 10,
        sha256: 'AB'.repeat(32),
      },
      query_id: 'q'.repeat(1024),
      pipeline_configuration: 'CLASSIFICATION_ONLY',
      enable_decision: true,
      submission_characteristics: {
        customer_case_id: 'case-1',
        transaction_characteristics: { amount_usd: 12.5 },
      },
      attributes: { tenant: 'acme' },
      reprocess: true,
      added_by_a_newer_producer: 1,
    };
    const result = await decodeDocumentArrived(json(full), registry);
    if (!result.ok) throw new Error(result.message);
    expect(result.event.blob.sha256).toBe('ab'.repeat(32));
    expect(result.event.submission_characteristics).toEqual(full.submission_characteristics);
    expect(result.event).toMatchObject({
      query_id: full.query_id,
      pipeline_configuration: 'CLASSIFICATION_ONLY',
      enable_decision: true,
      attributes: { tenant: 'acme' },
      reprocess: true,
    });
  });

  it.each([
    ['an empty value', null, 'empty_value', /no value/],
    ['text that is not JSON', json('not json {'), 'invalid_json', /not valid JSON/],
    ['bytes that are not UTF-8', Buffer.from([0xff, 0xfe, 0x7b]), 'invalid_json', /UTF-8/],
    ['a JSON array', json([valid]), 'schema_invalid', /JSON object, not an array/],
    ['a JSON string', json('"evt"'), 'schema_invalid', /not a string/],
    ['a missing event_id', json({ blob: valid.blob }), 'schema_invalid', /^event_id: /],
    ['an empty event_id', json({ ...valid, event_id: '' }), 'schema_invalid', /^event_id: /],
    [
      'an event_id over 256 chars',
      json({ ...valid, event_id: 'e'.repeat(257) }),
      'schema_invalid',
      /^event_id: .*256/,
    ],
    ['a missing blob', json({ event_id: 'e' }), 'schema_invalid', /^blob: /],
    [
      'a ftp blob',
      json({ ...valid, blob: { url: 'ftp://host/a.pdf' } }),
      'schema_invalid',
      /^blob\.url: scheme ftp/,
    ],
    [
      'a relative blob url',
      json({ ...valid, blob: { url: 'a.pdf' } }),
      'schema_invalid',
      /^blob\.url: must be an absolute/,
    ],
    [
      'an s3 url without key',
      json({ ...valid, blob: { url: 's3://bucket' } }),
      'schema_invalid',
      /^blob\.url: .*bucket and a key/,
    ],
    [
      'a bad sha256',
      json({ ...valid, blob: { url: 'file:///a', sha256: 'xyz' } }),
      'schema_invalid',
      /^blob\.sha256: /,
    ],
    [
      'a negative size',
      json({ ...valid, blob: { url: 'file:///a', size_bytes: -1 } }),
      'schema_invalid',
      /^blob\.size_bytes: /,
    ],
    [
      'a query_id over 1024 chars',
      json({ ...valid, query_id: 'q'.repeat(1025) }),
      'schema_invalid',
      /^query_id: .*1024/,
    ],
    [
      'an unknown pipeline',
      json({ ...valid, pipeline_configuration: 'ALL' }),
      'schema_invalid',
      /^pipeline_configuration: /,
    ],
    [
      'a string enable_decision',
      json({ ...valid, enable_decision: 'yes' }),
      'schema_invalid',
      /^enable_decision: /,
    ],
    ['a string reprocess', json({ ...valid, reprocess: 1 }), 'schema_invalid', /^reprocess: /],
    [
      'an unknown characteristics field',
      json({ ...valid, submission_characteristics: { shoe_size: 44 } }),
      'schema_invalid',
      /unknown field submission_characteristics\.shoe_size/,
    ],
    [
      'a mistyped characteristics field',
      json({ ...valid, submission_characteristics: { transaction_characteristics: { maturity_days: 1.5 } } }),
      'schema_invalid',
      /^submission_characteristics\.transaction_characteristics\.maturity_days: /,
    ],
    [
      'characteristics that are a string',
      json({ ...valid, submission_characteristics: '{}' }),
      'schema_invalid',
      /^submission_characteristics: /,
    ],
    ['a number attribute', json({ ...valid, attributes: { n: 1 } }), 'schema_invalid', /^attributes\.n: /],
    [
      'attributes that are an array',
      json({ ...valid, attributes: ['a'] }),
      'schema_invalid',
      /^attributes: /,
    ],
  ])('rejects %s', async (_label, buffer, code, message) => {
    const result = await failureOf(buffer);
    expect(result.code).toBe(code);
    expect(result.message).toMatch(message);
  });

  it('rejects characteristics over the size limit without reading them', async () => {
    const big = { ...valid, submission_characteristics: { customer_case_id: 'x'.repeat(2000) } };
    const result = await decodeDocumentArrived(json(big), registry, { maxCharacteristicsBytes: 1000 });
    expect(result).toMatchObject({ ok: false, code: 'characteristics_too_large' });
  });

  it('reports the event_id and attributes it could read, for the DeadLetter event', async () => {
    const result = await failureOf(
      json({ event_id: 'evt-9', attributes: { a: 'b' }, blob: { url: 'gopher://x' } }),
    );
    expect(result).toMatchObject({ event_id: 'evt-9', attributes: { a: 'b' }, format: 'json' });
  });
});

describe('input bounds (depth and size), checked before anything recurses', () => {
  const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  const withDeep = (field: string, depth: number) =>
    Buffer.from(
      `{"event_id":"evt-deep","attributes":{"t":"a"},"blob":{"url":"file:///tmp/a.pdf"},"${field}":${nestedArrays(depth)}}`,
    );

  it.each([
    ['5,000 nested arrays in the characteristics (~10 KB)', 'submission_characteristics', 5000],
    ['20,000 nested arrays in the characteristics (~40 KB)', 'submission_characteristics', 20_000],
    ['5,000 nested arrays in an unknown field', 'extra', 5000],
  ])(
    'refuses %s as value_too_deep, keeping the event id for the dead letter',
    async (_label, field, depth) => {
      const result = await failureOf(withDeep(field, depth));
      expect(result).toMatchObject({
        code: 'value_too_deep',
        format: 'json',
        event_id: 'evt-deep',
        attributes: { t: 'a' },
        message: expect.stringMatching(/nested deeper than 64 levels/),
      });
    },
  );

  it('refuses the same on the feedback topic', async () => {
    const result = await decodeFeedbackEvent(withDeep('feedback', 5000), registry);
    expect(result).toMatchObject({ ok: false, code: 'value_too_deep', event_id: 'evt-deep' });
  });

  it('refuses a value over the size limit without reading it', async () => {
    const result = await decodeDocumentArrived(json({ ...valid, pad: 'x'.repeat(2000) }), registry, {
      maxValueBytes: 1000,
    });
    expect(result).toMatchObject({ ok: false, code: 'value_too_large', event_id: null });
    const feedback = await decodeFeedbackEvent(json({ pad: 'x'.repeat(2000) }), registry, {
      maxValueBytes: 1000,
    });
    expect(feedback).toMatchObject({ ok: false, code: 'value_too_large' });
  });

  it('accepts the nesting real events have', async () => {
    const event = {
      ...valid,
      submission_characteristics: { document_characteristics: { document_side: 'front' } },
      extra: { a: [[{ b: [1] }]] },
    };
    expect((await decodeDocumentArrived(json(event), registry)).ok).toBe(true);
  });

  it('cuts the reason given for a very wide value', async () => {
    const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`unknown_${i}`, i]));
    const result = await failureOf(json({ ...valid, submission_characteristics: wide }));
    expect(result.code).toBe('schema_invalid');
    expect(result.message.length).toBeLessThanOrEqual(2010);
    expect(result.message).toMatch(/… \(cut\)$/);
  });
});

describe('decodeDocumentArrived from Avro (Confluent wire format)', () => {
  const schema = avroSchemaJson('DocumentArrived') as avro.Schema;
  const avroValue = {
    event_id: 'evt-a',
    blob: { url: 'https://files.example.com/a.pdf', content_type: null, size_bytes: 5, sha256: null },
    query_id: 'q',
    pipeline_configuration: 'QUALITY_ONLY',
    enable_decision: false,
    submission_characteristics: JSON.stringify({ customer_tenant_id: 't-1' }),
    attributes: { k: 'v' },
    reprocess: false,
  };

  it('decodes the event and parses the characteristics JSON', async () => {
    const result = await decodeDocumentArrived(wire(1, schema, avroValue), registry);
    if (!result.ok) throw new Error(result.message);
    expect(result.format).toBe('avro');
    expect(result.event).toMatchObject({
      event_id: 'evt-a',
      blob: { url: 'https://files.example.com/a.pdf', size_bytes: 5 },
      pipeline_configuration: 'QUALITY_ONLY',
      submission_characteristics: { customer_tenant_id: 't-1' },
      attributes: { k: 'v' },
    });
  });

  it('reads a value written with an older schema version, filling defaults', async () => {
    const older = {
      type: 'record',
      name: 'DocumentArrived',
      namespace: 'io.docstream.v1',
      fields: [
        { name: 'event_id', type: 'string' },
        {
          name: 'blob',
          type: { type: 'record', name: 'BlobRef', fields: [{ name: 'url', type: 'string' }] },
        },
      ],
    } as avro.Schema;
    const withOlder = fakeRegistry({ 7: JSON.stringify(older) });
    const result = await decodeDocumentArrived(
      wire(7, older, { event_id: 'old', blob: { url: 'file:///x' } }),
      withOlder,
    );
    expect(result).toMatchObject({
      ok: true,
      event: { event_id: 'old', pipeline_configuration: 'FRAUD_ONLY', attributes: {}, reprocess: false },
    });
  });

  it('validates Avro values like JSON ones', async () => {
    const result = await failureOf(
      wire(1, schema, { ...avroValue, blob: { ...avroValue.blob, url: 'ftp://x/y' } }),
    );
    expect(result).toMatchObject({ code: 'schema_invalid', format: 'avro', event_id: 'evt-a' });
  });

  it('rejects characteristics that are not JSON text', async () => {
    const result = await failureOf(wire(1, schema, { ...avroValue, submission_characteristics: '{' }));
    expect(result).toMatchObject({
      code: 'schema_invalid',
      message: expect.stringMatching(/^submission_characteristics/),
    });
  });

  it('refuses characteristics JSON nested too deep before parsing them', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const result = await failureOf(wire(1, schema, { ...avroValue, submission_characteristics: deep }));
    expect(result).toMatchObject({
      code: 'value_too_deep',
      format: 'avro',
      event_id: 'evt-a',
      message: expect.stringMatching(/^submission_characteristics: /),
    });
  });

  it('refuses a decoded value nested too deep (a recursive writer schema)', async () => {
    const recursive = {
      type: 'record',
      name: 'DocumentArrived',
      namespace: 'io.docstream.v1',
      fields: [
        { name: 'event_id', type: 'string' },
        {
          name: 'blob',
          type: { type: 'record', name: 'BlobRef', fields: [{ name: 'url', type: 'string' }] },
        },
        {
          name: 'extra',
          type: [
            'null',
            { type: 'record', name: 'Node', fields: [{ name: 'next', type: ['null', 'Node'] }] },
          ],
        },
      ],
    } as avro.Schema;
    let node: unknown = null;
    for (let i = 0; i < 100; i++) node = { next: node };
    const value = { event_id: 'rec', blob: { url: 'file:///x' }, extra: node };
    const withRecursive = fakeRegistry({ 8: JSON.stringify(recursive) });
    // Read with the writer schema itself (the reader schema has no such field and would drop it).
    const decoder = { decode: (b: Buffer) => withRecursive.decode(b) };
    const result = await decodeDocumentArrived(wire(8, recursive, value), decoder);
    expect(result).toMatchObject({ ok: false, code: 'value_too_deep', format: 'avro' });
  });

  it('rejects an unknown schema id', async () => {
    const result = await failureOf(wire(99, schema, avroValue));
    expect(result.code).toBe('unknown_schema');
  });

  it('rejects truncated Avro bytes and a short header', async () => {
    const bytes = wire(1, schema, avroValue);
    expect((await failureOf(bytes.subarray(0, bytes.length - 3))).code).toBe('invalid_avro');
    expect((await failureOf(Buffer.from([0, 0, 1]))).code).toBe('invalid_avro');
  });

  it('rejects a writer schema that cannot be read as DocumentArrived', async () => {
    const other = { type: 'record', name: 'Other', fields: [{ name: 'x', type: 'int' }] } as avro.Schema;
    const withOther = fakeRegistry({ 3: JSON.stringify(other) });
    const result = await decodeDocumentArrived(wire(3, other, { x: 1 }), withOther);
    expect(result).toMatchObject({ ok: false, code: 'invalid_avro' });
  });

  it('throws a retriable error when the registry cannot be reached, instead of blaming the data', async () => {
    const unreachable = new Registry({
      url: 'http://registry.invalid',
      fetch: (async () => {
        throw new TypeError('fetch failed');
      }) as typeof fetch,
    });
    const attempt = decodeDocumentArrived(wire(1, schema, avroValue), unreachable);
    await expect(attempt).rejects.toBeInstanceOf(RegistryError);
    await expect(attempt).rejects.toMatchObject({ retriable: true });
  });
});

describe('decodeFeedbackEvent', () => {
  const submission_id = 'sub_0123456789abcdefghijkl';

  it('reads the JSON form', async () => {
    const result = await decodeFeedbackEvent(
      json({ submission_id, feedback: { outcome: 'NOT_FRAUD' } }),
      registry,
    );
    expect(result).toEqual({
      ok: true,
      format: 'json',
      event: { submission_id, feedback: { outcome: 'NOT_FRAUD' }, event_id: null, attributes: {} },
    });
  });

  it('reads the Avro form', async () => {
    const value = {
      submission_id,
      feedback: { outcome: 'FRAUD', comment: 'c', labels: ['l'] },
      event_id: 'e',
      attributes: {},
    };
    const result = await decodeFeedbackEvent(
      wire(2, avroSchemaJson('FeedbackEvent') as avro.Schema, value),
      registry,
    );
    if (!result.ok) throw new Error(result.message);
    expect(result).toMatchObject({ ok: true, event: value });
  });

  it.each([
    [{ feedback: { outcome: 'FRAUD' } }, /^submission_id: /],
    [{ submission_id: 'short', feedback: { outcome: 'FRAUD' } }, /^submission_id: /],
    [{ submission_id, feedback: { outcome: 'MAYBE' } }, /^feedback\.outcome: /],
    [{ submission_id, feedback: { outcome: 'FRAUD', extra: 1 } }, /unknown field feedback\.extra/],
  ])('rejects %j', async (value, message) => {
    const result = await decodeFeedbackEvent(json(value), registry);
    expect(result).toMatchObject({
      ok: false,
      code: 'schema_invalid',
      message: expect.stringMatching(message),
    });
  });
});

describe('event_id characters', () => {
  const schema = avroSchemaJson('DocumentArrived') as avro.Schema;
  const avroEvent = (event_id: string) =>
    wire(1, schema, {
      event_id,
      blob: { url: 'file:///tmp/a.pdf', content_type: null, size_bytes: null, sha256: null },
      query_id: null,
      pipeline_configuration: 'FRAUD_ONLY',
      enable_decision: false,
      submission_characteristics: null,
      attributes: {},
      reprocess: false,
    });

  it.each([
    ['a NUL', 'evt\u0000x', /control characters \(U\+0000 at position 3\)/],
    ['a newline', 'evt\nforged log line', /control characters \(U\+000A/],
    ['DEL', 'evt\u007f', /control characters \(U\+007F/],
    ['a C1 control', 'evt\u0085', /control characters \(U\+0085/],
    ['a lone high surrogate', 'evt\ud800', /lone surrogate \(U\+D800 at position 3\)/],
    ['a lone low surrogate', '\udc00evt', /lone surrogate \(U\+DC00 at position 0\)/],
  ])('refuses %s in JSON input, naming the field, without echoing the id', async (_what, eventId, why) => {
    const result = await failureOf(json({ ...valid, event_id: eventId }));
    expect(result).toMatchObject({ code: 'schema_invalid', event_id: null });
    expect(result.message).toMatch(/^event_id: /);
    expect(result.message).toMatch(why);
  });

  it('refuses control characters in Avro input too', async () => {
    const result = await failureOf(avroEvent('evt\u0001'));
    expect(result).toMatchObject({ code: 'schema_invalid', format: 'avro', event_id: null });
    expect(result.message).toMatch(/^event_id: must not contain control characters \(U\+0001/);
  });

  it('accepts a paired surrogate (an emoji) and other non-ASCII text', async () => {
    const result = await decodeDocumentArrived(json({ ...valid, event_id: 'évt-😀-東京' }), registry);
    expect(result).toMatchObject({ ok: true, event: { event_id: 'évt-😀-東京' } });
    const fromAvro = await decodeDocumentArrived(avroEvent('évt-😀'), registry);
    expect(fromAvro).toMatchObject({ ok: true, event: { event_id: 'évt-😀' } });
  });

  it('refuses them in the optional event_id of a feedback event', async () => {
    const result = await decodeFeedbackEvent(
      json({ submission_id: 'sub_0123456789abcdefghijkl', feedback: { outcome: 'FRAUD' }, event_id: 'a\tb' }),
      registry,
    );
    expect(result).toMatchObject({
      ok: false,
      code: 'schema_invalid',
      message: expect.stringMatching(/^event_id: /),
    });
  });
});
