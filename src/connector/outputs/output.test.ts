import { avroType, type AvroSchemaName } from '../../serde/avro-schemas.js';
import type { OutgoingMessage } from '../../kafka/producer.js';
import { classificationValue, decisionValue, fraudValue, qualityValue } from './mapping.js';
import { KafkaOutput } from './output.js';
import type { DeadLetter, DocumentIdentity } from '../types.js';

const doc: DocumentIdentity = {
  submission_id: 'sub-1',
  event_id: 'evt-1',
  query_id: 'q-1',
  attributes: { tenant: 'acme' },
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};
const NOW = 1_763_000_000_000;

const fraudBody = {
  status: 'SUCCESS',
  message: null,
  analysis_time: '2025-01-01T00:00:00Z',
  file_type: 'pdf',
  mime_type: 'application/pdf',
  sha256: 'a'.repeat(64),
  num_pages: 2,
  filtered_parsed_pages: [1, 'x', 2],
  document_tags: ['PDF', 'BRAND_NEW_TAG'],
  score: 'HIGH_RISK',
  indicators: [
    {
      indicator_id: 'i-1',
      type: 'RISK',
      category: 'c',
      title: 't',
      description: 'd',
      origin: 'fraud',
      metadata: { k: 1 },
      indicator_attributes: { type: 'SERIAL', cluster_submission_ids_sample: ['s', 3] },
    },
  ],
  sample_metadata: { producer: 'p', title: 7 },
  unknown_field: { kept: true },
};

describe('mapping API results to events', () => {
  it('types the known fields of a fraud result, keeps the whole body, and valid Avro', () => {
    const v = fraudValue(doc, fraudBody, { report_url: 'http://r' }, NOW);
    expect(v).toMatchObject({
      submission_id: 'sub-1',
      event_id: 'evt-1',
      query_id: 'q-1',
      attributes: { tenant: 'acme' },
      status: 'SUCCESS',
      produced_at: NOW,
      file_type: 'pdf',
      num_pages: 2,
      filtered_parsed_pages: [1, 2],
      document_tags: ['PDF', 'UNKNOWN'],
      score: 'HIGH_RISK',
      report_url: 'http://r',
    });
    expect(v.indicators?.[0]).toMatchObject({
      metadata_json: '{"k":1}',
      indicator_attributes: {
        type: 'SERIAL',
        serial_fraud_cluster_id: '',
        cluster_submission_ids_sample: ['s'],
      },
    });
    expect(v.sample_metadata).toMatchObject({ producer: 'p', title: null });
    expect(JSON.parse(v.response_json)).toEqual(fraudBody);
    expect(avroType('FraudResult').isValid(v)).toBe(true);
  });

  it('maps a value the schema does not know onto its unknown symbol, and a missing status to UNKNOWN', () => {
    const v = qualityValue(doc, { score: 'SPARKLING', file_type: 'video' }, NOW);
    expect([v.score, v.file_type, v.status, v.indicators]).toEqual(['UNKNOWN', 'unknown', 'UNKNOWN', null]);
    expect(avroType('QualityResult').isValid(v)).toBe(true);
  });

  it('publishes a non-success result with its message', () => {
    const v = classificationValue(doc, { status: 'FAILED', message: 'unreadable', confidence: 'high' }, NOW);
    expect(v).toMatchObject({
      status: 'FAILED',
      message: 'unreadable',
      confidence: null,
      document_type: null,
    });
    expect(avroType('ClassificationResult').isValid(v)).toBe(true);
  });

  it('maps a decision, its reasons and where it came from', () => {
    const body = {
      status: 'SUCCESS',
      decision: 'REVIEW',
      adaptive_decision_version: '3',
      reason: { fraud: { value: 'HIGH_RISK', label: 'High risk' }, odd: 5 },
      decision_inputs: { a: 1 },
    };
    const v = decisionValue(doc, body, { source: 'webhook' }, NOW);
    expect(v).toMatchObject({
      decision: 'REVIEW',
      reason: { fraud: { value: 'HIGH_RISK', label: 'High risk' }, odd: { value: '', label: '' } },
      decision_inputs_json: '{"a":1}',
      source: 'webhook',
    });
    expect(decisionValue(doc, {}, {}, NOW)).toMatchObject({
      source: 'poll',
      reason: null,
      decision_inputs_json: null,
    });
    expect(avroType('DecisionResult').isValid(v)).toBe(true);
  });
});

