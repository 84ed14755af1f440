/**
 * The serde layer against the real Apicurio registry and Kafka: registration with an explicit
 * compatibility level, and register → encode → produce → consume → decode for every output schema.
 */
import { jest } from '@jest/globals';
import registryPackage from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import type { KafkaAdmin, KafkaConsumer, KafkaProducer, IncomingMessage } from '../../src/kafka/index.js';
import { avroSchemaJson, avroSchemaText, type AvroSchemaName } from '../../src/serde/avro-schemas.js';
import { decodeDocumentArrived } from '../../src/serde/input.js';
import { Registry, RegistryError, RegistryUnavailableError, valueSubject } from '../../src/serde/registry.js';
import {
  collectingConsumer,
  kafkaClient,
  REGISTRY_URL,
  registryCall,
  uniqueName,
  waitFor,
} from './helpers.js';

// The integration project's testTimeout is not applied per project by jest; set it here.
jest.setTimeout(60_000);

const envelope = {
  submission_id: 'sub_0123456789abcdefghijkl',
  event_id: 'evt-1',
  query_id: null,
  attributes: { tenant: 'acme' },
  status: 'SUCCESS',
  produced_at: Date.now(),
  message: null,
  // The event named no tenant: the deployment's default credentials.
  tenant: null,
};

const outputs: Array<[AvroSchemaName, Record<string, unknown>]> = [
  [
    'FraudResult',
    {
      ...envelope,
      analysis_time: '2026-01-01T00:00:00Z',
      file_type: 'pdf',
      mime_type: 'application/pdf',
      deployment_version: '1',
      sha256: 'a'.repeat(64),
      filtered_parsed_pages: [1, 2],
      num_pages: 3,
      document_tags: ['PDF', 'SCAN'],
      score: 'HIGH_RISK',
      sample_metadata: {
        producer: 'x',
        creator: null,
        creation_date: null,
        mod_date: null,
        author: null,
        title: null,
        keywords: null,
        subject: null,
      },
      indicators: [
        {
          indicator_id: 'i',
          type: 'RISK',
          category: 'c',
          title: 't',
          description: 'd',
          origin: 'fraud',
          metadata_json: null,
          indicator_attributes: null,
        },
      ],
      report_url: 'https://reports.example.com/r.pdf',
      response_json: '{"status":"SUCCESS"}',
    },
  ],
  [
    'QualityResult',
    {
      ...envelope,
      analysis_time: null,
      file_type: 'image',
      mime_type: null,
      deployment_version: null,
      sha256: null,
      score: 'HIGH_QUALITY',
      sample_metadata: null,
      indicators: [],
      response_json: '{}',
    },
  ],
  [
    'ClassificationResult',
    {
      ...envelope,
      document_type: 'invoice',
      confidence: 0.93,
      analysis_time: null,
      deployment_version: null,
      sha256: null,
      response_json: '{}',
    },
  ],
  [
    'DecisionResult',
    {
      ...envelope,
      decision: 'APPROVED',
      adaptive_decision_version: '7',
      reason: { fraud: { value: 'NORMAL', label: 'Fraud' } },
      decision_inputs_json: '{}',
      source: 'poll',
      response_json: '{}',
    },
  ],
  [
    'DeadLetter',
    {
      key: Buffer.from('key'),
      value: Buffer.from('{"event_id":'),
      source_topic: 'documents.arrived',
      source_partition: 0,
      source_offset: 12,
      event_id: null,
      submission_id: null,
      stage: 'decode',
      error_code: 'invalid_json',
      message: 'the value is not valid JSON',
      http_status: null,
      attempts: 1,
      failed_at: Date.now(),
      attributes: {},
      tenant: null,
    },
  ],
];

const prefix = uniqueName('serde');
const topicOf = (name: string) => `${prefix}-${name}`;
const client = kafkaClient();
let admin: KafkaAdmin;
let producer: KafkaProducer;
let consumer: KafkaConsumer;
let received: IncomingMessage[];

