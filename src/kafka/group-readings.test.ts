import kafkajs from 'kafkajs';
import {
  adminWithCluster,
  commitsOf,
  GroupOffsetReader,
  staleAfter,
  type ReadingBroker,
  type ReadingCluster,
} from './group-readings.js';

/** A broker's answer as kafkajs throws it. */
function answer(type: string, retriable = true): Error {
  return Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type, retriable });
}

/** kafkajs's error for a node missing from the metadata the cluster holds. */
function brokerNotFound(): Error {
  return Object.assign(new Error('Broker 1 not found in the cached metadata'), {
    name: 'KafkaJSBrokerNotFound',
    retriable: true,
  });
}

/**
 * Just enough of kafkajs's Cluster: one topic of two partitions, the group's coordinator on node
 * `coordinatorNode`; every call counted; `failNext` makes the next call of a kind throw.
 */
function fakeCluster() {
  const calls: string[] = [];
  const failNext: Partial<Record<'offsetFetch' | 'listLatest' | 'findBroker', Error>> = {};
  const state = {
    coordinatorNode: 1,
    metadata: null as unknown,
    highs: ['10', '20'],
    lows: ['2', '0'],
    committed: ['5', '-1'],
  };
  const take = (kind: keyof typeof failNext) => {
    const error = failNext[kind];
    delete failNext[kind];
    if (error) throw error;
  };
  const broker = (nodeId: number): ReadingBroker => ({
    nodeId,
    offsetFetch: async ({ groupId, topics }) => {
      calls.push(`offsetFetch@${nodeId}`);
      take('offsetFetch');
      if (nodeId !== state.coordinatorNode) throw answer('NOT_COORDINATOR_FOR_GROUP');
      expect(groupId).toBe('g');
      return {
        responses: topics.map(({ topic, partitions }) => ({
          topic,
          partitions: partitions.map(({ partition }) => ({
            partition,
            offset: state.committed[partition]!,
            metadata: partition === 0 ? 'docstream:done' : '',
          })),
        })),
      };
    },
  });
  const cluster: ReadingCluster = {
    brokerPool: {
      get metadata() {
        return state.metadata;
      },
    },
    addTargetTopic: async () => {
      calls.push('addTargetTopic');
    },
    refreshMetadata: async () => {
      calls.push('metadata');
      state.metadata = { topics: ['t'] };
    },
    findTopicPartitionMetadata: (topic) => {
      if (!state.metadata)
        throw Object.assign(new Error('not loaded'), { name: 'KafkaJSTopicMetadataNotLoaded' });
      return topic === 't' ? [{ partitionId: 1 }, { partitionId: 0 }] : [];
    },
    fetchTopicsOffset: async ([request]) => {
      const { topic, fromBeginning, partitions } = request!;
      calls.push(fromBeginning ? 'listEarliest' : 'listLatest');
      if (!fromBeginning) take('listLatest');
      const from = fromBeginning ? state.lows : state.highs;
      return [
        { topic, partitions: partitions.map(({ partition }) => ({ partition, offset: from[partition]! })) },
      ];
    },
    findGroupCoordinator: async () => {
      calls.push('findCoordinator');
      return broker(state.coordinatorNode);
    },
    findBroker: async ({ nodeId }) => {
      take('findBroker');
      return broker(nodeId);
    },
  };
  const requests = () => calls.filter((call) => call !== 'addTargetTopic');
  return { cluster, calls, requests, failNext, state };
}

const expected = {
  ends: [
    { partition: 0, low: '2', high: '10' },
    { partition: 1, low: '0', high: '20' },
  ],
  committed: new Map([
    [0, { offset: '5', metadata: 'docstream:done' }],
    [1, { offset: null, metadata: null }],
  ]),
};

