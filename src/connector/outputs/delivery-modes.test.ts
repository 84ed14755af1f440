/**
 * How exactly-once routes outputs and state records (`delivery-modes.ts`), on the real TransactionalWriters
 * with a stand-in for kafkajs' transactional producer: a result sent with `stateFollows` and the
 * state record its caller writes next share one transaction; records of no input partition go
 * through the plain producer; a revoked or fenced partition refuses them.
 */
import { jest } from '@jest/globals';
import type { OutgoingMessage } from '../../kafka/producer.js';
import { NotOwnedError, TransactionalWriters } from '../../kafka/transactions.js';
import { silentLogger } from '../../observability/logger.js';
import { settledOnFakeTime } from '../../util/test-helpers.js';
import type { LoopState } from '../consumer/loop-interfaces.js';
import { transactionalLoopState, transactionalOutputs, transactionalStates } from './delivery-modes.js';

/** What TransactionalWriters is built on (the Kafka client library's client). */
type Kafka = ConstructorParameters<typeof TransactionalWriters>[0];

interface Txn {
  records: Array<[string, string]>;
  outcome: 'open' | 'committed' | 'aborted';
}

/** Records what each transaction held and how it ended; `failCommits` commits fail (retriable). */
function fakeKafka(failCommits = 0) {
  const txns: Txn[] = [];
  let failures = failCommits;
  const kafka = {
    producer: () => ({
      connect: async () => undefined,
      disconnect: async () => undefined,
      transaction: async () => {
        const t: Txn = { records: [], outcome: 'open' };
        txns.push(t);
        return {
          sendBatch: async (b: { topicMessages: Array<{ topic: string; messages: OutgoingMessage[] }> }) => {
            for (const tm of b.topicMessages)
              for (const m of tm.messages) t.records.push([tm.topic, String(m.key)]);
          },
          commit: async () => {
            if (failures-- > 0) throw Object.assign(new Error('NOT_COORDINATOR'), { retriable: true });
            t.outcome = 'committed';
          },
          abort: async () => {
            t.outcome = 'aborted';
          },
        };
      },
    }),
  } as unknown as Kafka;
  return { kafka, txns: () => txns.filter((t) => t.records.length > 0) };
}

function plainSender() {
  const sent: Array<[string, string]> = [];
  return { sent, send: async (topic: string, m: OutgoingMessage) => void sent.push([topic, String(m.key)]) };
}

