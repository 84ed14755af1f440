/**
 * Property-based fuzzing of the arrival decoder, JSON and Avro (Confluent wire format): any
 * record value ends in an event or a dead-letter reason, never an exception or a hang, and what
 * is accepted keeps the contract's invariants.
 */
import avro from 'avsc';
import fc from 'fast-check';
import { fuzz } from '../fuzz/test-helpers.js';
import { avroSchemaJson, avroSchemaText } from './avro-schemas.js';
import {
  BLOB_SCHEMES,
  decodeDocumentArrived,
  decodeFeedbackEvent,
  EVENT_ID_MAX,
  type InputResult,
} from './input.js';
import { MAX_INPUT_DEPTH } from './json-bounds.js';
import { Registry } from './registry.js';
import { redactSource } from '../connector/outputs/dead-letters.js';

const CODES = [
  'empty_value',
  'invalid_json',
  'invalid_avro',
  'unknown_schema',
  'schema_invalid',
  'characteristics_too_large',
  'value_too_deep',
  'value_too_large',
];

/** A registry answering from a map of schema id to schema text: the real decode path, no server. */
function mapRegistry(schemas: Record<number, string>): Registry {
  const fetchImpl = (async (url: string | URL | Request) => {
    const match = /\/schemas\/ids\/(\d+)$/.exec(String(url));
    const text = match ? schemas[Number(match[1])] : undefined;
    if (text === undefined) return new Response('{"error_code":40403}', { status: 404 });
    return new Response(JSON.stringify({ schema: text }), { status: 200 });
  }) as typeof fetch;
  return new Registry({ url: 'http://registry.invalid', fetch: fetchImpl });
}

const registry = mapRegistry({ 1: avroSchemaText('DocumentArrived'), 2: avroSchemaText('FeedbackEvent') });
const arrivedType = avro.Type.forSchema(avroSchemaJson('DocumentArrived') as avro.Schema);

function expectTyped(result: InputResult<unknown>): void {
  if (result.ok) return;
  expect(CODES).toContain(result.code);
  expect(result.message.length).toBeGreaterThan(0);
  expect(result.event_id === null || typeof result.event_id === 'string').toBe(true);
}

function wire(schemaId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId >>> 0, 1);
  return Buffer.concat([header, payload]);
}

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\u001f', '\u007f', '\u2028', '\ud800', 'a'), maxLength: 20 }),
  fc.constantFrom('', 'x'.repeat(EVENT_ID_MAX), 'x'.repeat(EVENT_ID_MAX + 1)),
);
const blobUrl = fc.oneof(
  text,
  fc.webUrl({ withQueryParameters: true }),
  fc
    .tuple(
      fc.constantFrom('file://', 's3://', 'http://', 'https://', 'ftp://', 'FILE:', 's3:/'),
      fc.string({ maxLength: 30 }),
    )
    .map(([a, b]) => a + b),
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
/** Absent most of the time, else a near-valid or a wrong value: what passes stays common. */
const sometimes = <T>(near: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: near, weight: 2 }, anyJson);
/** Objects shaped like an arrival event, with each field sometimes wrong in type or content. */
const arrival = fc.record({
  event_id: fc.oneof({ arbitrary: fc.string({ minLength: 1, maxLength: 30 }), weight: 6 }, text, anyJson),
  blob: fc.oneof(
    {
      arbitrary: fc.record({
        url: fc.oneof(
          {
            arbitrary: fc.constantFrom('file:///data/a.pdf', 's3://docs/a b.pdf', 'https://h.example/a'),
            weight: 4,
          },
          blobUrl,
          anyJson,
        ),
        content_type: sometimes(text),
        size_bytes: sometimes(fc.oneof(fc.integer(), fc.double())),
        sha256: sometimes(fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{64}$/), text)),
      }),
      weight: 6,
    },
    anyJson,
  ),
  query_id: sometimes(text),
  pipeline_configuration: sometimes(
    fc.constantFrom('FRAUD_ONLY', 'CLASSIFICATION_ONLY', 'QUALITY_ONLY', 'fraud_only'),
  ),
  enable_decision: sometimes(fc.boolean()),
  submission_characteristics: sometimes(fc.dictionary(text, anyJson, { maxKeys: 5 })),
  attributes: sometimes(fc.dictionary(text, text, { maxKeys: 5 })),
  reprocess: sometimes(fc.boolean()),
  extra: sometimes(anyJson),
});

/**
 * Valid DocumentArrived values, to be encoded as Avro and then damaged with any byte value. A
 * damaged count or length may claim far more items than the record holds: the bounded decoding
 * (`avro-bounds.ts`) refuses it before avsc loops over it (this property found the unbounded loop:
 * payload 02651266696c653a2f2f2f6100000000000000 + ffffffffffffffff01 spun for hours).
 */
