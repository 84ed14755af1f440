import { jest } from '@jest/globals';
import { ApiHealth, GateClosedError } from './health.js';

/** Lets fake time pass (the tests that wait use fake timers). */
const sleep = (ms: number) => jest.advanceTimersByTimeAsync(ms);

function quickHealth(): ApiHealth {
  return new ApiHealth({ failuresToTrip: 3, tripAfterMs: 0, probeMinMs: 20, probeMaxMs: 40 });
}

describe('ApiHealth', () => {
  afterEach(() => jest.useRealTimers());
  it('lets calls through while the API answers, whatever a few failures say', async () => {
    const health = quickHealth();
    health.onTransientFailure();
    health.onTransientFailure();
    health.onAnswer();
    health.onTransientFailure();
    expect(health.available).toBe(true);
    await expect(health.pass(Number.POSITIVE_INFINITY)).resolves.toBeUndefined();
  });

  it('remembers when a call last got an answer', async () => {
    jest.useFakeTimers();
    const health = quickHealth();
    expect(health.answeredWithin(10_000)).toBe(false);
    health.onAnswer();
    await sleep(9_000);
    expect(health.answeredWithin(10_000)).toBe(true);
    health.onTransientFailure();
    await sleep(2_000);
    expect(health.answeredWithin(10_000)).toBe(false);
    health.onAnswer();
    expect(health.answeredWithin(10_000)).toBe(true);
  });

  it('needs the failures to span tripAfterMs: one burst of in-flight failures is no outage', () => {
    const health = new ApiHealth({ failuresToTrip: 3, tripAfterMs: 60_000 });
    for (let i = 0; i < 50; i++) health.onTransientFailure();
    expect(health.available).toBe(true);
  });

  it('marks the API unavailable after failures in a row, tells listeners both ways', () => {
    const health = quickHealth();
    const changes: boolean[] = [];
    health.onChange((available) => changes.push(available));
    for (let i = 0; i < 3; i++) health.onTransientFailure();
    expect(health.available).toBe(false);
    health.onAnswer();
    expect(health.available).toBe(true);
    expect(changes).toEqual([false, true]);
    health.close();
  });

  it('holds calls at the gate and lets one through at a time as the probe', async () => {
    jest.useFakeTimers();
    const health = quickHealth();
    for (let i = 0; i < 3; i++) health.onTransientFailure();
    const passed: number[] = [];
    for (let i = 0; i < 3; i++) void health.pass(Number.POSITIVE_INFINITY).then(() => passed.push(i));
    await sleep(5);
    expect(passed).toEqual([]);
    // The first probe tick (10-20 ms) releases one call; the next ones come ticks later.
    for (let i = 0; i < 100 && passed.length === 0; i++) await sleep(2);
    expect(passed.length).toBe(1);
    // The API answers: everyone goes.
    health.onAnswer();
    await sleep(1);
    expect(passed.sort()).toEqual([0, 1, 2]);
    health.close();
  });

  it('refuses a call whose time runs out at the gate', async () => {
    const health = new ApiHealth({ failuresToTrip: 1, tripAfterMs: 0, probeMinMs: 10_000 });
    health.onTransientFailure();
    await expect(health.pass(performance.now() + 20)).rejects.toBeInstanceOf(GateClosedError);
    health.close();
  });

  it('probes by itself when no call waits, until the API answers', async () => {
    jest.useFakeTimers();
    const health = quickHealth();
    let probes = 0;
    health.probe = async () => {
      probes += 1;
      if (probes < 3) health.onTransientFailure();
      else health.onAnswer();
    };
    for (let i = 0; i < 3; i++) health.onTransientFailure();
    for (let i = 0; i < 50 && !health.available; i++) await sleep(10);
    expect(health.available).toBe(true);
    expect(probes).toBe(3);
    await sleep(60);
    expect(probes).toBe(3);
  });
});
