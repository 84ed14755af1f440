import { avroType } from './avro-schemas.js';
import { fitDeadLetter } from './dead-letter-fit.js';
import type { DeadLetterValue } from './types.js';

const type = avroType('DeadLetter');
const size = (deadLetter: DeadLetterValue) => type.toBuffer(deadLetter).length;

const deadLetter = (value: Buffer, key = Buffer.from('k')): DeadLetterValue => ({
  key,
  value,
  source_topic: 'documents.arrived',
  source_partition: 2,
  source_offset: 4711,
  event_id: 'evt-1',
  submission_id: null,
  stage: 'publish',
  error_code: 'message_too_large',
  message: 'the state record exceeds the topic limit',
  http_status: null,
  attempts: 1,
  failed_at: 1,
  attributes: { big: 'x'.repeat(300) },
});

describe('fitDeadLetter', () => {
  it('leaves a dead letter that fits alone', () => {
    const small = deadLetter(Buffer.from('{}'));
    expect(fitDeadLetter(small, 10_000, size)).toEqual({ deadLetter: small, cut: null });
  });

  it('cuts the original value to fit, keeps its beginning and points at the original', () => {
    const original = Buffer.alloc(700_000, 'a');
    const fitted = fitDeadLetter(deadLetter(original), 100_000, size);
    expect(fitted).not.toBeNull();
    expect(size(fitted!.deadLetter)).toBeLessThanOrEqual(100_000);
    expect(fitted!.deadLetter.value!.length).toBeGreaterThan(90_000);
    expect(fitted!.deadLetter.value!.equals(original.subarray(0, fitted!.deadLetter.value!.length))).toBe(
      true,
    );
    expect(fitted!.cut).toEqual({ valueBytes: 700_000, keyBytes: 1 });
    expect(fitted!.deadLetter.message).toMatch(
      /value 700000 → \d+ bytes.*the original is documents\.arrived\/2@4711/,
    );
    expect(fitted!.deadLetter).toMatchObject({
      source_topic: 'documents.arrived',
      source_partition: 2,
      source_offset: 4711,
    });
  });

  it('gives up the key, then the attributes, when the value alone is not enough', () => {
    const original = deadLetter(Buffer.alloc(10), Buffer.alloc(5000));
    const keyCut = fitDeadLetter(original, 600, size);
    expect(size(keyCut!.deadLetter)).toBeLessThanOrEqual(600);
    expect(keyCut!.deadLetter.key).toEqual(Buffer.alloc(0));
    expect(keyCut!.deadLetter.attributes).toEqual(original.attributes);
    const bare = { ...original, key: Buffer.alloc(0), value: Buffer.alloc(0), attributes: {} };
    const limit = size({ ...bare, message: keyCut!.deadLetter.message }) + 5;
    const attributesCut = fitDeadLetter(original, limit, size);
    expect(size(attributesCut!.deadLetter)).toBeLessThanOrEqual(limit);
    expect(attributesCut!.deadLetter.attributes).toEqual({});
  });

  it('returns null when even the bare dead letter does not fit', () => {
    expect(fitDeadLetter(deadLetter(Buffer.alloc(10)), 50, size)).toBeNull();
  });
});
