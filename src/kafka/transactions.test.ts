/**
 * The transactional writers' own logic, with a stand-in for kafkajs' transactional producer (the
 * broker side is covered by test/connector/exactly-once.test.ts on the real stack): one transaction
 * per linger, one in flight per partition, abort and resend, revoke, fencing, graceful stop.
 */
import { jest } from '@jest/globals';
import type { Kafka } from 'kafkajs';
import { silentLogger } from '../observability/logger.js';
import { MessageTooLargeError } from './errors.js';
import { partitionOfKey } from './partitioner.js';
import {
  type CommitWitness,
  type WrittenRecord,
  FencedError,
  isConcurrentTransaction,
  isFatalToProducer,
  isFencing,
  NotOwnedError,
  TransactionalWriters,
} from './transactions.js';
import { settledOnFakeTime } from '../util/test-helpers.js';

const settled = <T>(work: Promise<T>) => settledOnFakeTime(work, 10_000);

interface SentBatch {
  producer: number;
  topicMessages: Array<{ topic: string; messages: Array<{ key: unknown; value: unknown }> }>;
}

/** What the producers did, and hooks to make a transaction's send or commit fail or wait. */
class FakeKafka {
  readonly configs: Array<Record<string, unknown>> = [];
  readonly sent: SentBatch[] = [];
  /** Records per sendBatch call, in order. */
  readonly sendSizes: number[] = [];
  /**
   * The cluster's partitions per topic, as kafkajs hands them to the producer's partitioner at each
   * send (unset: the partitioner is not called). With it, `sendPartitions` holds the
   * `topic/partition`s each sendBatch call reached, in order.
   */
  metadata: Record<string, Array<{ partitionId: number; leader: number; replicas: number[] }>> | null = null;
  readonly sendPartitions: string[][] = [];
  readonly log: string[] = [];
  /** Called at each commit (numbered from 0); throw to fail it, await to hold it. */
  commitHook: (n: number) => Promise<void> | void = () => undefined;
  sendHook: (n: number) => Promise<void> | void = () => undefined;
  /** Called as each transaction begins. */
  beginHook: () => void = () => undefined;
  abortHook: () => Promise<void> | void = () => undefined;
  connectHook: () => Promise<void> | void = () => undefined;
  /** Commits that succeeded. */
  commits = 0;
  private commitCalls = 0;
  private sends = 0;

  asKafka(): Kafka {
    return this as unknown as Kafka;
  }

  producer(config: Record<string, unknown>) {
    const index = this.configs.length;
    this.configs.push(config);
    const makePartitioner = config.createPartitioner as
      (() => (args: { topic: string; partitionMetadata: unknown; message: unknown }) => number) | undefined;
    const partitioner = makePartitioner?.();
    return {
      connect: async () => {
        this.log.push(`connect ${index}`);
        await this.connectHook();
      },
      disconnect: async () => {
        this.log.push(`disconnect ${index}`);
      },
      transaction: async () => {
        this.beginHook();
        let records = 0;
        // A transaction's sends, merged by topic in one entry of `sent`; each send's record count in `sendSizes`.
        let entry: SentBatch | null = null;
        return {
          sendBatch: async (b: { topicMessages: SentBatch['topicMessages'] }) => {
            const n = this.sends++;
            this.sendSizes.push(b.topicMessages.reduce((sum, t) => sum + t.messages.length, 0));
            const metadata = this.metadata;
            if (metadata && partitioner) {
              const reached = new Set<string>();
              for (const t of b.topicMessages)
                for (const message of t.messages)
                  reached.add(
                    `${t.topic}/${partitioner({ topic: t.topic, partitionMetadata: metadata[t.topic], message })}`,
                  );
              this.sendPartitions.push([...reached].sort());
            }
            if (!entry) {
              entry = { producer: index, topicMessages: [] };
              this.sent.push(entry);
            }
            for (const t of b.topicMessages) {
              const same = entry.topicMessages.find((e) => e.topic === t.topic);
              if (same) same.messages.push(...t.messages);
              else entry.topicMessages.push({ topic: t.topic, messages: [...t.messages] });
            }
            records += b.topicMessages.reduce((sum, t) => sum + t.messages.length, 0);
            await this.sendHook(n);
            // What a broker answers: each topic-partition's first offset (here 100 per send).
            return b.topicMessages.map((t) => ({
              topicName: t.topic,
              partition: 0,
              errorCode: 0,
              baseOffset: String(100 * n),
            }));
          },
          commit: async () => {
            await this.commitHook(this.commitCalls++);
            this.commits += 1;
            this.log.push(`commit ${index} ${records}`);
          },
          abort: async () => {
            this.log.push(`abort ${index} ${records}`);
            await this.abortHook();
          },
        };
      },
    };
  }

