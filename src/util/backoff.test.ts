import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  it('grows exponentially, is capped, and keeps at least half the nominal delay', () => {
    const b = { initialMs: 500, maxMs: 10000 };
    expect(backoffDelay(0, b, () => 0)).toBe(250);
    expect(backoffDelay(0, b, () => 1)).toBe(500);
    expect(backoffDelay(3, b, () => 1)).toBe(4000);
    expect(backoffDelay(10, b, () => 1)).toBe(10000);
    expect(backoffDelay(10, b, () => 0)).toBe(5000);
  });

  it('does not overflow for very high attempt numbers', () => {
    expect(backoffDelay(5000, { initialMs: 1, maxMs: 60_000 }, () => 1)).toBe(60_000);
  });
});

describe('backoffDelay without jitter', () => {
  it('grows by the factor and is capped', () => {
    const b = { initialMs: 100, maxMs: 300, factor: 1.6, jitter: false };
    expect([0, 1, 2, 3].map((a) => backoffDelay(a, b, () => 0))).toEqual([100, 160, 256, 300]);
  });
});