describe('exactly-once routing', () => {
  it('puts a result and the state record that follows it in one transaction', async () => {
    const { kafka, txns } = fakeKafka();
    const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
    await writers.open([1]);
    const plain = plainSender();
    const outputs = transactionalOutputs(writers, plain);
    const states = transactionalStates(writers);
    // As a document's life does (`document-life.ts`): await the result's send, then write the state record.
    await outputs.send('fraud', { key: 'sub-1', value: 'r' }, { inputPartition: 1, stateFollows: true });
    await states.send('state', { key: 'evt-1', value: 's', partition: 1 }, { replace: true });
    expect(txns()).toEqual([
      {
        records: [
          ['fraud', 'sub-1'],
          ['state', 'evt-1'],
        ],
        outcome: 'committed',
      },
    ]);
    expect(plain.sent).toEqual([]);
    await writers.stop();
  });

  it('resends the pair after a failed commit, aborting the failed transaction', async () => {
    const { kafka, txns } = fakeKafka(1);
    const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
    await writers.open([0]);
    const outputs = transactionalOutputs(writers, plainSender());
    await outputs.send('fraud', { key: 'sub-1', value: 'r' }, { inputPartition: 0, stateFollows: true });
    await transactionalStates(writers).send('state', { key: 'evt-1', value: 's', partition: 0 });
    expect(txns().map((t) => [t.outcome, t.records.length])).toEqual([
      ['aborted', 2],
      ['committed', 2],
    ]);
    await writers.stop();
  });

  it('without stateFollows resolves only once the transaction committed', async () => {
    const { kafka, txns } = fakeKafka();
    const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
    await writers.open([0]);
    const outputs = transactionalOutputs(writers, plainSender());
    await outputs.send('dlq', { key: 'evt-2', value: 'l' }, { inputPartition: 0 });
    expect(txns().map((t) => t.outcome)).toEqual(['committed']);
    await writers.stop();
  });

  it('sends records of no input partition through the plain producer', async () => {
    const { kafka, txns } = fakeKafka();
    const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
    const plain = plainSender();
    await transactionalOutputs(writers, plain).send('dlq', { key: 'feedback-1', value: 'l' });
    expect(plain.sent).toEqual([['dlq', 'feedback-1']]);
    expect(txns()).toEqual([]);
  });

  it('refuses a result of a partition this instance does not own, and a state record without a partition', async () => {
    const { kafka } = fakeKafka();
    const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
    await writers.open([0]);
    await writers.close([0]);
    const outputs = transactionalOutputs(writers, plainSender());
    await expect(
      outputs.send('fraud', { key: 's', value: 'r' }, { inputPartition: 0, stateFollows: true }),
    ).rejects.toBeInstanceOf(NotOwnedError);
    await expect(
      outputs.send('fraud', { key: 's', value: 'r' }, { inputPartition: 0 }),
    ).rejects.toBeInstanceOf(NotOwnedError);
    await expect(transactionalStates(writers).send('state', { key: 'e', value: 's' })).rejects.toThrow(
      /names its partition/,
    );
  });

  it('a result staged before a revoke is dropped with its state record, and no rejection goes unhandled', async () => {
    const { kafka, txns } = fakeKafka();
    const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 50, logger: silentLogger });
    await writers.open([0]);
    // The linger runs on jest's fake clock; promise jobs and setImmediate stay real (rejections are seen).
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      await transactionalOutputs(writers, plainSender()).send(
        'fraud',
        { key: 's', value: 'r' },
        { inputPartition: 0, stateFollows: true },
      );
      const state = transactionalStates(writers).send('state', { key: 'e', value: 's', partition: 0 });
      await writers.close([0]);
      await expect(state).rejects.toBeInstanceOf(NotOwnedError);
      // Well past the linger: no transaction is sent, no rejection goes unhandled.
      await jest.advanceTimersByTimeAsync(1000);
      expect(txns()).toEqual([]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      jest.useRealTimers();
    }
  });

  describe('the state as the consumer loop sees it', () => {
    function store() {
      const moves: string[] = [];
      const state: LoopState = {
        assign: async (partitions) => void moves.push(`restore ${partitions.join(',')}`),
        revoke: (partitions) => void moves.push(`forget ${partitions.join(',')}`),
        unfinished: () => [],
      };
      return { state, moves };
    }

    it("opens a partition's producer before restoring it, and on revoke refuses its records at once", async () => {
      const { kafka, txns } = fakeKafka();
      const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
      const { state, moves } = store();
      const loopState = transactionalLoopState(state, writers, silentLogger);
      await loopState.assign([1]);
      expect(writers.owns(1)).toBe(true);
      loopState.revoke([1]);
      expect(moves).toEqual(['restore 1', 'forget 1']);
      await expect(
        transactionalStates(writers).send('state', { key: 'evt-1', value: 's', partition: 1 }),
      ).rejects.toBeInstanceOf(NotOwnedError);
      expect(txns()).toEqual([]);
    });

    /** Writers whose producers connect only once `connected` is called. */
    function slowWriters() {
      const { kafka } = fakeKafka();
      let connected!: () => void;
      const held = new Promise<void>((resolve) => (connected = resolve));
      const slow = {
        producer: (config: unknown) => ({
          ...(kafka as unknown as { producer: (c: unknown) => object }).producer(config),
          connect: () => held,
        }),
      } as unknown as Kafka;
      const writers = new TransactionalWriters(slow, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
      return { writers, connected: () => connected() };
    }

    it.each(['revoke', 'leave'] as const)(
      'restores nothing of a partition that went (%s) while its producer opened',
      async (how) => {
        const { writers, connected } = slowWriters();
        const { state, moves } = store();
        const loopState = transactionalLoopState(state, writers, silentLogger);
        const assigning = loopState.assign([1]);
        assigning.catch(() => undefined);
        await new Promise((resolve) => setImmediate(resolve));
        const close = how === 'revoke' ? loopState.revoke([1]) : loopState.leave!([1]);
        connected();
        await expect(assigning).rejects.toBeInstanceOf(NotOwnedError);
        expect(moves).toEqual(['forget 1']);
        close?.();
        await new Promise((resolve) => setImmediate(resolve));
        expect(writers.owns(1)).toBe(false);
      },
    );

    it('after a crash keeps the producer until closed: a state record the broker does not take yet commits once it does', async () => {
      // Three commits fail as while the broker is away (retriable), then it takes them.
      const { kafka, txns } = fakeKafka(3);
      const writers = new TransactionalWriters(kafka, { idPrefix: 'g-t', lingerMs: 5, logger: silentLogger });
      const { state, moves } = store();
      const loopState = transactionalLoopState(state, writers, silentLogger);
      await loopState.assign([1]);
      const close = loopState.leave!([1]);
      expect(moves).toEqual(['restore 1', 'forget 1']);
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
      try {
        // The barrier before the next join records a create sent for partition 1.
        const recorded = transactionalStates(writers).send(
          'state',
          { key: 'evt-1', value: 's', partition: 1 },
          { replace: true },
        );
        await settledOnFakeTime(recorded, 30_000);
        expect(txns().map((t) => t.outcome)).toEqual(['aborted', 'aborted', 'aborted', 'committed']);
        expect(txns().at(-1)!.records).toEqual([['state', 'evt-1']]);
        close();
        expect(writers.owns(1)).toBe(false);
        await expect(
          transactionalStates(writers).send('state', { key: 'evt-2', value: 's', partition: 1 }),
        ).rejects.toBeInstanceOf(NotOwnedError);
      } finally {
        jest.useRealTimers();
      }
    });
  });
});
