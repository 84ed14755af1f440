/** The Kafka module's public surface; nothing outside `src/kafka/` imports the client library. */
export { KafkaClient } from './client.js';
export { KafkaError, MessageTooLargeError } from './errors.js';
export { CoalescingSender } from './coalescer.js';
export type { KafkaAdmin } from './admin.js';
export type { KafkaProducer, OutgoingMessage } from './producer.js';
export type { GroupJoin, IncomingMessage, KafkaConsumer } from './consumer.js';