beforeAll(async () => {
  admin = client.admin();
  await admin.connect();
  const topics = [...outputs.map(([name]) => topicOf(name)), topicOf('arrived')];
  await admin.ensureTopics(topics.map((topic) => ({ topic, numPartitions: 1 })));
  producer = client.producer();
  await producer.connect();
  ({ consumer, messages: received } = await collectingConsumer(client, topics));
});

afterAll(async () => {
  await consumer?.disconnect();
  await producer?.disconnect();
  await admin?.deleteTopics([...outputs.map(([name]) => topicOf(name)), topicOf('arrived')]);
  await admin?.disconnect();
});

describe('output schemas through Apicurio and Kafka', () => {
  it.each(outputs)(
    '%s: registered with BACKWARD, encoded, produced, consumed and decoded',
    async (name, value) => {
      const registry = new Registry({ url: REGISTRY_URL });
      const topic = topicOf(name);
      const id = await registry.registerValueSchema(topic, name);
      expect(await registry.client.getCompatibility(valueSubject(topic))).toBe('BACKWARD');
      // Registering again (a restart) is accepted and yields the same id.
      expect(await new Registry({ url: REGISTRY_URL }).registerValueSchema(topic, name)).toBe(id);

      const bytes = registry.encode(topic, value);
      expect(bytes[0]).toBe(0);
      expect(bytes.readUInt32BE(1)).toBe(id);
      await producer.send(topic, [
        { key: envelope.submission_id, value: bytes, headers: { event_id: 'evt-1' } },
      ]);
      await waitFor(`a message on ${topic}`, () => received.some((message) => message.topic === topic));
      const message = received.find((entry) => entry.topic === topic)!;
      expect(message.key?.toString()).toBe(envelope.submission_id);
      expect(message.headers.event_id?.toString()).toBe('evt-1');

      // A fresh instance knows nothing but the bytes: it fetches the writer schema by id.
      const decoded = await new Registry({ url: REGISTRY_URL }).decode(message.value!);
      expect(decoded).toEqual(value);
    },
  );

  it('an Avro DocumentArrived in the wire format, written by another producer, decodes from Kafka', async () => {
    const topic = topicOf('arrived');
    const { body } = await registryCall('POST', `/subjects/${valueSubject(topic)}/versions`, {
      schema: avroSchemaText('DocumentArrived'),
    });
    const schemaId = (body as { id: number }).id;
    const payload = avro.Type.forSchema(avroSchemaJson('DocumentArrived') as avro.Schema).toBuffer({
      event_id: 'evt-avro',
      blob: { url: 's3://docs/in/a.pdf', content_type: 'application/pdf', size_bytes: null, sha256: null },
      query_id: 'q-7',
      pipeline_configuration: 'FRAUD_ONLY',
      enable_decision: true,
      submission_characteristics: JSON.stringify({ customer_case_id: 'case-7' }),
      attributes: { source: 'scanner' },
      reprocess: false,
    });
    const header = Buffer.alloc(5);
    header.writeUInt32BE(schemaId, 1);
    await producer.send(topic, [{ key: 'evt-avro', value: Buffer.concat([header, payload]) }]);
    await waitFor('the Avro input', () => received.some((message) => message.topic === topic));
    const value = received.find((message) => message.topic === topic)!.value;
    const result = await decodeDocumentArrived(value, new Registry({ url: REGISTRY_URL }));
    expect(result).toEqual({
      ok: true,
      format: 'avro',
      event: {
        event_id: 'evt-avro',
        blob: { url: 's3://docs/in/a.pdf', content_type: 'application/pdf', size_bytes: null, sha256: null },
        query_id: 'q-7',
        pipeline_configuration: 'FRAUD_ONLY',
        enable_decision: true,
        submission_characteristics: { customer_case_id: 'case-7' },
        attributes: { source: 'scanner' },
        reprocess: false,
      },
    });
  });
});