  /** Keys of the records of each sendBatch, in order. */
  keys(): string[][] {
    return this.sent.map((b) => b.topicMessages.flatMap((t) => t.messages.map((m) => String(m.key))));
  }
}

/** Moves jest's fake clock on by `ms`: the linger and back-off timers due meanwhile fire. */
const tick = (ms = 0) => jest.advanceTimersByTimeAsync(ms);

function writers(
  kafka: FakeKafka,
  extra: Partial<ConstructorParameters<typeof TransactionalWriters>[1]> = {},
  witness?: CommitWitness,
) {
  return new TransactionalWriters(
    kafka.asKafka(),
    {
      idPrefix: 'grp-arrived',
      lingerMs: 5,
      logger: silentLogger,
      ...extra,
    },
    witness,
  );
}

/** A witness that answers from `answers` in turn (an Error is thrown) and records what it was asked. */
function witnessOf(...answers: Array<boolean | Error>) {
  const asked: WrittenRecord[] = [];
  let stopped = false;
  const witness: CommitWitness = {
    committed: (record) => {
      asked.push(record);
      const answer = answers.shift() ?? false;
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
    stop: () => {
      stopped = true;
      return Promise.resolve();
    },
  };
  return { witness, asked, stopped: () => stopped };
}

/**
 * A commit that fails without an answer, as kafkajs reports a coordinator lost mid-request: the
 * commit times out and the abort after it is refused by kafkajs' state machine (still COMMITTING).
 */
function commitWithoutAnswer(kafka: FakeKafka): void {
  kafka.commitHook = (n) => {
    if (n === 0) throw Object.assign(new Error('Request EndTxn timed out'), { retriable: true });
  };
  kafka.abortHook = () => {
    if (kafka.log.at(-1) === 'abort 0 1') throw new Error('Transaction state exception: Invalid transition');
  };
}

/**
 * A record whose every send fails with `failure`, its partition revoked while the writer waits to
 * try again (the first attempt failed; the next is >= 50 ms away): the record fails as not owned.
 */
async function revokedInBackOff(failure: Error): Promise<FakeKafka> {
  const kafka = new FakeKafka();
  const w = writers(kafka, { lingerMs: 1 });
  await settled(w.open([0]));
  kafka.sendHook = () => {
    throw failure;
  };
  const sent = w.send(0, 't', { key: 'a', value: '' });
  await tick(20);
  const closing = w.close([0]);
  await expect(settled(sent)).rejects.toBeInstanceOf(NotOwnedError);
  await settled(closing);
  return kafka;
}

describe('TransactionalWriters', () => {
  // Linger and back-off run on the fake clock; promise jobs, nextTick and setImmediate stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('initialises one transactional producer per partition on open (an empty transaction, aborted)', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka);
    await settled(w.open([0, 2]));
    await settled(w.open([2]));
    expect(kafka.configs.map((c) => c.transactionalId).sort()).toEqual(['grp-arrived-0', 'grp-arrived-2']);
    expect(kafka.configs.every((c) => c.idempotent === true && c.maxInFlightRequests === 1)).toBe(true);
    expect(kafka.log.filter((l) => l.startsWith('abort'))).toEqual(['abort 0 0', 'abort 1 0']);
    expect(w.size).toBe(2);
    expect(w.owns(2)).toBe(true);
    expect(w.owns(1)).toBe(false);
    await settled(w.stop());
  });

  it('does not own a partition whose producer could not be initialised', async () => {
    const kafka = new FakeKafka();
    kafka.connectHook = () => {
      throw Object.assign(new Error('broker down'), { retriable: true });
    };
    const w = writers(kafka);
    await expect(settled(w.open([4]))).rejects.toThrow(/initialising transactional id grp-arrived-4/);
    expect(w.owns(4)).toBe(false);
    expect(kafka.log).toContain('disconnect 0');
    await expect(settled(w.send(4, 't', { key: 'k', value: 'v' }))).rejects.toBeInstanceOf(NotOwnedError);
  });

  it('closes a producer whose partition was revoked while its id was being initialised, and refuses the partition', async () => {
    const kafka = new FakeKafka();
    let connected!: () => void;
    kafka.connectHook = () => new Promise<void>((resolve) => (connected = resolve));
    const w = writers(kafka);
    const opening = w.open([3]);
    opening.catch(() => undefined);
    await tick(1);
    // Revoked (`close`, not awaited by the revoke) before the producer has connected.
    const closing = w.close([3]);
    connected();
    await expect(settled(opening)).rejects.toBeInstanceOf(NotOwnedError);
    await settled(closing);
    expect(w.owns(3)).toBe(false);
    expect(w.size).toBe(0);
    expect(kafka.log).toContain('disconnect 0');
    expect(() => w.stage(3, 't', { key: 'a', value: '' })).toThrow(NotOwnedError);
    // Assigned again later: a producer of its own, the id initialised again, not the revoked one.
    kafka.connectHook = () => undefined;
    await settled(w.open([3]));
    expect(kafka.configs).toHaveLength(2);
    expect(kafka.log.filter((l) => l.startsWith('abort'))).toEqual(['abort 0 0', 'abort 1 0']);
    await settled(w.stop());
  });

  it('opens a partition once when two assignments open it at the same time', async () => {
    const kafka = new FakeKafka();
    let connected!: () => void;
    kafka.connectHook = () => new Promise<void>((resolve) => (connected = resolve));
    const w = writers(kafka);
    const first = w.open([1]);
    await tick(1);
    const second = w.open([1]);
    connected();
    await settled(Promise.all([first, second]));
    expect(kafka.configs).toHaveLength(1);
    expect(w.owns(1)).toBe(true);
    await settled(w.stop());
  });

  it('commits the records staged within one linger as one transaction, grouped by topic, and resolves on commit', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 20 });
    await settled(w.open([0]));
    let release: () => void = () => undefined;
    kafka.commitHook = () => new Promise<void>((r) => (release = r));
    const done: string[] = [];
    const sends = [
      w.send(0, 'results', { key: 'a', value: '1' }).then(() => done.push('a')),
      w.send(0, 'state', { key: 'a', value: 's', partition: 0 }).then(() => done.push('a-state')),
    ];
    // A record staged in a promise continuation (no I/O between) lands in the same transaction.
    await Promise.resolve();
    sends.push(w.send(0, 'results', { key: 'b', value: '2' }).then(() => done.push('b')));
    await tick(5);
    expect(kafka.sent).toHaveLength(0); // the linger is not over
    await tick(40);
    expect(kafka.sent).toHaveLength(1);
    expect(kafka.sent[0]!.topicMessages.map((t) => [t.topic, t.messages.map((m) => m.key)])).toEqual([
      ['results', ['a', 'b']],
      ['state', ['a']],
    ]);
    // The first record alone (one partition leader), then the rest.
    expect(kafka.sendSizes).toEqual([1, 2]);
    expect(done).toEqual([]); // sent, not committed yet
    release();
    await settled(Promise.all(sends));
    expect(done.sort()).toEqual(['a', 'a-state', 'b']);
    expect(kafka.commits).toBe(1);
    await settled(w.stop());
  });

  /** Four partitions per topic, led by nodes 1, 2, 3, 1 (replicated on three), or all by node 1 alone. */
  function cluster(brokers: 1 | 3) {
    const partitions = [0, 1, 2, 3].map((partitionId) => ({
      partitionId,
      leader: brokers === 1 ? 1 : (partitionId % 3) + 1,
      replicas: brokers === 1 ? [1] : [1, 2, 3],
    }));
    return { results: partitions, state: partitions, decisions: partitions };
  }

  /** One document's worth of records for each key: a result (keyed: any partition) and its state (partition 0). */
  function stageDocuments(w: TransactionalWriters, keys: string[]): Array<Promise<void>> {
    return keys.flatMap((key) => [
      w.send(0, 'results', { key, value: 'r' }),
      w.send(0, 'state', { key, value: 's', partition: 0 }),
    ]);
  }

  it('on several brokers sends a transaction one partition per send, each record once, all in one transaction', async () => {
    const kafka = new FakeKafka();
    kafka.metadata = cluster(3);
    const w = writers(kafka);
    await settled(w.open([0]));
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    // A first transaction teaches the producer's partitioner the cluster.
    await tick(0);
    const first = stageDocuments(w, ['warm']);
    await tick(40);
    await settled(Promise.all(first));
    kafka.sendPartitions.length = 0;
    kafka.sendSizes.length = 0;
    const sends = stageDocuments(w, keys);
    await tick(40);
    await settled(Promise.all(sends));
    expect(kafka.commits).toBe(2);
    // kafkajs sends one request per leader of a send and retries those still out when one fails:
    // no send may reach two partitions, so none reaches two leaders.
    for (const reached of kafka.sendPartitions) expect(reached).toHaveLength(1);
    const partitionsOfKeys = new Set(keys.map((k) => `results/${partitionOfKey(k, 4)}`));
    expect(partitionsOfKeys.size).toBeGreaterThan(1);
    expect(new Set(kafka.sendPartitions.flat())).toEqual(new Set([...partitionsOfKeys, 'state/0']));
    // Every record went out once, in the transaction's one entry.
    expect(kafka.sendSizes.reduce((a, b) => a + b, 0)).toBe(keys.length * 2);
    const last = kafka.sent[kafka.sent.length - 1]!;
    expect(
      last.topicMessages.flatMap((t) => t.messages.map((m) => `${t.topic}:${String(m.key)}`)).sort(),
    ).toEqual(keys.flatMap((k) => [`results:${k}`, `state:${k}`]).sort());
    await settled(w.stop());
  });

  it('on several brokers sends the records of a topic not seen yet one by one until its partitions are known', async () => {
    const kafka = new FakeKafka();
    kafka.metadata = cluster(3);
    const w = writers(kafka);
    await settled(w.open([0]));
    // The first record teaches the partitioner `results`; `decisions` is not known until one of its
    // records went out.
    const sends = [
      w.send(0, 'results', { key: 'a', value: 'r' }),
      ...['x', 'y', 'z', 'w'].map((key) => w.send(0, 'decisions', { key, value: 'd' })),
    ];
    await tick(40);
    await settled(Promise.all(sends));
    expect(kafka.commits).toBe(1);
    for (const reached of kafka.sendPartitions) expect(reached).toHaveLength(1);
    expect(kafka.sendSizes.slice(0, 2)).toEqual([1, 1]);
    expect(kafka.sendSizes.reduce((a, b) => a + b, 0)).toBe(5);
    await settled(w.stop());
  });

  it('on one broker sends the first record alone and the rest in one send, as before', async () => {
    const kafka = new FakeKafka();
    kafka.metadata = cluster(1);
    const w = writers(kafka);
    await settled(w.open([0]));
    const sends = stageDocuments(w, ['a', 'b', 'c', 'd']);
    await tick(40);
    await settled(Promise.all(sends));
    expect(kafka.sendSizes).toEqual([1, 7]);
    await settled(w.stop());
  });

  it('keeps one transaction in flight per partition; records gather meanwhile for the next one', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 1 });
    await settled(w.open([0, 1]));
    let release: () => void = () => undefined;
    kafka.commitHook = (n) => (n === 0 ? new Promise<void>((r) => (release = r)) : undefined);
    const first = w.send(0, 't', { key: 'a', value: '' });
    await tick(20);
    const later = [w.send(0, 't', { key: 'b', value: '' }), w.send(0, 't', { key: 'c', value: '' })];
    // Another partition is not held up by partition 0's open transaction.
    await settled(w.send(1, 't', { key: 'x', value: '' }));
    await tick(20);
    expect(kafka.keys()).toEqual([['a'], ['x']]);
    release();
    await settled(first);
    await settled(Promise.all(later));
    expect(kafka.keys()).toEqual([['a'], ['x'], ['b', 'c']]);
    await settled(w.stop());
  });

  it('splits a batch at maxBatch records', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 1, maxBatch: 2 });
    await settled(w.open([0]));
    await settled(Promise.all(['a', 'b', 'c', 'd', 'e'].map((k) => w.send(0, 't', { key: k, value: '' }))));
    expect(kafka.keys()).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    await settled(w.stop());
  });

  it('refuses new records as retriable past maxGathered while a transaction is retried, and takes them again after', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 1, maxBatch: 2, maxGathered: 3 });
    await settled(w.open([0]));
    let release: () => void = () => undefined;
    kafka.commitHook = (n) => (n === 0 ? new Promise<void>((r) => (release = r)) : undefined);
    const first = w.send(0, 't', { key: 'a', value: '' });
    await tick(20);
    const gathered = ['b', 'c', 'd'].map((k) => w.send(0, 't', { key: k, value: '' }, { replace: true }));
    const refused = w.send(0, 't', { key: 'e', value: '' });
    await expect(refused).rejects.toMatchObject({
      retriable: true,
      message: expect.stringMatching(/backpressure/),
    });
    // A record replacing one gathered adds nothing: it is taken.
    const replaced = w.send(0, 't', { key: 'd', value: 'newer' }, { replace: true });
    release();
    await settled(first);
    await settled(Promise.all([...gathered, replaced]));
    await settled(w.send(0, 't', { key: 'e', value: '' }));
    expect(kafka.keys()).toEqual([['a'], ['b', 'c'], ['d'], ['e']]);
    await settled(w.stop());
  });

  it('keeps only the latest of records staged with replace for one key (state records)', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 10 });
    await settled(w.open([0]));
    const sends = [
      w.send(0, 'state', { key: 'e1', value: 'v1', partition: 0 }, { replace: true }),
      w.send(0, 'results', { key: 'e1', value: 'r' }),
      w.send(0, 'state', { key: 'e1', value: 'v2', partition: 0 }, { replace: true }),
    ];
    await settled(Promise.all(sends));
    expect(kafka.sent).toHaveLength(1);
    const state = kafka.sent[0]!.topicMessages.find((t) => t.topic === 'state')!;
    expect(state.messages.map((m) => m.value)).toEqual(['v2']);
    await settled(w.stop());
  });

  it('aborts a failed transaction and sends its whole batch again in the next one', async () => {
    const kafka = new FakeKafka();
    const warnings: unknown[] = [];
    const logger = {
      ...silentLogger,
      warn: (o: unknown) => warnings.push(o),
    } as unknown as typeof silentLogger;
    const w = writers(kafka, { logger });
    await settled(w.open([0]));
    kafka.sendHook = (n) => {
      if (n === 0) throw Object.assign(new Error('NOT_COORDINATOR'), { retriable: true });
    };
    await settled(
      Promise.all([w.send(0, 't', { key: 'a', value: '' }), w.send(0, 't', { key: 'b', value: '' })]),
    );
    // The first try failed at its first send (the first record alone); the next sent both.
    expect(kafka.keys()).toEqual([['a'], ['a', 'b']]);
    expect(kafka.log).toContain('abort 0 1');
    expect(kafka.commits).toBe(1);
    expect(warnings).toEqual([expect.objectContaining({ partition: 0, attempt: 0, records: 2 })]);
    await settled(w.stop());
  });

  it('makes a new producer when the abort of a failed transaction failed too (its state unknown)', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka);
    await settled(w.open([3]));
    kafka.commitHook = (n) => {
      if (n === 0) throw new Error('request timed out');
    };
    // The abort after the failed commit (not the open's) times out, once.
    kafka.abortHook = () => {
      if (kafka.log.at(-1) === 'abort 0 1') throw new Error('abort timed out');
    };
    await settled(w.send(3, 't', { key: 'a', value: '' }));
    expect(kafka.configs).toHaveLength(2);
    expect(kafka.configs[1]!.transactionalId).toBe('grp-arrived-3');
    expect(kafka.log).toContain('disconnect 0');
    expect(kafka.log).toContain('commit 1 1');
    await settled(w.stop());
  });

  it('does not send again a batch whose unanswered commit the witness finds committed', async () => {
    const kafka = new FakeKafka();
    const { witness, asked, stopped } = witnessOf(true);
    const w = writers(kafka, {}, witness);
    await settled(w.open([3]));
    commitWithoutAnswer(kafka);
    await settled(w.send(3, 'results', { key: 'a', value: '' }));
    // Asked once, after the id was initialised again (a new producer), about the batch's first record.
    expect(asked).toEqual([{ topic: 'results', partition: 0, offset: '0' }]);
    expect(kafka.configs).toHaveLength(2);
    expect(kafka.keys()).toEqual([['a']]);
    await settled(w.stop());
    expect(stopped()).toBe(true);
  });

  it('sends the batch again when the witness finds the unanswered commit aborted, and asks again after a failed look-up', async () => {
    const kafka = new FakeKafka();
    const { witness, asked } = witnessOf(new Error('reading results[0]@0 took over 30000 ms'), false);
    const w = writers(kafka, {}, witness);
    await settled(w.open([3]));
    commitWithoutAnswer(kafka);
    await settled(w.send(3, 'results', { key: 'a', value: '' }));
    expect(asked).toHaveLength(2);
    expect(kafka.keys()).toEqual([['a'], ['a']]);
    expect(kafka.log).toContain('commit 1 1');
    // Committed on the second try: nothing left to ask about.
    await settled(w.send(3, 'results', { key: 'b', value: '' }));
    expect(asked).toHaveLength(2);
    await settled(w.stop());
  });

  it('asks no witness when the send itself failed (nothing of the batch can be committed)', async () => {
    const kafka = new FakeKafka();
    const { witness, asked } = witnessOf();
    const w = writers(kafka, {}, witness);
    await settled(w.open([3]));
    kafka.sendHook = (n) => {
      if (n === 0) throw Object.assign(new Error('NOT_LEADER_FOR_PARTITION'), { retriable: true });
    };
    await settled(w.send(3, 'results', { key: 'a', value: '' }));
    expect(asked).toEqual([]);
    expect(kafka.keys()).toEqual([['a'], ['a']]);
    await settled(w.stop());
  });

  it('makes a new producer (the id initialised again) when the broker refuses its sequence after a leader change', async () => {
    const kafka = new FakeKafka();
    let renewed = 0;
    const w = writers(kafka, { onProducerRenewed: () => (renewed += 1) });
    await settled(w.open([2]));
    // Every send of the first producer is refused, as a broker refuses it after a leader change.
    kafka.sendHook = () => {
      if (kafka.sent.at(-1)!.producer === 0)
        throw Object.assign(new Error('The broker received an out of order sequence number'), {
          type: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
          retriable: false,
        });
    };
    const sends = [w.send(2, 't', { key: 'a', value: '' }), w.send(2, 't', { key: 'b', value: '' })];
    await settled(Promise.all(sends));
    expect(kafka.sent.map((b) => b.producer)).toEqual([0, 1]);
    // The first producer's transaction failed at its first send (the first record alone).
    expect(kafka.keys()).toEqual([['a'], ['a', 'b']]);
    expect(kafka.configs).toHaveLength(2);
    expect(kafka.configs[1]!.transactionalId).toBe('grp-arrived-2');
    expect(kafka.log).toContain('disconnect 0');
    expect(kafka.log).toContain('abort 1 0'); // the new producer's initialisation
    expect(kafka.log).toContain('commit 1 2');
    expect(renewed).toBe(1);
    await settled(w.stop());
  });

  it('makes a new producer on UNKNOWN_PRODUCER_ID, INVALID_TXN_STATE and kafkajs transaction state errors', async () => {
    const failures = [
      Object.assign(new Error('unknown producer'), { type: 'UNKNOWN_PRODUCER_ID' }),
      new Error('x', { cause: { originalError: { type: 'INVALID_TXN_STATE' } } }),
      Object.assign(new Error('Transaction state exception: Cannot call "send" in state "ABORTING"'), {
        name: 'KafkaJSNonRetriableError',
      }),
    ];
    for (const failure of failures) {
      const kafka = new FakeKafka();
      const w = writers(kafka);
      await settled(w.open([0]));
      kafka.commitHook = (n) => {
        if (n === 0) throw failure;
      };
      await settled(w.send(0, 't', { key: 'a', value: '' }));
      expect(kafka.sent.map((b) => b.producer)).toEqual([0, 1]);
      expect(kafka.log).toContain('commit 1 1');
      await settled(w.stop());
    }
  });

  it('does not initialise the id again once the partition was revoked during the back-off', async () => {
    const kafka = await revokedInBackOff(
      Object.assign(new Error('out of order'), { type: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }),
    );
    expect(kafka.configs).toHaveLength(1);
  });

  it('retries a transaction refused with CONCURRENT_TRANSACTIONS on the same producer, quietly and soon', async () => {
    const kafka = new FakeKafka();
    const warnings: unknown[] = [];
    const logger = {
      ...silentLogger,
      warn: (o: unknown) => warnings.push(o),
    } as unknown as typeof silentLogger;
    let concurrent = 0;
    const w = writers(kafka, { logger, onConcurrentTransaction: () => (concurrent += 1) });
    await settled(w.open([0]));
    kafka.sendHook = (n) => {
      if (n < 3)
        throw Object.assign(new Error('concurrent'), { type: 'CONCURRENT_TRANSACTIONS', retriable: true });
    };
    const sent = w.send(0, 't', { key: 'a', value: '' });
    await tick(5 + 3 * 40);
    await settled(sent);
    expect(kafka.sent.map((b) => b.producer)).toEqual([0, 0, 0, 0]);
    expect(concurrent).toBe(3);
    expect(warnings).toEqual([]);
    expect(kafka.configs).toHaveLength(1);
    await settled(w.stop());
  });

  it('fails the batch when fenced, without an abort, and refuses every later record of the partition', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka);
    await settled(w.open([0, 1]));
    kafka.commitHook = () => {
      throw Object.assign(new Error('fenced'), { type: 'PRODUCER_FENCED' });
    };
    const sent = w.send(0, 't', { key: 'a', value: '' });
    await expect(settled(sent)).rejects.toBeInstanceOf(FencedError);
    await expect(settled(sent)).rejects.toMatchObject({ partition: 0 });
    expect(kafka.log.filter((l) => l.startsWith('abort 0'))).toEqual(['abort 0 0']); // only the open's
    expect(() => w.stage(0, 't', { key: 'b', value: '' })).toThrow(FencedError);
    await expect(settled(w.send(0, 't', { key: 'b', value: '' }))).rejects.toBeInstanceOf(FencedError);
    expect(kafka.sent).toHaveLength(1);
    await settled(w.stop());
  });

  it('fails the records gathered behind a transaction that turns out fenced', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 1 });
    await settled(w.open([0]));
    let fail: () => void = () => undefined;
    kafka.commitHook = () =>
      new Promise<void>(
        (_, reject) =>
          (fail = () => reject(Object.assign(new Error('epoch'), { type: 'INVALID_PRODUCER_EPOCH' }))),
      );
    const first = w.send(0, 't', { key: 'a', value: '' });
    await tick(20);
    const queued = w.send(0, 't', { key: 'b', value: '' });
    fail();
    await expect(first).rejects.toBeInstanceOf(FencedError);
    await expect(queued).rejects.toBeInstanceOf(FencedError);
    await tick(20);
    expect(kafka.keys()).toEqual([['a']]);
    await settled(w.stop());
  });

  it('on revoke drops the gathered records (NotOwnedError), sends nothing and closes the producer', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 50 });
    await settled(w.open([0, 1]));
    const dropped = w.send(0, 't', { key: 'a', value: '' });
    const kept = w.send(1, 't', { key: 'b', value: '' });
    await w.close([0]);
    await expect(dropped).rejects.toBeInstanceOf(NotOwnedError);
    expect(w.owns(0)).toBe(false);
    expect(() => w.stage(0, 't', { key: 'c', value: '' })).toThrow(NotOwnedError);
    expect(kafka.log).toContain('disconnect 0');
    await settled(kept);
    await tick(60);
    expect(kafka.keys()).toEqual([['b']]);
    await settled(w.stop());
  });

  it('does not send a failed batch again once the partition was revoked during the back-off', async () => {
    const kafka = await revokedInBackOff(Object.assign(new Error('NOT_COORDINATOR'), { retriable: true }));
    expect(kafka.sent).toHaveLength(1);
  });

  it('at shutdown commits the gathered records before closing the producers', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 1000 });
    await settled(w.open([0]));
    const sent = w.send(0, 't', { key: 'a', value: '' });
    await settled(w.stop());
    await settled(sent);
    expect(kafka.log.slice(-2)).toEqual(['commit 0 1', 'disconnect 0']);
  });

  it('at shutdown drains more than one batch behind a transaction in flight, one transaction at a time', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { lingerMs: 1, maxBatch: 2 });
    await settled(w.open([0]));
    let open = 0;
    let overlapped = false;
    let release: () => void = () => undefined;
    kafka.beginHook = () => {
      overlapped ||= open > 0;
      open += 1;
    };
    kafka.commitHook = async (n) => {
      if (n === 0) await new Promise<void>((r) => (release = r));
      else await tick(1);
      open -= 1;
    };
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const first = w.send(0, 't', { key: 'a', value: '' });
    await tick(20); // 'a' is in a transaction, held at its commit
    const rest = keys.slice(1).map((k) => w.send(0, 't', { key: k, value: '' }));
    const stopped = w.stop();
    release();
    await settled(stopped);
    await settled(Promise.all([first, ...rest]));
    expect(overlapped).toBe(false);
    expect(kafka.keys()).toEqual([['a'], ['b', 'c'], ['d', 'e'], ['f', 'g']]);
    expect(kafka.log.at(-1)).toBe('disconnect 0');
  });

  it('refuses a record larger than its topic takes, at once', async () => {
    const kafka = new FakeKafka();
    const w = writers(kafka, { limitFor: () => 100 });
    await settled(w.open([0]));
    expect(() => w.stage(0, 't', { key: 'a', value: 'x'.repeat(200) })).toThrow(MessageTooLargeError);
    await settled(w.stop());
    expect(kafka.sent).toHaveLength(0);
  });
});

