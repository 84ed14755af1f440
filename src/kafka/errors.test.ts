import kafkajs from 'kafkajs';
import { isTransientKafkaFailure, kafkaError, KafkaError, MessageTooLargeError } from './errors.js';
import { FencedError, NotOwnedError } from './transactions.js';

const { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } = kafkajs;

describe('isTransientKafkaFailure', () => {
  it('is true for a connection failure, also once kafkajs gave up retrying it', () => {
    const refused = new KafkaJSConnectionError('connect ECONNREFUSED 127.0.0.1:9092');
    expect(isTransientKafkaFailure(kafkaError(refused, 'producing to s'))).toBe(true);
    const gaveUp = new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 1000 });
    expect(kafkaError(gaveUp, 'producing to s').retriable).toBe(false);
    expect(isTransientKafkaFailure(kafkaError(gaveUp, 'producing to s'))).toBe(true);
  });

  it('is false for what waiting cannot change: too large, fenced, not owned, a refusal', () => {
    expect(
      isTransientKafkaFailure(new MessageTooLargeError({ topic: 's', size: 2, limit: 1, fromBroker: false })),
    ).toBe(false);
    expect(isTransientKafkaFailure(new FencedError(0))).toBe(false);
    expect(isTransientKafkaFailure(new NotOwnedError(0))).toBe(false);
    const denied = new KafkaJSProtocolError({
      message: 'Not authorized to access topics',
      type: 'TOPIC_AUTHORIZATION_FAILED',
      code: 29,
      retriable: false,
    } as never);
    expect(isTransientKafkaFailure(kafkaError(denied, 'producing to s'))).toBe(false);
    expect(isTransientKafkaFailure(new Error('not Kafka'))).toBe(false);
    expect(isTransientKafkaFailure(new KafkaError('leader moving', { retriable: true }))).toBe(true);
  });
});
