import avro from 'avsc';
import {
  avroSchemaJson,
  avroSchemaText,
  avroType,
  AVRO_SCHEMA_NAMES,
  type AvroSchemaName,
} from './avro-schemas.js';
import { backwardIncompatibility } from './compatibility.js';
import type {
  ClassificationResultValue,
  DeadLetterValue,
  DecisionResultValue,
  FeedbackEventValue,
  FraudResultValue,
  QualityResultValue,
} from './types.js';

const envelope = {
  submission_id: 'sub_0123456789abcdefghijkl',
  event_id: 'evt-1',
  query_id: 'q-1',
  attributes: { tenant: 'acme' },
  status: 'SUCCESS',
  produced_at: 1_763_000_000_000,
  message: null,
  tenant: null,
};

const indicator = {
  indicator_id: 'ind-1',
  type: 'RISK',
  category: 'edit',
  title: 'Edited text',
  description: 'Text was edited after creation',
  origin: 'fraud',
  metadata_json: JSON.stringify({ type: 'DataOnly', column_names: ['a'], data: [['1']] }),
  indicator_attributes: {
    type: 'SerialFraudIndicatorAttributes',
    serial_fraud_cluster_id: 'c-1',
    cluster_submission_ids_sample: ['s1'],
    cluster_query_ids_sample: ['q1'],
    indicator_id: 'ind-1',
  },
};

const sampleMetadata = {
  producer: 'pdf-lib',
  creator: null,
  creation_date: null,
  mod_date: null,
  author: 'A',
  title: null,
  keywords: null,
  subject: null,
};

const fraud: FraudResultValue = {
  ...envelope,
  analysis_time: '2026-01-01T00:00:00Z',
  file_type: 'pdf',
  mime_type: 'application/pdf',
  deployment_version: '1.2.3',
  sha256: 'a'.repeat(64),
  filtered_parsed_pages: [],
  num_pages: 2,
  document_tags: ['PDF', 'DIGITAL'],
  score: 'WARNING',
  sample_metadata: sampleMetadata,
  indicators: [indicator],
  report_url: null,
  response_json: '{"status":"SUCCESS"}',
};

const samples: Record<AvroSchemaName, unknown> = {
  DocumentArrived: {
    event_id: 'evt-1',
    blob: { url: 's3://bucket/key.pdf', content_type: null, size_bytes: 12, sha256: null },
    query_id: null,
    pipeline_configuration: 'QUALITY_ONLY',
    enable_decision: true,
    submission_characteristics: '{"customer_case_id":"c"}',
    attributes: {},
    reprocess: false,
    tenant: 'acme',
  },
  FeedbackEvent: {
    submission_id: envelope.submission_id,
    feedback: { outcome: 'FRAUD', comment: null, labels: ['x'] },
    event_id: null,
    attributes: {},
  } satisfies FeedbackEventValue,
  FraudResult: fraud,
  QualityResult: {
    ...envelope,
    analysis_time: null,
    file_type: null,
    mime_type: null,
    deployment_version: null,
    sha256: null,
    score: 'LOW_QUALITY',
    sample_metadata: null,
    indicators: [{ ...indicator, origin: 'quality', indicator_attributes: null, metadata_json: null }],
    response_json: '{}',
  } satisfies QualityResultValue,
  ClassificationResult: {
    ...envelope,
    status: 'PIPELINE_FAILED',
    message: 'failed',
    document_type: null,
    confidence: null,
    analysis_time: null,
    deployment_version: null,
    sha256: null,
    response_json: '{"status":"PIPELINE_FAILED"}',
  } satisfies ClassificationResultValue,
  DecisionResult: {
    ...envelope,
    decision: 'MANUAL_REVIEW',
    adaptive_decision_version: 'v3',
    reason: { fraud: { value: 'WARNING', label: 'Fraud score' } },
    decision_inputs_json: '{"fraud":{"url":"/x","data":null}}',
    source: 'webhook',
    response_json: '{}',
  } satisfies DecisionResultValue,
  DeadLetter: {
    key: Buffer.from('k'),
    value: Buffer.from([1, 2, 3]),
    source_topic: 'documents.arrived',
    source_partition: 3,
    source_offset: 2 ** 40,
    event_id: null,
    submission_id: null,
    stage: 'decode',
    error_code: 'invalid_json',
    message: 'the value is not valid JSON',
    http_status: null,
    attempts: 1,
    failed_at: 1_763_000_000_000,
    attributes: {},
    tenant: null,
  } satisfies DeadLetterValue,
};