describe('KafkaOutput', () => {
  const topics = {
    fraud: 'o.fraud',
    quality: 'o.quality',
    classification: 'o.class',
    decision: 'o.decision',
    dlq: 'o.dlq',
  };
  const schemaOf: Record<string, AvroSchemaName> = {
    'o.fraud': 'FraudResult',
    'o.quality': 'QualityResult',
    'o.class': 'ClassificationResult',
    'o.decision': 'DecisionResult',
    'o.dlq': 'DeadLetter',
  };
  function output() {
    const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
    const out = new KafkaOutput({
      sender: {
        send: async (topic, message) => {
          sent.push({ topic, message });
        },
      },
      // Encodes with the topic's schema, so a value the schema refuses fails the test.
      registry: { encode: (topic, value) => avroType(schemaOf[topic]!).toBuffer(value) },
      topics,
      now: () => NOW,
    });
    return { out, sent };
  }

  it('sends each result to its topic, keyed by submission id, with event id and traceparent headers', async () => {
    const { out, sent } = output();
    await out.publishResult('quality', doc, { status: 'SUCCESS', score: 'HIGH_QUALITY' });
    await out.publishResult(
      'decision',
      { ...doc, traceparent: null },
      { decision: 'ACCEPT' },
      { source: 'poll' },
    );
    expect(sent.map((s) => [s.topic, s.message.key, s.message.headers])).toEqual([
      ['o.quality', 'sub-1', { event_id: 'evt-1', traceparent: doc.traceparent }],
      ['o.decision', 'sub-1', { event_id: 'evt-1' }],
    ]);
    const quality = avroType('QualityResult').fromBuffer(sent[0]!.message.value as Buffer) as {
      score: string;
      produced_at: number;
    };
    expect([quality.score, quality.produced_at]).toEqual(['HIGH_QUALITY', NOW]);
  });

  it('sends a dead letter with the original bytes, keyed by submission id, else event id', async () => {
    const { out, sent } = output();
    const deadLetter: DeadLetter = {
      source: {
        topic: 'in',
        partition: 2,
        offset: '17',
        key: Buffer.from('k'),
        value: Buffer.from('{'),
        traceparent: 'tp',
      },
      event_id: 'evt-9',
      submission_id: null,
      stage: 'decode',
      error_code: 'invalid_json',
      message: 'the value is not valid JSON',
      http_status: null,
      attempts: 1,
      attributes: {},
    };
    await out.deadLetter(deadLetter);
    await out.deadLetter({ ...deadLetter, source: null, event_id: null, submission_id: 'sub-3' });
    expect(sent.map((s) => [s.topic, s.message.key, s.message.headers])).toEqual([
      ['o.dlq', 'evt-9', { event_id: 'evt-9', traceparent: 'tp' }],
      ['o.dlq', 'sub-3', {}],
    ]);
    const decoded = avroType('DeadLetter').fromBuffer(sent[0]!.message.value as Buffer) as Record<
      string,
      unknown
    >;
    expect(decoded).toMatchObject({
      key: Buffer.from('k'),
      value: Buffer.from('{'),
      source_topic: 'in',
      source_partition: 2,
      source_offset: 17,
      stage: 'decode',
      error_code: 'invalid_json',
      failed_at: NOW,
    });
    const orphan = avroType('DeadLetter').fromBuffer(sent[1]!.message.value as Buffer) as Record<
      string,
      unknown
    >;
    expect(orphan).toMatchObject({ source_topic: '', source_partition: -1, source_offset: -1, key: null });
  });
});