describe('compatibility levels on Apicurio', () => {
  const v1 = { type: 'record', name: 'Probe', namespace: 'test', fields: [{ name: 'a', type: 'string' }] };

  it('Apicurio reports NONE for a subject without a rule, which the registry client alone refuses', async () => {
    const subject = `${uniqueName('probe')}-value`;
    await registryCall('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(v1) });
    expect((await registryCall('GET', `/config/${subject}`)).body).toEqual({ compatibilityLevel: 'NONE' });
    const bare = new registryPackage.SchemaRegistry({ host: REGISTRY_URL });
    await expect(
      bare.register(
        { type: registryPackage.SchemaType.AVRO, schema: JSON.stringify(v1) },
        { subject, compatibility: registryPackage.COMPATIBILITY.BACKWARD },
      ),
    ).rejects.toThrow(/Compatibility does not match/);
  });

  it('the wrapper sets BACKWARD on such a subject and registers', async () => {
    const topic = uniqueName('probe');
    await registryCall('POST', `/subjects/${valueSubject(topic)}/versions`, {
      schema: avroSchemaText('DeadLetter'),
    });
    const registry = new Registry({ url: REGISTRY_URL });
    await registry.registerValueSchema(topic, 'DeadLetter');
    expect(await registry.client.getCompatibility(valueSubject(topic))).toBe('BACKWARD');
  });

  it('lets instances that start together register the same subject', async () => {
    // Apicurio answers 409 to the second of two concurrent rule writes; neither instance may fail.
    for (let round = 0; round < 3; round++) {
      const topic = uniqueName('probe');
      const instances = Array.from({ length: 4 }, () => new Registry({ url: REGISTRY_URL }));
      const ids = await Promise.all(instances.map((r) => r.registerValueSchema(topic, 'FraudResult')));
      expect(new Set(ids).size).toBe(1);
      expect(await instances[0]!.client.getCompatibility(valueSubject(topic))).toBe('BACKWARD');
    }
  });

  it('keeps a level an operator chose', async () => {
    const topic = uniqueName('probe');
    await registryCall('PUT', `/config/${valueSubject(topic)}`, { compatibility: 'FULL_TRANSITIVE' });
    const registry = new Registry({ url: REGISTRY_URL });
    await registry.registerValueSchema(topic, 'DecisionResult');
    expect(await registry.client.getCompatibility(valueSubject(topic))).toBe('FULL_TRANSITIVE');
  });

  it('enforces BACKWARD: a new field with a default passes, one without is refused', async () => {
    const subject = `${uniqueName('probe')}-value`;
    const registry = new Registry({ url: REGISTRY_URL });
    expect(await registry.client.settleCompatibility(subject)).toBe('BACKWARD');
    expect(
      (await registryCall('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(v1) })).status,
    ).toBe(200);
    const breaking = { ...v1, fields: [...v1.fields, { name: 'b', type: 'int' }] };
    expect(
      (await registryCall('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(breaking) }))
        .status,
    ).toBe(409);
    const evolving = { ...v1, fields: [...v1.fields, { name: 'b', type: ['null', 'int'], default: null }] };
    expect(
      (await registryCall('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(evolving) }))
        .status,
    ).toBe(200);
  });

  it('an unknown schema id is a data problem, not a registry failure', async () => {
    const bytes = Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 2, 0x61]);
    const result = await decodeDocumentArrived(bytes, new Registry({ url: REGISTRY_URL }));
    expect(result).toMatchObject({ ok: false, code: 'unknown_schema' });
  });

  it('an unreachable registry is a retriable failure', async () => {
    const registry = new Registry({ url: 'http://127.0.0.1:9/apis/ccompat/v7' });
    const registering = registry.registerValueSchema(uniqueName('probe'), 'DeadLetter');
    await expect(registering).rejects.toMatchObject({ name: 'RegistryUnavailableError', retriable: true });
    await expect(registering).rejects.toBeInstanceOf(RegistryError);
    await expect(registry.decode(Buffer.from([0, 0, 0, 0, 1, 2]))).rejects.toBeInstanceOf(
      RegistryUnavailableError,
    );
  });
});
