import kafkajs from 'kafkajs';
import {
  authorizationHint,
  isTransientKafkaFailure,
  kafkaError,
  KafkaError,
  MessageTooLargeError,
} from './errors.js';
import { FencedError, NotOwnedError } from './transactions.js';

const {
  KafkaJSConnectionError,
  KafkaJSGroupCoordinatorNotFound,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
} = kafkajs;

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

describe('authorizationHint', () => {
  it("names the ACL the authorizer refused: the request's operation on the resource kind", () => {
    const topic = new KafkaJSProtocolError({
      type: 'TOPIC_AUTHORIZATION_FAILED',
      code: 29,
      retriable: false,
      message: 'Not authorized to access topics: [Topic authorization failed]',
    } as never);
    expect(kafkaError(topic, 'producing to documents.fraud').message).toBe(
      "producing to documents.fraud: not authorized (TOPIC_AUTHORIZATION_FAILED): Kafka's ACLs do not give this principal Write on the topic of this request; `docstream topology` prints the ACLs each command needs (Not authorized to access topics: [Topic authorization failed])",
    );
    expect(authorizationHint(topic, 'creating topics a, b')).toMatch(
      /give this principal Create on the topic/,
    );
    const txn = new KafkaJSProtocolError({
      type: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
      code: 53,
      retriable: false,
      message: 'Transactional Id authorization failed',
    } as never);
    expect(authorizationHint(new Error('wrapped', { cause: txn }), 'producing to s')).toMatch(
      /^not authorized \(TRANSACTIONAL_ID_AUTHORIZATION_FAILED\): .* Write on the transactional id/,
    );
    expect(
      authorizationHint(new KafkaJSConnectionError('connect ECONNREFUSED'), 'producing to s'),
    ).toBeUndefined();
  });

  it('names the likely missing group ACL behind "Failed to find group coordinator", keeping the verdict on retrying', () => {
    const notFound = new (KafkaJSGroupCoordinatorNotFound as unknown as new (message: string) => Error)(
      'Failed to find group coordinator',
    );
    const wrapped = kafkaError(notFound, 'fetching offsets of group g');
    expect(wrapped.message).toMatch(
      /^fetching offsets of group g: no coordinator found for the group; .* grant it Read on the group/,
    );
    expect(wrapped.retriable).toBe((notFound as { retriable?: boolean }).retriable === true);
  });
});