const ascii = (maxLength: number, minLength = 0) =>
  fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength,
    maxLength,
  });
const validArrival = fc.record({
  event_id: ascii(30, 1),
  blob: fc.record({
    url: fc.constantFrom('file:///data/a.pdf', 's3://docs/in/a.pdf', 'https://blobs.example/a.pdf'),
    content_type: fc.option(ascii(20), { nil: null }),
    size_bytes: fc.option(fc.integer({ min: 0, max: 63 }), { nil: null }),
    sha256: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
  }),
  query_id: fc.option(ascii(30), { nil: null }),
  pipeline_configuration: fc.constantFrom('FRAUD_ONLY', 'CLASSIFICATION_ONLY', 'QUALITY_ONLY'),
  enable_decision: fc.boolean(),
  submission_characteristics: fc.option(
    fc.json({ maxDepth: 2 }).filter((j) => /^[\x20-\x7e]{0,63}$/.test(j)),
    {
      nil: null,
    },
  ),
  attributes: fc.dictionary(ascii(10), ascii(10), { maxKeys: 4 }),
  reprocess: fc.boolean(),
});

type Damage =
  | { kind: 'truncate'; at: number }
  | { kind: 'flip'; at: number; value: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array };
const damage: fc.Arbitrary<Damage[]> = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), value: fc.nat(0xff) }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 10 }),
    }),
  ),
  { minLength: 1, maxLength: 4 },
);

function applyDamage(payload: Buffer, steps: Damage[]): Buffer {
  let out = Buffer.from(payload);
  for (const step of steps) {
    const at = out.length === 0 ? 0 : step.at % out.length;
    if (step.kind === 'truncate') out = out.subarray(0, at);
    else if (step.kind === 'flip' && out.length > 0) out[at] = step.value;
    else if (step.kind === 'insert')
      out = Buffer.concat([out.subarray(0, at), Buffer.from(step.bytes), out.subarray(at)]);
  }
  return out;
}

/**
 * Deep and wide values: nesting of arrays and objects from a few levels to 20,000 (well past the
 * stack of any recursive reader), and objects or arrays of thousands of members, put where an
 * attacker can put them: the characteristics, an unknown field, the attributes, the blob, the ids.
 */
const nesting = fc
  .record({
    depth: fc.oneof(fc.integer({ min: 1, max: 2 * MAX_INPUT_DEPTH }), fc.integer({ min: 1, max: 20_000 })),
    kinds: fc.array(fc.constantFrom('[', '{"k":', '{"submission_characteristics":'), {
      minLength: 1,
      maxLength: 3,
    }),
    leaf: fc.constantFrom('1', '"x"', 'null', '[]', '{}', '"[{"'),
  })
  .map(({ depth, kinds, leaf }) => {
    const opens: string[] = [];
    for (let i = 0; i < depth; i++) opens.push(kinds[i % kinds.length]!);
    const closes = opens.map((o) => (o === '[' ? ']' : '}')).reverse();
    return { depth, text: opens.join('') + leaf + closes.join('') };
  });
const wide = fc
  .record({ count: fc.integer({ min: 1, max: 20_000 }), object: fc.boolean() })
  .map(({ count, object }) => {
    const members = Array.from({ length: count }, (_, i) => (object ? `"m${i}":[${i}]` : `{"m":${i}}`));
    return { depth: 2, text: object ? `{${members.join(',')}}` : `[${members.join(',')}]` };
  });
const PLACES = ['submission_characteristics', 'extra', 'attributes', 'blob', 'event_id', 'feedback'] as const;

function hostile(place: (typeof PLACES)[number], inner: string): string {
  const base =
    '"event_id":"evt-h","submission_id":"sub_0123456789abcdefghijkl","submission_characteristics":{}';
  switch (place) {
    case 'blob':
      return `{${base},"blob":{"url":"file:///a.pdf","x":${inner}}}`;
    case 'attributes':
      return `{${base},"blob":{"url":"file:///a.pdf"},"attributes":{"a":${inner}}}`;
    case 'event_id':
      return `{"event_id":${inner},"blob":{"url":"file:///a.pdf"}}`;
    default:
      return `{${base.replace(/,"submission_characteristics":\{\}/, '')},"blob":{"url":"file:///a.pdf"},"${place}":${inner}}`;
  }
}

