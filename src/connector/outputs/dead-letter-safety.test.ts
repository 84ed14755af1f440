import { MessageTooLargeError } from '../../kafka/errors.js';
import type { OutgoingMessage } from '../../kafka/producer.js';
import { messageSize } from '../../kafka/message-size.js';
import type { Logger } from '../../observability/logger.js';
import { avroType } from '../../serde/avro-schemas.js';
import { redactAttributes, redactSource } from './dead-letters.js';
import { KafkaOutput, type DeadLetterOptions } from './output.js';
import type { DeadLetter, SourceRecord } from '../types.js';

const MARKER = 'PERSONAL-MARKER-7f3a';
const topics = { fraud: 'f', quality: 'q', classification: 'c', decision: 'd', dlq: 'dlq' };

function source(value: Buffer | null): SourceRecord {
  return { topic: 'in', partition: 3, offset: '41', key: Buffer.from('k'), value, traceparent: null };
}

const event = {
  event_id: 'evt-1',
  blob: { url: 'file:///tmp/a.pdf' },
  submission_characteristics: { applicant: { name: MARKER } },
  attributes: { tenant: 'acme', email: `${MARKER}@example.com` },
};

function deadLetter(value: Buffer | null, extra: Partial<DeadLetter> = {}): DeadLetter {
  return {
    source: source(value),
    event_id: 'evt-1',
    submission_id: null,
    stage: 'blob',
    error_code: 'blob_not_found',
    message: 'no such blob',
    http_status: null,
    attempts: 1,
    attributes: { tenant: 'acme' },
    ...extra,
  };
}

function output(options: DeadLetterOptions, send?: (m: OutgoingMessage) => Promise<void>) {
  const sent: OutgoingMessage[] = [];
  const out = new KafkaOutput({
    sender: {
      send: async (_topic, message) => {
        if (send) await send(message);
        sent.push(message);
      },
    },
    registry: { encode: (_topic, value) => avroType('DeadLetter').toBuffer(value) },
    topics,
    now: () => 1,
    deadLetters: options,
  });
  return { out, sent };
}

const decoded = (m: OutgoingMessage) =>
  avroType('DeadLetter').fromBuffer(m.value as Buffer) as { value: Buffer | null; message: string };

describe('redactSource', () => {
  it('removes submission_characteristics and configured dotted fields from a JSON value', () => {
    const { source: s, redaction } = redactSource(source(Buffer.from(JSON.stringify(event))), [
      'attributes.email',
      'blob.url',
    ]);
    expect(redaction).toBe('fields_removed');
    const kept = JSON.parse(s.value!.toString('utf8')) as Record<string, unknown>;
    expect(kept).toEqual({ event_id: 'evt-1', blob: {}, attributes: { tenant: 'acme' } });
    expect(s.value!.toString('latin1')).not.toContain(MARKER);
    expect([s.topic, s.partition, s.offset, s.key?.toString()]).toEqual(['in', 3, '41', 'k']);
  });

  it('keeps a JSON value without redacted fields byte for byte', () => {
    const value = Buffer.from('{ "event_id": "e",  "blob": {} }');
    const r = redactSource(source(value));
    expect(r.redaction).toBeNull();
    expect(r.source.value).toBe(value);
  });

  it('withholds an Avro value (magic byte 0): it cannot be read without the registry', () => {
    const r = redactSource(source(Buffer.from([0, 0, 0, 0, 7, 2, 4])));
    expect(r).toMatchObject({ redaction: 'value_withheld', source: { value: null, offset: '41' } });
  });

  it('withholds unreadable text that names a redacted field, keeps other broken text', () => {
    const broken = Buffer.from(`{"submission_characteristics": {"name": "${MARKER}"`);
    expect(redactSource(source(broken)).redaction).toBe('value_withheld');
    const other = Buffer.from('{"event_id": "e"');
    expect(redactSource(source(other))).toMatchObject({ redaction: null, source: { value: other } });
  });

  it('reads a value nested too deep as unreadable text instead of overflowing the stack', () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    const withCharacteristics = Buffer.from(`{"submission_characteristics":1,"x":${deep}}`);
    expect(redactSource(source(withCharacteristics))).toMatchObject({
      redaction: 'value_withheld',
      source: { value: null },
    });
    const plain = Buffer.from(`{"event_id":"e","x":${deep}}`);
    expect(redactSource(source(plain))).toMatchObject({ redaction: null, source: { value: plain } });
  });

  it('removes attributes named attributes.<name> from the dead letter', () => {
    expect(redactAttributes({ tenant: 'a', email: 'x' }, ['attributes.email', 'blob.url'])).toEqual({
      tenant: 'a',
    });
  });
});

