/**
 * The commit witness on the real broker: a record of a committed transaction reads as committed, one
 * of an aborted transaction as not, whether later records follow it or only the abort marker does.
 */
import { jest } from '@jest/globals';
import { Kafka, logLevel } from 'kafkajs';
import { ReadCommittedWitness } from '../../src/kafka/commit-witness.js';
import { silentLogger } from '../../src/observability/logger.js';
import { adminAndProducer, kafkaClient, uniqueName } from './helpers.js';

jest.setTimeout(90_000);

const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');
const client = kafkaClient();
const { admin, created } = adminAndProducer(client);

/** One transaction of `values` on partition 0 of `topic`, committed or aborted; its first offset. */
async function transaction(
  kafka: Kafka,
  topic: string,
  values: string[],
  end: 'commit' | 'abort',
): Promise<string> {
  const producer = kafka.producer({ transactionalId: uniqueName('witness-txn'), maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const txn = await producer.transaction();
    const [written] = await txn.sendBatch({
      topicMessages: [{ topic, messages: values.map((value) => ({ key: value, value, partition: 0 })) }],
      acks: -1,
    });
    await (end === 'commit' ? txn.commit() : txn.abort());
    return written!.baseOffset!;
  } finally {
    await producer.disconnect();
  }
}

it('tells a committed transaction from an aborted one by one of its records', async () => {
  const topic = uniqueName('witness');
  created.push(topic);
  await admin.ensureTopics([{ topic, numPartitions: 1 }]);
  const kafka = new Kafka({ brokers: BROKERS, clientId: 'docstream-test', logLevel: logLevel.NOTHING });
  const committed = await transaction(kafka, topic, ['a', 'b'], 'commit');
  const abortedWithin = await transaction(kafka, topic, ['c'], 'abort');
  const later = await transaction(kafka, topic, ['d'], 'commit');
  const abortedLast = await transaction(kafka, topic, ['e', 'f'], 'abort');

  const witness = new ReadCommittedWitness(client, admin, silentLogger);
  try {
    const ask = (offset: string) => witness.committed({ topic, partition: 0, offset });
    expect(await ask(committed)).toBe(true);
    expect(await ask(abortedWithin)).toBe(false);
    expect(await ask(later)).toBe(true);
    // Nothing but the abort marker after it: the reader steps past it and answers (no read timeout).
    expect(await ask(abortedLast)).toBe(false);
  } finally {
    await witness.stop();
  }
});
