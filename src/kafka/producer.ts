/**
 * An idempotent producer: every send waits for all in-sync replicas (acks=-1), and the broker
 * drops duplicates of a retried batch. kafkajs tracks idempotence sequence numbers per partition
 * only correctly with one request in flight per broker, hence `maxInFlightRequests: 1`; batch
 * messages (sendBatch) rather than issuing many concurrent sends.
 */
import type { Kafka, Message, Producer } from 'kafkajs';
import { kafkajsCompression, type CompressionName } from './compression.js';
import { isMessageTooLarge, kafkaError, MessageTooLargeError, wrapKafka } from './errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES, messageSize, type OutgoingMessage } from './message-size.js';

export type { OutgoingMessage };
import { JavaCompatiblePartitioner } from './partitioner.js';

export interface ProducerSettings {
  /** Upper bound in ms for the broker to acknowledge a send. */
  ackTimeoutMs?: number;
  compression?: CompressionName;
  /**
   * Largest message this producer sends, in bytes (see message-size.ts for how a message is
   * measured); default 1,000,000. Per-topic limits read from the broker (`setTopicLimits`, with
   * `KafkaAdmin.maxMessageBytes`) lower it for their topics.
   */
  maxMessageBytes?: number;
}

interface SentRecord {
  topic: string;
  partition: number;
  /** Offset of the first message of the batch sent to this partition. */
  baseOffset: string;
}

/** The message as kafkajs takes it (absent fields left out, not set to undefined). */
export function toKafkaJs(message: OutgoingMessage): Message {
  const out: Message = { key: message.key, value: message.value };
  if (message.headers !== undefined) out.headers = message.headers;
  if (message.partition !== undefined) out.partition = message.partition;
  if (message.timestamp !== undefined) out.timestamp = message.timestamp;
  return out;
}

export class KafkaProducer {
  private readonly producer: Producer;
  private readonly settings: ProducerSettings;
  readonly maxMessageBytes: number;
  private readonly topicLimits = new Map<string, number>();

  constructor(kafka: Kafka, settings: ProducerSettings) {
    this.settings = settings;
    this.maxMessageBytes = settings.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // The Java client's murmur2 partitioning, so keys land where other Kafka clients put them.
      createPartitioner: JavaCompatiblePartitioner,
    });
  }

  connect(): Promise<void> {
    return wrapKafka('connecting the producer', () => this.producer.connect());
  }

  disconnect(): Promise<void> {
    return wrapKafka('disconnecting the producer', () => this.producer.disconnect());
  }

  /** Lowers the limit for the named topics (e.g. their `max.message.bytes` read from the broker). */
  setTopicLimits(limits: Record<string, number>): void {
    for (const [topic, limit] of Object.entries(limits)) this.topicLimits.set(topic, limit);
  }

  /** The limit in force for `topic`: the producer's own, lowered by the topic's when known. */
  limitFor(topic: string): number {
    return Math.min(this.maxMessageBytes, this.topicLimits.get(topic) ?? Infinity);
  }

  /** The error this message would get for being too large for `topic`, or null when it fits. */
  checkSize(topic: string, message: OutgoingMessage): MessageTooLargeError | null {
    const size = messageSize(message);
    const limit = this.limitFor(topic);
    return size > limit ? new MessageTooLargeError({ topic, size, limit, fromBroker: false }) : null;
  }

  send(topic: string, messages: OutgoingMessage[]): Promise<SentRecord[]> {
    return this.sendBatch([{ topic, messages }]);
  }

  /**
   * One request per broker for messages to several topics; resolves once all are acknowledged.
   * Throws MessageTooLargeError before sending anything when a message exceeds its topic's limit,
   * and when the broker refuses a batch as too large (CoalescingSender then sends one by one).
   */
  async sendBatch(
    batches: Array<{ topic: string; messages: OutgoingMessage[] }>,
    options: { sizesChecked?: boolean } = {},
  ): Promise<SentRecord[]> {
    // The coalescing sender checked each message as it was queued (`sizesChecked`).
    if (!options.sizesChecked) {
      for (const batch of batches) {
        for (const message of batch.messages) {
          const tooLarge = this.checkSize(batch.topic, message);
          if (tooLarge) throw tooLarge;
        }
      }
    }
    const topicMessages = batches
      .filter((batch) => batch.messages.length > 0)
      .map((batch) => ({ topic: batch.topic, messages: batch.messages.map(toKafkaJs) }));
    if (topicMessages.length === 0) return [];
    const topics = [...new Set(topicMessages.map((batch) => batch.topic))].join(', ');
    let metadata;
    try {
      metadata = await this.producer.sendBatch({
        topicMessages,
        acks: -1,
        ...(this.settings.ackTimeoutMs !== undefined ? { timeout: this.settings.ackTimeoutMs } : {}),
        compression: kafkajsCompression(this.settings.compression),
      });
    } catch (error) {
      if (isMessageTooLarge(error)) {
        const all = batches.flatMap((batch) => batch.messages);
        throw new MessageTooLargeError({
          topic: topics,
          size: all.reduce((sum, message) => sum + messageSize(message), 0),
          limit: Math.min(...batches.map((batch) => this.limitFor(batch.topic))),
          fromBroker: true,
          cause: error,
        });
      }
      throw kafkaError(error, `producing to ${topics}`);
    }
    return metadata.map((record) => ({
      topic: record.topicName,
      partition: record.partition,
      baseOffset: record.baseOffset ?? '-1',
    }));
  }
}