describe('KafkaOutput.deadLetter', () => {
  it('never writes characteristics or configured fields, and points at the original', async () => {
    const { out, sent } = output({ redactFields: ['attributes.email'] });
    const value = Buffer.from(JSON.stringify(event));
    await out.deadLetter(deadLetter(value, { attributes: { tenant: 'acme', email: MARKER } }));
    expect(sent).toHaveLength(1);
    expect((sent[0]!.value as Buffer).toString('latin1')).not.toContain(MARKER);
    const d = decoded(sent[0]!);
    expect(d.message).toContain('personal fields removed; the original is in/3@41');
    expect(JSON.parse(d.value!.toString('utf8'))).toMatchObject({ event_id: 'evt-1' });
  });

  it('cuts a dead letter to fit the topic limit, keeping the pointer', async () => {
    const big = Buffer.from(JSON.stringify({ event_id: 'e', pad: 'x'.repeat(50_000) }));
    const { out, sent } = output({ limitFor: () => 10_000 });
    await out.deadLetter(deadLetter(big));
    expect(sent).toHaveLength(1);
    expect(messageSize(sent[0]!)).toBeLessThanOrEqual(10_000);
    expect(decoded(sent[0]!).message).toContain('the original is in/3@41');
  });

  it('refits with the broker limit when the broker refuses the dead letter', async () => {
    const big = Buffer.from(JSON.stringify({ event_id: 'e', pad: 'x'.repeat(50_000) }));
    const brokerLimit = 8_000;
    const { out, sent } = output({ limitFor: () => 100_000 }, async (m) => {
      const size = messageSize(m);
      if (size > brokerLimit)
        throw new MessageTooLargeError({ topic: 'dlq', size, limit: 100_000, fromBroker: true });
    });
    await out.deadLetter(deadLetter(big));
    expect(sent).toHaveLength(1);
    expect(messageSize(sent[0]!)).toBeLessThanOrEqual(brokerLimit);
  });

  it('logs and counts a dead letter that cannot fit at all, and resolves so the partition moves on', async () => {
    const unwritable: DeadLetter[] = [];
    const { out, sent } = output({ limitFor: () => 50, onUnwritable: (l) => unwritable.push(l) });
    await expect(out.deadLetter(deadLetter(Buffer.from('{}')))).resolves.toBeUndefined();
    expect(sent).toHaveLength(0);
    expect(unwritable.map((l) => l.error_code)).toEqual(['blob_not_found']);
  });

  it('writes a minimal dead letter when the dead letter cannot be built whole, so the record still ends', async () => {
    const errors: string[] = [];
    const logger = { error: (_o: unknown, msg: string) => errors.push(msg) } as unknown as Logger;
    const { out, sent } = output({ logger });
    // Attributes that are not strings: the dead letter's encoding refuses them.
    const odd = deadLetter(Buffer.from(JSON.stringify(event)), {
      attributes: { tenant: 7 } as unknown as Record<string, string>,
    });
    await expect(out.deadLetter(odd)).resolves.toBeUndefined();
    expect(sent).toHaveLength(1);
    const d = avroType('DeadLetter').fromBuffer(sent[0]!.value as Buffer) as Record<string, unknown>;
    expect(d).toMatchObject({
      value: null,
      key: null,
      attributes: {},
      event_id: 'evt-1',
      stage: 'blob',
      error_code: 'blob_not_found',
      source_topic: 'in',
      source_partition: 3,
      source_offset: 41,
    });
    expect(d.message).toMatch(
      /^no such blob \[the dead letter could not be written whole \(.+\); the original is in\/3@41\]$/,
    );
    expect(errors).toEqual(['dead letter could not be built whole; writing a minimal one']);
  });

  it('still rejects when Kafka cannot be reached for the minimal dead letter', async () => {
    const { out } = output({}, async () => {
      throw new Error('broker down');
    });
    const odd = deadLetter(null, { attributes: { tenant: 7 } as unknown as Record<string, string> });
    await expect(out.deadLetter(odd)).rejects.toThrow('broker down');
  });

  it('rejects when Kafka cannot be reached (the record is retried)', async () => {
    const { out } = output({}, async () => {
      throw new Error('broker down');
    });
    await expect(out.deadLetter(deadLetter(Buffer.from('{}')))).rejects.toThrow('broker down');
  });
});