describe('isFencing', () => {
  it('finds a fencing error wrapped in causes', () => {
    expect(isFencing({ type: 'PRODUCER_FENCED' })).toBe(true);
    expect(isFencing(new Error('x', { cause: { originalError: { type: 'INVALID_PRODUCER_EPOCH' } } }))).toBe(
      true,
    );
    expect(isFencing(new FencedError(3))).toBe(true);
    expect(isFencing(new Error('NOT_COORDINATOR'))).toBe(false);
    expect(isFencing({ type: 'CONCURRENT_TRANSACTIONS' })).toBe(false);
    expect(isFencing(undefined)).toBe(false);
    expect(isFencing({ type: 'OUT_OF_ORDER_SEQUENCE_NUMBER' })).toBe(false);
  });

  it('tells failures fatal to a producer from fences and from transient ones', () => {
    expect(isFatalToProducer({ type: 'OUT_OF_ORDER_SEQUENCE_NUMBER' })).toBe(true);
    expect(isFatalToProducer({ errors: [{ type: 'UNKNOWN_PRODUCER_ID' }] })).toBe(true);
    expect(isFatalToProducer(new Error('x', { cause: { type: 'INVALID_TXN_STATE' } }))).toBe(true);
    expect(
      isFatalToProducer(new Error('Transaction state exception: Cannot call "commit" in state "READY"')),
    ).toBe(true);
    expect(isFatalToProducer({ type: 'INVALID_PRODUCER_EPOCH' })).toBe(false);
    expect(isFatalToProducer({ type: 'PRODUCER_FENCED' })).toBe(false);
    expect(isFatalToProducer({ type: 'CONCURRENT_TRANSACTIONS' })).toBe(false);
    expect(isFatalToProducer(new Error('NOT_COORDINATOR'))).toBe(false);
    expect(isConcurrentTransaction({ cause: { type: 'CONCURRENT_TRANSACTIONS' } })).toBe(true);
    expect(isConcurrentTransaction({ type: 'NOT_COORDINATOR' })).toBe(false);
  });
});
