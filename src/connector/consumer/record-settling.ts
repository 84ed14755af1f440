/**
 * How one input record's handling ends, whatever its handler throws: the consumer loop runs
 * every record through `settleRecord`, so that no record stops the loop, its partition or the others.
 *
 * - resolved: the record's outcome is durable (recorded, or dead-lettered by the handler);
 * - a dependency is down (`isOutage`: the input pauses): tried again once it answers, never lost nor
 *   dead-lettered;
 * - worth trying again (`retriable`: Kafka did not acknowledge the state or the dead letter, an API answer
 *   the handler throws for a retry): tried again after a back-off;
 * - anything else (a fault the record brings, or a bug its handling meets): the record ends with a
 *   dead letter (`end`), tried again like the rest should Kafka not take the dead letter.
 *
 * The record is given up (`abandoned`) when its partition left or the instance stops: its offset is
 * then not committed here, and its next reader takes it again from the state's point of view.
 */
import type { Logger } from '../../observability/logger.js';
import { retry } from '../../util/retry.js';

export interface RecordSettling {
  /** Runs the record's handler once. */
  handle(): Promise<void>;
  isOutage(err: unknown): boolean;
  /** Pauses the input for the outage; resolves when it is over, or at once when the record is given up. */
  outage(err: unknown): Promise<void>;
  retriable(err: unknown): boolean;
  /** Ends the record with a dead letter saying why its handling failed. */
  end(err: unknown): Promise<void>;
  /** True once the record must be given up (its partition left, the instance stops). */
  abandoned(): boolean;
  /** Sleeps, or less when the record is given up meanwhile. */
  sleep(ms: number): Promise<void>;
  logger: Logger;
  /** Where the record came from, for the log. */
  where: { topic: string; partition: number; offset: string };
  backoff?: { initialMs: number; maxMs: number };
}

/** A failure after which the next try is a different one: after an outage, or the dead letter instead of the handler. */
class TryChanged {
  constructor(readonly cause: unknown) {}
}

/** Resolves `done` once the record's outcome is durable, `abandoned` when it was given up first. */
export async function settleRecord(s: RecordSettling): Promise<'done' | 'abandoned'> {
  let failure: unknown = null;
  const abandoned = new Error('record given up');
  try {
    await retry(
      async () => {
        if (s.abandoned()) throw abandoned;
        try {
          if (failure === null) await s.handle();
          else await s.end(failure);
        } catch (err) {
          if (s.isOutage(err)) {
            await s.outage(err);
            throw new TryChanged(err);
          }
          if (failure === null && !s.retriable(err)) {
            // The record's own fault, or a bug: a dead letter ends it rather than a crash met at every restart.
            s.logger.error(
              { ...s.where, err: (err as Error)?.message ?? String(err) },
              'handling a record failed; it ends in a dead letter',
            );
            failure = err;
            throw new TryChanged(err);
          }
          throw err;
        }
      },
      {
        backoff: s.backoff ?? { initialMs: 200, maxMs: 10_000 },
        classify: (err) => {
          if (err === abandoned) return { retry: false };
          return err instanceof TryChanged ? { retry: true, immediately: true } : { retry: true };
        },
        onRetry: (err, tries, delayMs) => {
          if (err instanceof TryChanged) return;
          s.logger.warn(
            { ...s.where, attempt: tries - 1, delayMs, err: (err as Error)?.message ?? String(err) },
            'record not settled yet (Kafka did not take its outcome, or its blob or the API said not now); trying again',
          );
        },
        clock: { now: () => Date.now(), sleep: (ms) => s.sleep(ms) },
      },
    );
    return 'done';
  } catch (err) {
    if (err === abandoned) return 'abandoned';
    throw err instanceof TryChanged ? err.cause : err;
  }
}
