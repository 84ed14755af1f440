import { jest } from '@jest/globals';
import { silentLogger } from '../../observability/logger.js';
import type { LoopEngine, LoopState } from './loop-interfaces.js';
import { PartitionPreparation } from './partition-preparation.js';

function parts(failFirst: number) {
  const assigned: number[][] = [];
  const resumed: number[] = [];
  let failures = failFirst;
  const state: LoopState = {
    assign: async (partitions) => {
      assigned.push(partitions);
      if (failures > 0) {
        failures -= 1;
        throw new Error('the changelog could not be read');
      }
    },
    revoke: () => undefined,
    unfinished: (partition) => [{ partition } as never],
  };
  const engine: LoopEngine = {
    inFlight: 0,
    unfinishedOn: () => 0,
    resume: async (states) => {
      for (const s of states) resumed.push((s as unknown as { partition: number }).partition);
    },
    revoke: () => 0,
  };
  return { assigned, resumed, state, engine };
}

/** Moves jest's fake clock on 1 ms at a time until `what()` holds, for at most 1 s of it. */
const until = async (what: () => boolean) => {
  for (let i = 0; i < 1000 && !what(); i++) await jest.advanceTimersByTimeAsync(1);
};

/** A promise and the call that resolves it. */
function held<T = void>(): { promise: Promise<T>; release: (value: T) => void } {
  let release!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (release = resolve));
  return { promise, release };
}

describe('PartitionPreparation', () => {
  // The retries' waits run on the fake clock; promise jobs, nextTick and setImmediate stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('prepares a gained partition once: state restored, offsets started at the group’s, documents resumed', async () => {
    const p = parts(0);
    const started: Array<[number, string]> = [];
    const prep = new PartitionPreparation({
      ...p,
      logger: silentLogger,
      committedOffsets: async () => new Map([[3, '42']]),
      startAt: (partition, offset) => started.push([partition, offset]),
    });
    prep.gained([3]);
    await prep.prepare(3);
    await prep.prepare(3);
    expect(p.assigned).toEqual([[3]]);
    expect(started).toEqual([[3, '42']]);
    expect(p.resumed).toEqual([3]);
    prep.stop();
  });

  it('retries a failed preparation by itself while the partition is held, without waiting for a batch', async () => {
    const p = parts(2);
    const prep = new PartitionPreparation({
      ...p,
      logger: silentLogger,
      startAt: () => undefined,
      retry: { initialMs: 5, maxMs: 5 },
    });
    prep.gained([1]);
    await until(() => p.resumed.length > 0);
    expect(p.assigned).toEqual([[1], [1], [1]]);
    expect(p.resumed).toEqual([1]);
    prep.stop();
  });

  it('resumes nothing of a partition that left while its state was restored', async () => {
    const p = parts(0);
    const restore = held();
    p.state.assign = async (partitions) => {
      p.assigned.push(partitions);
      await restore.promise;
    };
    const started: number[] = [];
    const prep = new PartitionPreparation({
      ...p,
      logger: silentLogger,
      committedOffsets: async () => new Map([[5, '9']]),
      startAt: (partition) => started.push(partition),
    });
    const preparing = prep.prepare(5);
    preparing.catch(() => undefined);
    await until(() => p.assigned.length > 0);
    prep.forget(5);
    restore.release();
    await expect(preparing).rejects.toThrow(/partition 5 left while it was being prepared/);
    expect(started).toEqual([]);
    expect(p.resumed).toEqual([]);
    prep.stop();
  });

  it('resumes nothing of a partition that left while the group’s offsets were read', async () => {
    const p = parts(0);
    const offsets = held<ReadonlyMap<number, string | null>>();
    const started: number[] = [];
    const prep = new PartitionPreparation({
      ...p,
      logger: silentLogger,
      committedOffsets: () => offsets.promise,
      startAt: (partition) => started.push(partition),
    });
    prep.gained([6]);
    await until(() => p.assigned.length > 0);
    prep.forget(6);
    offsets.release(new Map([[6, '3']]));
    await jest.advanceTimersByTimeAsync(100);
    expect(started).toEqual([]);
    expect(p.resumed).toEqual([]);
    prep.stop();
  });

  it('resumes a partition that left and came back once, by its new preparation', async () => {
    const p = parts(0);
    const first = held();
    let calls = 0;
    p.state.assign = async (partitions) => {
      p.assigned.push(partitions);
      if (calls++ === 0) await first.promise;
    };
    const prep = new PartitionPreparation({ ...p, logger: silentLogger, startAt: () => undefined });
    prep.gained([7]);
    await until(() => p.assigned.length > 0);
    prep.forget(7);
    prep.gained([7]);
    await until(() => p.resumed.length > 0);
    first.release();
    await jest.advanceTimersByTimeAsync(100);
    expect(p.assigned).toEqual([[7], [7]]);
    expect(p.resumed).toEqual([7]);
    prep.stop();
  });

  it('stops retrying a partition that left', async () => {
    const p = parts(100);
    const prep = new PartitionPreparation({
      ...p,
      logger: silentLogger,
      startAt: () => undefined,
      retry: { initialMs: 5, maxMs: 5 },
    });
    prep.gained([2]);
    await until(() => p.assigned.length >= 2);
    prep.forget(2);
    const attempts = p.assigned.length;
    // A hundred retry intervals: none is tried.
    await jest.advanceTimersByTimeAsync(500);
    expect(p.assigned.length).toBe(attempts);
    prep.stop();
  });
});
