import { jest } from '@jest/globals';
import { RestoreGarbage } from './restore-garbage.js';

function make(thresholdRecords = 100) {
  const collected: number[] = [];
  let calls = 0;
  const garbage = new RestoreGarbage({
    thresholdRecords,
    quietMs: 1000,
    collect: async () => void calls++,
    onCollected: (records) => collected.push(records),
  });
  return { garbage, collected, calls: () => calls };
}

/** A RestoreGarbage past its first collection (the one after start-up), with that one forgotten. */
async function started(thresholdRecords = 100) {
  const made = make(thresholdRecords);
  made.garbage.restoreStarted();
  made.garbage.restoreEnded();
  await elapse(1000);
  expect(made.collected).toEqual([0]);
  made.collected.length = 0;
  return { ...made, calls: () => made.calls() - 1 };
}

/** Runs the quiet timer and the collection it starts. */
async function elapse(ms: number): Promise<void> {
  await jest.advanceTimersByTimeAsync(ms);
}

describe('RestoreGarbage', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('collects once, a quiet moment after a restore that read enough records', async () => {
    const { garbage, collected, calls } = await started();
    garbage.restoreStarted();
    garbage.read(150);
    garbage.restoreEnded();
    await elapse(999);
    expect(calls()).toBe(0);
    await elapse(1);
    expect(calls()).toBe(1);
    expect(collected).toEqual([150]);
    // Nothing read since: nothing more to collect.
    garbage.restoreStarted();
    garbage.restoreEnded();
    await elapse(5000);
    expect(calls()).toBe(1);
  });

  it('does not collect for small restores, until together they are worth it', async () => {
    const { garbage, collected } = await started();
    for (const records of [40, 40]) {
      garbage.restoreStarted();
      garbage.read(records);
      garbage.restoreEnded();
      await elapse(2000);
    }
    expect(collected).toEqual([]);
    garbage.restoreStarted();
    garbage.read(40);
    garbage.restoreEnded();
    await elapse(1000);
    expect(collected).toEqual([120]);
  });

  it('waits until no restore is under way: overlapping restores of a rebalance pay one collection', async () => {
    const { garbage, collected } = await started();
    garbage.restoreStarted();
    garbage.restoreStarted();
    garbage.read(200);
    garbage.restoreEnded();
    await elapse(5000);
    expect(collected).toEqual([]);
    garbage.read(200);
    garbage.restoreEnded();
    await elapse(1000);
    expect(collected).toEqual([400]);
  });

  it('a restore starting within the quiet time puts the collection after it', async () => {
    const { garbage, collected } = await started();
    garbage.restoreStarted();
    garbage.read(200);
    garbage.restoreEnded();
    await elapse(500);
    garbage.restoreStarted();
    await elapse(5000);
    expect(collected).toEqual([]);
    garbage.restoreEnded();
    await elapse(1000);
    expect(collected).toEqual([200]);
  });

  it('collects after a revoke dropped many documents', async () => {
    const { garbage, collected } = await started();
    garbage.dropped(50);
    await elapse(2000);
    expect(collected).toEqual([]);
    garbage.dropped(70);
    await elapse(1000);
    expect(collected).toEqual([120]);
  });

  it('collects after the first restore whatever it read: starting left garbage of its own', async () => {
    const { garbage, collected } = make();
    garbage.restoreStarted();
    garbage.restoreStarted();
    garbage.restoreEnded();
    garbage.restoreEnded();
    await elapse(1000);
    expect(collected).toEqual([0]);
    garbage.restoreStarted();
    garbage.read(10);
    garbage.restoreEnded();
    await elapse(5000);
    expect(collected).toEqual([0]);
  });

  it('collects nothing once stopped', async () => {
    const { garbage, calls } = make();
    garbage.restoreStarted();
    garbage.read(500);
    garbage.restoreEnded();
    garbage.stop();
    await elapse(5000);
    garbage.dropped(500);
    await elapse(5000);
    expect(calls()).toBe(0);
  });

  it('a collection that fails is reported done and leaves the store as it was', async () => {
    const collected: number[] = [];
    const garbage = new RestoreGarbage({
      thresholdRecords: 10,
      quietMs: 10,
      collect: () => Promise.reject(new Error('no inspector')),
      onCollected: (records) => collected.push(records),
    });
    garbage.dropped(20);
    await elapse(10);
    expect(collected).toEqual([20]);
  });
});
