/** The Kafka module's public surface; nothing outside `src/kafka/` imports the client library. */
export { KafkaClient, DEFAULT_BROKERS, type KafkaSettings, type KafkaLogLevel } from './client.js';
export { KafkaError, MessageTooLargeError, isMessageTooLarge } from './errors.js';
export { DEFAULT_MAX_MESSAGE_BYTES, messageSize } from './message-size.js';
export { CoalescingSender, type CoalescingOptions } from './coalescer.js';
export type {
  EnsureTopicsOptions,
  EnsureTopicsResult,
  GroupDescription,
  KafkaAdmin,
  OffsetResetPlan,
  OffsetResetTarget,
  PartitionOffsets,
  PartitionReset,
  TopicDescription,
  TopicMismatch,
  TopicSpec,
} from './admin.js';
export type { KafkaProducer, OutgoingMessage, ProducerSettings, SentRecord } from './producer.js';
export type {
  Assignment,
  BatchControl,
  BatchHandler,
  ConsumerCrash,
  ConsumerSettings,
  GroupJoin,
  IncomingBatch,
  IncomingMessage,
  KafkaConsumer,
  RunOptions,
  TopicPartitionOffset,
} from './consumer.js';
