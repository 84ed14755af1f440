/**
 * An idempotent producer: every send waits for all in-sync replicas (acks=-1), and the broker
 * drops duplicates of a retried batch. kafkajs tracks idempotence sequence numbers per partition
 * only correctly with one request in flight per broker, hence `maxInFlightRequests: 1`; batch
 * messages (sendBatch) rather than issuing many concurrent sends.
 */
import kafkajs from 'kafkajs';
import type { Kafka, Message, Producer } from 'kafkajs';
import { wrapKafka } from './errors.js';

const { Partitioners, CompressionTypes } = kafkajs;

export interface ProducerSettings {
  /** Upper bound in ms for the broker to acknowledge a send. */
  ackTimeoutMs?: number;
  compression?: 'none' | 'gzip';
}

export interface OutgoingMessage {
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers?: Record<string, string | Buffer>;
  /** Explicit partition (e.g. to co-partition the state topic with the input); else by key hash. */
  partition?: number;
  /** Milliseconds since the epoch, as a string like Kafka's own timestamps. */
  timestamp?: string;
}

export interface SentRecord {
  topic: string;
  partition: number;
  /** Offset of the first message of the batch sent to this partition. */
  baseOffset: string;
}

function toKafkaJs(message: OutgoingMessage): Message {
  const out: Message = { key: message.key, value: message.value };
  if (message.headers !== undefined) out.headers = message.headers;
  if (message.partition !== undefined) out.partition = message.partition;
  if (message.timestamp !== undefined) out.timestamp = message.timestamp;
  return out;
}

export class KafkaProducer {
  private readonly producer: Producer;
  private readonly settings: ProducerSettings;

  constructor(kafka: Kafka, settings: ProducerSettings) {
    this.settings = settings;
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // The Java client's murmur2 partitioning, so keys land where other Kafka clients put them.
      createPartitioner: Partitioners.DefaultPartitioner,
    });
  }

  connect(): Promise<void> {
    return wrapKafka('connecting the producer', () => this.producer.connect());
  }

  disconnect(): Promise<void> {
    return wrapKafka('disconnecting the producer', () => this.producer.disconnect());
  }

  send(topic: string, messages: OutgoingMessage[]): Promise<SentRecord[]> {
    return this.sendBatch([{ topic, messages }]);
  }

  /** One request per broker for messages to several topics; resolves once all are acknowledged. */
  async sendBatch(batches: Array<{ topic: string; messages: OutgoingMessage[] }>): Promise<SentRecord[]> {
    const topicMessages = batches
      .filter((batch) => batch.messages.length > 0)
      .map((batch) => ({ topic: batch.topic, messages: batch.messages.map(toKafkaJs) }));
    if (topicMessages.length === 0) return [];
    const topics = [...new Set(topicMessages.map((batch) => batch.topic))].join(', ');
    const metadata = await wrapKafka(`producing to ${topics}`, () =>
      this.producer.sendBatch({
        topicMessages,
        acks: -1,
        ...(this.settings.ackTimeoutMs !== undefined ? { timeout: this.settings.ackTimeoutMs } : {}),
        compression: this.settings.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
      }),
    );
    return metadata.map((record) => ({
      topic: record.topicName,
      partition: record.partition,
      baseOffset: record.baseOffset ?? '-1',
    }));
  }
}