describe('GroupOffsetReader', () => {
  it('reads the ends and the commits in two requests a reading once the coordinator and metadata are known', async () => {
    const f = fakeCluster();
    const reader = new GroupOffsetReader(f.cluster);
    expect(await reader.read('g', 't')).toEqual(expected);
    expect(f.requests().sort()).toEqual(
      ['metadata', 'listLatest', 'findCoordinator', 'offsetFetch@1', 'listEarliest'].sort(),
    );
    const before = f.requests().length;
    for (let i = 0; i < 5; i++) expect(await reader.read('g', 't')).toEqual(expected);
    expect(f.requests().slice(before).sort()).toEqual(
      [...Array<string>(5).fill('listLatest'), ...Array<string>(5).fill('offsetFetch@1')].sort(),
    );
  });

  it('asks for the coordinator again when the one it knew says it no longer is', async () => {
    const f = fakeCluster();
    const reader = new GroupOffsetReader(f.cluster);
    await reader.read('g', 't');
    f.state.coordinatorNode = 2;
    f.state.committed = ['7', '3'];
    const reading = await reader.read('g', 't');
    expect(reading.committed.get(0)?.offset).toBe('7');
    expect(reading.committed.get(1)?.offset).toBe('3');
    expect(f.requests().filter((call) => call === 'findCoordinator')).toHaveLength(2);
    expect(f.requests().slice(-1)).toEqual(['offsetFetch@2']);
    // The new coordinator is kept: the next reading goes to it directly.
    const before = f.requests().length;
    await reader.read('g', 't');
    expect(f.requests().slice(before).sort()).toEqual(['listLatest', 'offsetFetch@2']);
  });

  it('asks for the coordinator again after COORDINATOR_NOT_AVAILABLE, and refreshes metadata when its broker is gone', async () => {
    const f = fakeCluster();
    const reader = new GroupOffsetReader(f.cluster);
    await reader.read('g', 't');
    f.failNext.offsetFetch = answer('GROUP_COORDINATOR_NOT_AVAILABLE');
    let before = f.requests().length;
    expect(await reader.read('g', 't')).toEqual(expected);
    expect(f.requests().slice(before)).toContain('findCoordinator');
    expect(f.requests().slice(before)).not.toContain('metadata');

    f.failNext.findBroker = brokerNotFound();
    before = f.requests().length;
    expect(await reader.read('g', 't')).toEqual(expected);
    expect(f.requests().slice(before)).toEqual(
      expect.arrayContaining(['metadata', 'findCoordinator', 'offsetFetch@1']),
    );
  });

  it('refreshes metadata after a leader change, then answers', async () => {
    const f = fakeCluster();
    const reader = new GroupOffsetReader(f.cluster);
    await reader.read('g', 't');
    f.failNext.listLatest = answer('NOT_LEADER_FOR_PARTITION');
    const before = f.requests().length;
    expect(await reader.read('g', 't')).toEqual(expected);
    expect(
      f
        .requests()
        .slice(before)
        .filter((call) => call === 'metadata'),
    ).toHaveLength(1);
    expect(
      f
        .requests()
        .slice(before)
        .filter((call) => call === 'listLatest'),
    ).toHaveLength(2);
  });

  it('refreshes metadata the cluster no longer holds (a reconnected admin) before reading', async () => {
    const f = fakeCluster();
    const reader = new GroupOffsetReader(f.cluster);
    await reader.read('g', 't');
    f.state.metadata = null;
    const before = f.requests().length;
    expect(await reader.read('g', 't')).toEqual(expected);
    expect(f.requests()[before]).toBe('metadata');
  });

  it('gives up at once on an answer no retry changes', async () => {
    const f = fakeCluster();
    const reader = new GroupOffsetReader(f.cluster);
    await reader.read('g', 't');
    f.failNext.offsetFetch = answer('GROUP_AUTHORIZATION_FAILED', false);
    const before = f.requests().length;
    await expect(reader.read('g', 't')).rejects.toThrow('GROUP_AUTHORIZATION_FAILED');
    expect(
      f
        .requests()
        .slice(before)
        .filter((call) => call.startsWith('offsetFetch')),
    ).toHaveLength(1);
  });

  it('lists the log start offsets again once they are older than lowMaxAgeMs, and metadata once older than metadataMaxAgeMs', async () => {
    const f = fakeCluster();
    let now = 0;
    const reader = new GroupOffsetReader(f.cluster, {
      lowMaxAgeMs: 60_000,
      metadataMaxAgeMs: 300_000,
      now: () => now,
    });
    await reader.read('g', 't');
    f.state.lows = ['9', '20'];
    now = 59_999;
    expect((await reader.read('g', 't')).ends[0]!.low).toBe('2');
    now = 60_000;
    const before = f.requests().length;
    const reading = await reader.read('g', 't');
    expect(reading.ends.map((end) => end.low)).toEqual(['9', '20']);
    expect(f.requests().slice(before).sort()).toEqual(['listEarliest', 'listLatest', 'offsetFetch@1']);
    now = 300_000;
    const later = f.requests().length;
    await reader.read('g', 't');
    expect(f.requests().slice(later)).toContain('metadata');
  });
});

