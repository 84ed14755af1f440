import avro from 'avsc';
import { avroSchemaJson, avroType, type AvroSchemaName } from './avro-schemas.js';
import { backwardIncompatibility } from './compatibility.js';
import { decodeDocumentArrived, type AvroDecoder } from './input.js';

const WITH_TENANT: AvroSchemaName[] = [
  'DocumentArrived',
  'FraudResult',
  'QualityResult',
  'ClassificationResult',
  'DecisionResult',
  'DeadLetter',
];

/** The schema as it was before the tenant field: the same, less that field. */
function withoutTenant(name: AvroSchemaName): avro.Schema {
  const schema = avroSchemaJson(name) as unknown as { fields: Array<{ name: string }> };
  return { ...schema, fields: schema.fields.filter((f) => f.name !== 'tenant') } as unknown as avro.Schema;
}

describe('the tenant field of the event contract', () => {
  it.each(WITH_TENANT)(
    '%s: ["null","string"], default null, compatible with the schema before it both ways',
    (name) => {
      const schema = avroSchemaJson(name) as unknown as {
        fields: Array<{ name: string; type: unknown; default?: unknown }>;
      };
      const field = schema.fields.find((f) => f.name === 'tenant');
      expect(field).toMatchObject({ type: ['null', 'string'], default: null });
      const now = schema as unknown as avro.Schema;
      const before = withoutTenant(name);
      // BACKWARD: a new reader reads what old producers wrote (tenant null); FORWARD: an old reader
      // reads what docstream writes now (the field is skipped).
      expect(backwardIncompatibility(now, before)).toBeNull();
      expect(backwardIncompatibility(before, now)).toBeNull();
    },
  );

  it('an event written by an old producer reads as one without a tenant', () => {
    const old = avro.Type.forSchema(withoutTenant('DocumentArrived'));
    const reader = avroType('DocumentArrived');
    const value = {
      event_id: 'e',
      blob: { url: 's3://b/k', content_type: null, size_bytes: null, sha256: null },
      query_id: null,
      pipeline_configuration: 'FRAUD_ONLY',
      enable_decision: false,
      submission_characteristics: null,
      attributes: {},
      reprocess: false,
    };
    const read = reader.fromBuffer(old.toBuffer(value), reader.createResolver(old)) as { tenant: unknown };
    expect(read.tenant).toBeNull();
  });
});

describe('decodeDocumentArrived and the tenant', () => {
  const decoder: AvroDecoder = { decode: async () => ({}) };
  const event = (extra: Record<string, unknown>) =>
    Buffer.from(JSON.stringify({ event_id: 'e', blob: { url: 's3://b/k' }, ...extra }));

  it('takes a tenant name, and leaves the field out when there is none (as before)', async () => {
    const named = await decodeDocumentArrived(event({ tenant: 'acme' }), decoder);
    expect(named.ok && named.event.tenant).toBe('acme');
    for (const none of [{}, { tenant: null }]) {
      const decoded = await decodeDocumentArrived(event(none), decoder);
      expect(decoded.ok && 'tenant' in decoded.event).toBe(false);
    }
  });

  it('refuses what cannot be a tenant name, naming the field', async () => {
    const decoded = await decodeDocumentArrived(event({ tenant: 'Acme Corp' }), decoder);
    expect(decoded.ok).toBe(false);
    expect(!decoded.ok && [decoded.code, decoded.message]).toEqual([
      'schema_invalid',
      expect.stringMatching(/tenant/),
    ]);
  });
});