describe('arrival decoder (fuzz)', () => {
  it('turns arbitrary bytes into an event or a dead-letter reason', async () => {
    await fuzz(
      'decoder: arbitrary bytes',
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc
            .tuple(fc.constantFrom(0, 1, 2, 3, 0xffffffff), fc.uint8Array({ maxLength: 300 }))
            .map(([id, p]) => wire(id, Buffer.from(p))),
        ),
        async (bytes) => {
          expectTyped(await decodeDocumentArrived(Buffer.from(bytes), registry));
          expectTyped(await decodeFeedbackEvent(Buffer.from(bytes), registry));
        },
      ),
      1000,
    );
  });

  it('validates JSON objects shaped like an arrival event, keeping the contract for what passes', async () => {
    let accepted = 0;
    await fuzz(
      'decoder: near-contract JSON',
      fc.asyncProperty(arrival, async (value) => {
        const result = await decodeDocumentArrived(Buffer.from(JSON.stringify(value)), registry, {
          maxCharacteristicsBytes: 2048,
        });
        expectTyped(result);
        if (!result.ok) return;
        accepted++;
        const { event } = result;
        expect(event.event_id.length).toBeGreaterThan(0);
        expect(event.event_id.length).toBeLessThanOrEqual(EVENT_ID_MAX);
        expect(BLOB_SCHEMES).toContain(new URL(event.blob.url).protocol);
        expect(event.blob.sha256 === null || /^[0-9a-f]{64}$/.test(event.blob.sha256)).toBe(true);
      }),
      1000,
    );
    // Some generated events must pass, or the invariants above were never exercised.
    expect(accepted).toBeGreaterThan(0);
  });

  it('turns deep and wide values anywhere in an event into an event or a reason, dead letters included', async () => {
    let tooDeep = 0;
    await fuzz(
      'decoder: deep and wide values',
      fc.asyncProperty(fc.oneof(nesting, wide), fc.constantFrom(...PLACES), async (inner, place) => {
        const bytes = Buffer.from(hostile(place, inner.text));
        const arrived = await decodeDocumentArrived(bytes, registry);
        const feedback = await decodeFeedbackEvent(bytes, registry);
        expectTyped(arrived);
        expectTyped(feedback);
        // One level for the event, one for the field that holds it (two for blob and attributes).
        const depth = inner.depth + (place === 'blob' || place === 'attributes' ? 2 : 1);
        if (depth > MAX_INPUT_DEPTH) {
          tooDeep++;
          expect(arrived).toMatchObject({ ok: false, code: 'value_too_deep' });
          expect(feedback).toMatchObject({ ok: false, code: 'value_too_deep' });
        }
        // The dead letter's copy of the value is made safe without recursing into it either.
        const source = { topic: 't', partition: 0, offset: '0', key: null, value: bytes, traceparent: null };
        expect(() => redactSource(source, ['attributes.a', 'blob.x'])).not.toThrow();
        // Wrapped in Avro (the characteristics are a JSON string there), the same holds.
        if (place === 'submission_characteristics') {
          const payload = arrivedType.toBuffer({
            event_id: 'evt-h',
            blob: { url: 'file:///a.pdf', content_type: null, size_bytes: null, sha256: null },
            query_id: null,
            pipeline_configuration: 'FRAUD_ONLY',
            enable_decision: false,
            submission_characteristics: inner.text,
            attributes: {},
            reprocess: false,
          });
          const avroResult = await decodeDocumentArrived(wire(1, payload), registry);
          expectTyped(avroResult);
          // The characteristics' size is checked first: a long deep text may be refused for its size.
          if (inner.depth > MAX_INPUT_DEPTH && !avroResult.ok)
            expect(['value_too_deep', 'characteristics_too_large']).toContain(avroResult.code);
          else if (inner.depth > MAX_INPUT_DEPTH) throw new Error('a too deep value was accepted from Avro');
        }
      }),
      200,
    );
    // The deep side was exercised, not only shallow values.
    expect(tooDeep).toBeGreaterThan(0);
  });

  it('reads damaged Avro records (truncated, flipped, padded) to an event or a dead-letter reason', async () => {
    await fuzz(
      'decoder: damaged Avro in the wire format',
      fc.asyncProperty(validArrival, damage, fc.constantFrom(1, 2), async (value, steps, schemaId) => {
        const payload = arrivedType.toBuffer({
          ...value,
          submission_characteristics: value.submission_characteristics,
        });
        const result = await decodeDocumentArrived(wire(schemaId, applyDamage(payload, steps)), registry);
        expectTyped(result);
      }),
      500,
    );
  });

  it('refuses the damaged map count the fuzzer found (2^62 entries in a 28-byte record) at once', async () => {
    const payload = Buffer.from('02651266696c653a2f2f2f6100000000000000' + 'ffffffffffffffff01', 'hex');
    const started = process.hrtime.bigint();
    const result = await decodeDocumentArrived(wire(1, payload), registry);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.code).toBe('invalid_avro');
    // Not a timing assertion: the unbounded decoder never returned; report how long this took.
    process.stderr.write(
      `damaged map count refused in ${Number(process.hrtime.bigint() - started) / 1e6} ms\n`,
    );
  });
});
