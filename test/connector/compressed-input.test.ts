/**
 * Arrival events in compressed record batches, as users' producers send them: docstream's own client
 * (kafkajs with the codecs of src/kafka/compression.ts) and librdkafka (confluent-kafka's Python
 * client, prepared by examples/setup.sh) each send one event with snappy, one with LZ4 and one with
 * zstd, each in a batch of its own on the input's one partition. A `docstream run` started after
 * them analyses all six: a batch it could not decode would stop the partition there, and every
 * event after it would wait forever.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { arrival, E2E } from '../harness/e2e.js';

const exec = promisify(execFile);
const BOOTSTRAP = process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092';
const CODECS = ['snappy', 'lz4', 'zstd'] as const;
/**
 * An attribute that compresses well: librdkafka sends a batch uncompressed when compressing does
 * not make it smaller, as it would for one short event.
 */
const ATTRIBUTES = { note: 'a compressed arrival event, '.repeat(40) };

/**
 * Sends each (compression, key, value) of the JSON list in argv[3] to topic argv[2] with a producer
 * of its own whose compression.type is that compression; prints one line per record delivered.
 */
const PYTHON_PRODUCER = `
import json, sys
from confluent_kafka import Producer
bootstrap, topic, records = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for r in records:
    failures = []
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": r["compression"], "enable.idempotence": True})
    producer.produce(topic, key=r["key"], value=r["value"], on_delivery=lambda err, msg: err and failures.append(err))
    if producer.flush(30) > 0 or failures:
        sys.exit(f"{r['key']} was not delivered: {failures or 'no answer within 30 s'}")
    print(f"sent {r['key']} with {r['compression']}")
`;

describe('compressed arrival events (snappy, LZ4, zstd)', () => {
  let env: E2E;
  let file: string;
  let python: string;
  const eventOf = (producer: string, codec: string) => `${env.id}-${producer}-${codec}`;

  beforeAll(async () => {
    // The Python client is prepared while the sandbox starts (cached under .cache/examples).
    const prepared = exec('bash', ['examples/setup.sh', 'python'], { timeout: 420_000 });
    env = await new E2E().start();
    file = await env.writeFile('invoice.pdf', await sampleBytes('clean-pdf'));
    python = (await prepared).stdout.trim().split('\n').at(-1)!;
  }, 450_000);

  afterAll(async () => {
    await env?.stop();
  });

  it('docstream analyses the events that kafkajs and librdkafka sent with each compression', async () => {
    for (const codec of CODECS) {
      const producer = env.kafka.producer({ compression: codec });
      await producer.connect();
      try {
        const eventId = eventOf('kafkajs', codec);
        await producer.send(env.topics.arrived, [
          { key: eventId, value: JSON.stringify(arrival(eventId, file, { attributes: ATTRIBUTES })) },
        ]);
      } finally {
        await producer.disconnect();
      }
    }
    const records = CODECS.map((codec) => {
      const eventId = eventOf('librdkafka', codec);
      return {
        compression: codec,
        key: eventId,
        value: JSON.stringify(arrival(eventId, file, { attributes: ATTRIBUTES })),
      };
    });
    const { stdout } = await exec(
      python,
      ['-c', PYTHON_PRODUCER, BOOTSTRAP, env.topics.arrived, JSON.stringify(records)],
      {
        timeout: 90_000,
      },
    );
    expect(stdout.trim().split('\n')).toEqual(records.map((r) => `sent ${r.key} with ${r.compression}`));

    env.spawnConnector();
    await env.collect();
    for (const producer of ['kafkajs', 'librdkafka'])
      for (const codec of CODECS) {
        const eventId = eventOf(producer, codec);
        await env.waitForResults(eventId);
        const results = env.forEvent(eventId);
        expect(results.map((o) => env.kindOf(o)).sort()).toEqual(['classification', 'fraud', 'quality']);
        for (const o of results)
          expect(o.value).toMatchObject({ event_id: eventId, status: 'SUCCESS', attributes: ATTRIBUTES });
        expect(await env.submissions(eventId)).toHaveLength(1);
      }
    expect(env.on('dlq')).toEqual([]);
  });
});
