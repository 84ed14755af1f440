import { jest } from '@jest/globals';
import type { Admin } from 'kafkajs';
import { KafkaAdmin } from './admin.js';
import { settledOnFakeTime } from '../util/test-helpers.js';

const settled = <T>(work: Promise<T>) => settledOnFakeTime(work, 20_000);

/** The broker's answer while another instance's topic has not reached this broker's metadata yet. */
const notHostedYet = () =>
  Object.assign(new Error('This server does not host this topic-partition'), {
    name: 'KafkaJSProtocolError',
    type: 'UNKNOWN_TOPIC_OR_PARTITION',
    retriable: true,
  });

interface FakeState {
  topics: Set<string>;
  createCalls: string[];
  metadataFailures: number;
  createFailure?: Error;
  leaderless?: number;
}

/** Just enough of kafkajs' Admin for ensureTopics. */
function fakeAdmin(state: FakeState): Admin {
  return {
    listTopics: async () => [...state.topics],
    createTopics: async ({ topics }: { topics: Array<{ topic: string }> }) => {
      const topic = topics[0]!.topic;
      state.createCalls.push(topic);
      if (state.createFailure) throw state.createFailure;
      if (state.topics.has(topic)) return false;
      state.topics.add(topic);
      return true;
    },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
      if (state.metadataFailures > 0) {
        state.metadataFailures -= 1;
        throw notHostedYet();
      }
      const leader = (state.leaderless ?? 0) > 0 ? -1 : 0;
      if (state.leaderless) state.leaderless -= 1;
      return {
        topics: topics.map((name) => ({
          name,
          partitions: [{ partitionId: 0, leader, replicas: [0], isr: [0] }],
        })),
      };
    },
    describeConfigs: async () => ({ resources: [] }),
  } as unknown as Admin;
}

describe('ensureTopics', () => {
  // The back-off and the time budget run on the fake clock; promise jobs, nextTick and setImmediate stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('waits out "does not host this topic-partition" and leaderless partitions after creating', async () => {
    const state: FakeState = { topics: new Set(), createCalls: [], metadataFailures: 3, leaderless: 2 };
    const admin = new KafkaAdmin(fakeAdmin(state));
    const result = await settled(
      admin.ensureTopics([{ topic: 't', numPartitions: 1 }], { timeoutMs: 10_000 }),
    );
    expect(result).toEqual({ created: ['t'], existing: [], mismatches: [] });
    expect(state.createCalls).toEqual(['t']);
    expect(state.metadataFailures).toBe(0);
    expect(state.leaderless).toBe(0);
  });

  it('retries a transient answer to the creation itself', async () => {
    const state: FakeState = { topics: new Set(), createCalls: [], metadataFailures: 0 };
    state.createFailure = notHostedYet();
    const admin = new KafkaAdmin(fakeAdmin(state));
    const pending = admin.ensureTopics([{ topic: 't', numPartitions: 1 }], { timeoutMs: 10_000 });
    await jest.advanceTimersByTimeAsync(50);
    delete state.createFailure;
    await expect(settled(pending)).resolves.toMatchObject({ created: ['t'] });
    expect(state.createCalls.length).toBeGreaterThanOrEqual(2);
  });

  it('gives up after its time with an error naming the topics and the broker answer', async () => {
    const state: FakeState = { topics: new Set(['t']), createCalls: [], metadataFailures: 1_000 };
    const admin = new KafkaAdmin(fakeAdmin(state));
    await expect(
      settled(admin.ensureTopics([{ topic: 't', numPartitions: 1 }], { timeoutMs: 300 })),
    ).rejects.toThrow(
      /topics t not ready after \d+ attempts in 300 ms; last answer: waiting for leaders of t: This server does not host this topic-partition \(UNKNOWN_TOPIC_OR_PARTITION\)/,
    );
  });

  it('fails at once, naming the topic, on an answer no retry can change', async () => {
    const state: FakeState = { topics: new Set(), createCalls: [], metadataFailures: 0 };
    state.createFailure = Object.assign(new Error('Configuration is invalid'), {
      type: 'INVALID_CONFIG',
      retriable: false,
    });
    const admin = new KafkaAdmin(fakeAdmin(state));
    await expect(
      settled(admin.ensureTopics([{ topic: 't', numPartitions: 1 }], { timeoutMs: 10_000 })),
    ).rejects.toThrow('creating topic t: Configuration is invalid (INVALID_CONFIG)');
    expect(state.createCalls).toEqual(['t']);
  });
});