describe('staleAfter', () => {
  it('says what a failure makes stale', () => {
    expect(staleAfter(answer('NOT_COORDINATOR_FOR_GROUP'))).toEqual({
      coordinator: true,
      metadata: false,
      retriable: true,
    });
    expect(staleAfter(answer('LEADER_NOT_AVAILABLE'))).toEqual({
      coordinator: true,
      metadata: true,
      retriable: true,
    });
    // kafkajs wraps what its own retries met in KafkaJSNumberOfRetriesExceeded's cause.
    const wrapped = Object.assign(new Error('retries exceeded', { cause: brokerNotFound() }), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      retriable: false,
    });
    expect(staleAfter(wrapped)).toEqual({ coordinator: true, metadata: true, retriable: true });
    expect(staleAfter(answer('GROUP_LOAD_IN_PROGRESS'))).toEqual({
      coordinator: false,
      metadata: false,
      retriable: true,
    });
    expect(staleAfter(answer('GROUP_AUTHORIZATION_FAILED', false))).toEqual({
      coordinator: false,
      metadata: false,
      retriable: false,
    });
  });
});

describe('commitsOf', () => {
  it('keeps -1 as no commit and empty metadata as none', () => {
    const fetched = [
      {
        topic: 't',
        partitions: [
          { partition: 0, offset: '-1', metadata: 'x' },
          { partition: 1, offset: '4', metadata: '' },
          { partition: 2, offset: '6', metadata: 'docstream:unfinished' },
        ],
      },
    ];
    expect(commitsOf(fetched, 't')).toEqual(
      new Map([
        [0, { offset: null, metadata: null }],
        [1, { offset: '4', metadata: null }],
        [2, { offset: '6', metadata: 'docstream:unfinished' }],
      ]),
    );
    expect(commitsOf(fetched, 'other').size).toBe(0);
  });
});

describe('adminWithCluster', () => {
  it("captures the cluster kafkajs builds the admin on, and leaves the client's factory as it was", () => {
    const kafka = new kafkajs.Kafka({ brokers: ['127.0.0.1:1'], logLevel: kafkajs.logLevel.NOTHING });
    const factories = () =>
      Object.getOwnPropertySymbols(kafka).map((s) => (kafka as unknown as Record<symbol, unknown>)[s]);
    const before = factories();
    const { admin, cluster } = adminWithCluster(kafka);
    expect(typeof admin.fetchOffsets).toBe('function');
    expect(typeof cluster?.findGroupCoordinator).toBe('function');
    expect(typeof cluster?.fetchTopicsOffset).toBe('function');
    expect(factories()).toEqual(before);
    // A second admin gets its own cluster.
    expect(adminWithCluster(kafka).cluster).not.toBe(cluster);
  });
});
