/**
 * How outputs and state records reach Kafka under each `connector.delivery`:
 * - at-least-once: the shared idempotent producer (`CoalescingSender`); a crash between a result and
 *   its state record publishes the result again after the restart.
 * - exactly-once: each input partition's transactional producer (`kafka/transactions.ts`). A state
 *   record goes in its input partition's transaction; an output sent with `stateFollows` is put in
 *   that transaction at once and the caller's next step, the state record saying it was published,
 *   lands in the same one (no I/O between them, and a transaction takes its records only in a timer
 *   callback), so both commit or neither does. Records that belong to no owned input partition (a
 *   dead letter about a feedback record, or about a submission's delete) go through the idempotent
 *   producer.
 */
import type { CoalescingSender, SendOptions } from '../../kafka/coalescer.js';
import type { OutgoingMessage } from '../../kafka/producer.js';
import { NotOwnedError, type TransactionalWriters } from '../../kafka/transactions.js';
import type { Logger } from '../../observability/logger.js';
import type { LoopState } from '../consumer/loop-interfaces.js';
import type { OutputSender } from './output.js';

export type Delivery = 'at-least-once' | 'exactly-once';

type Sender = Pick<CoalescingSender, 'send'>;

/** The sender of output records under exactly-once. */
export function transactionalOutputs(writers: TransactionalWriters, plain: Sender): OutputSender {
  return {
    send(topic, message, options = {}) {
      if (options.inputPartition === undefined) return plain.send(topic, message);
      if (!options.stateFollows) return writers.send(options.inputPartition, topic, message);
      try {
        const committed = writers.stage(options.inputPartition, topic, message);
        // The state record that follows fails too when this transaction does: its caller retries.
        committed.catch(() => undefined);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}

/**
 * The sender of state records under exactly-once: each in its input partition's transaction (which
 * lingers on its own, so a `lazy` record is sent like any other).
 */
export function transactionalStates(writers: TransactionalWriters): Sender {
  return {
    send(topic: string, message: OutgoingMessage, options: SendOptions = {}) {
      if (message.partition === undefined)
        return Promise.reject(new Error('a state record names its partition (the input partition)'));
      return writers.send(message.partition, topic, message, { replace: options.replace });
    },
  };
}

/**
 * The state as the consumer loop sees it under exactly-once: a partition's transactional id is
 * initialised (fencing its previous owner and aborting that owner's open transaction) before its
 * state is restored and anything admitted; on revoke its gathered records are dropped and its
 * producer closed. After a crash (`leave`) the producers stay open until the barrier before the
 * next join recorded the creates sent for those partitions: a write the broker does not take yet is
 * retried in its transaction, not refused as not owned. Kept open meanwhile is safe: once another
 * member initialised the partition's id, this producer is fenced and writes nothing more.
 */
export function transactionalLoopState(
  state: LoopState,
  writers: TransactionalWriters,
  logger: Pick<Logger, 'warn'>,
): LoopState {
  // A writer that fails to close had its transaction aborted: the partition's next owner fences it.
  const close = (partitions: number[]): void => {
    writers
      .close(partitions)
      .catch((err: unknown) =>
        logger.warn(
          { partitions, err: (err as Error).message },
          'transactional writer did not close cleanly',
        ),
      );
  };
  // Per partition, how many times it was revoked or left: an assign whose producers opened across
  // one restores nothing (after a leave the producer stays open until the barrier closes it).
  const departures = new Map<number, number>();
  const depart = (partitions: number[]): void => {
    for (const p of partitions) departures.set(p, (departures.get(p) ?? 0) + 1);
  };
  return {
    assign: async (partitions) => {
      const seen = partitions.map((p) => departures.get(p) ?? 0);
      await writers.open(partitions);
      const gone = partitions.find((p, i) => (departures.get(p) ?? 0) !== seen[i]);
      if (gone !== undefined) throw new NotOwnedError(gone);
      await state.assign(partitions);
    },
    revoke: (partitions) => {
      depart(partitions);
      state.revoke(partitions);
      close(partitions);
    },
    leave: (partitions) => {
      depart(partitions);
      state.revoke(partitions);
      return () => close(partitions);
    },
    unfinished: (partition) => state.unfinished(partition),
  };
}