type Named = {
  type?: unknown;
  name?: string;
  doc?: unknown;
  fields?: Named[];
  items?: unknown;
  values?: unknown;
};

function undocumented(schema: unknown, path: string, out: string[]): string[] {
  if (Array.isArray(schema)) schema.forEach((branch) => undocumented(branch, path, out));
  if (typeof schema !== 'object' || schema === null) return out;
  const node = schema as Named;
  if (node.type === 'record' || node.type === 'enum') {
    if (typeof node.doc !== 'string') out.push(`${path}${node.name}`);
  }
  for (const field of node.fields ?? []) {
    if (typeof field.doc !== 'string' || field.doc.length === 0)
      out.push(`${path}${node.name}.${field.name}`);
    undocumented(field.type, `${path}${node.name}.`, out);
  }
  undocumented(node.items, path, out);
  undocumented(node.values, path, out);
  return out;
}

describe('Avro schemas of the event contract', () => {
  it.each(AVRO_SCHEMA_NAMES)('%s parses, lives in io.docstream.v1 and documents every field', (name) => {
    const schema = avroSchemaJson(name);
    expect(schema.namespace).toBe('io.docstream.v1');
    expect(avroType(name).name).toBe(`io.docstream.v1.${name}`);
    expect(undocumented(schema, '', [])).toEqual([]);
  });

  it.each(AVRO_SCHEMA_NAMES)('%s round-trips a sample value', (name) => {
    const type = avroType(name);
    const errors: string[] = [];
    const valid = type.isValid(samples[name], { errorHook: (path) => errors.push(path.join('.')) });
    expect(errors).toEqual([]);
    expect(valid).toBe(true);
    expect(type.fromBuffer(type.toBuffer(samples[name]))).toEqual(samples[name]);
  });

  it.each(AVRO_SCHEMA_NAMES)('%s gives every optional field a default, so it can evolve', (name) => {
    // Reading a value written with only the required fields must succeed: every other field has a default.
    const schema = avroSchemaJson(name) as unknown as { fields: Array<{ default?: unknown }> };
    const minimal = { ...schema, fields: schema.fields.filter((field) => field.default === undefined) };
    expect(backwardIncompatibility(schema as avro.Schema, minimal as avro.Schema)).toBeNull();
  });

  it('keeps the text of each file, defaults and docs included, for registration', () => {
    expect(avroSchemaText('QualityResult')).toContain('"default": "UNKNOWN"');
  });

  it('maps an enum symbol unknown to the reader onto the enum default', () => {
    const newer = avroSchemaJson('QualityResult') as unknown as {
      fields: Array<{ name: string; type: unknown }>;
    };
    const score = newer.fields.find((field) => field.name === 'score')!;
    const [nullType, scoreEnum] = score.type as [string, { symbols: string[] }];
    score.type = [nullType, { ...scoreEnum, symbols: [...scoreEnum.symbols, 'ARCHIVED'] }];
    const writer = avro.Type.forSchema(newer as unknown as avro.Schema);
    const reader = avroType('QualityResult');
    const bytes = writer.toBuffer({ ...(samples.QualityResult as object), score: 'ARCHIVED' });
    const read = reader.fromBuffer(bytes, reader.createResolver(writer)) as QualityResultValue;
    expect(read.score).toBe('UNKNOWN');
  });
});

describe('backwardIncompatibility', () => {
  const v1 = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'string' }] } as avro.Schema;
  it('accepts a new field with a default', () => {
    const v2 = {
      type: 'record',
      name: 'R',
      fields: [
        { name: 'a', type: 'string' },
        { name: 'b', type: ['null', 'string'], default: null },
      ],
    } as avro.Schema;
    expect(backwardIncompatibility(v2, v1)).toBeNull();
  });
  it('names a new field without a default', () => {
    const v2 = {
      type: 'record',
      name: 'R',
      fields: [
        { name: 'a', type: 'string' },
        { name: 'b', type: 'int' },
      ],
    } as avro.Schema;
    expect(backwardIncompatibility(v2, v1)).toMatch(/b/);
  });
});
