import { applyConfigPatch, defaultConfig, mergeDeep, SandboxConfigError } from './config.js';
import { drawDuration, seededRandom } from './random.js';
import { formatRetryAfter, RateLimiter } from './rate-limit.js';

describe('config', () => {
  test('patches merge deeply; arrays and null replace', () => {
    const merged = mergeDeep({ a: { b: 1, c: 2 }, d: [1, 2], e: { f: 1 } }, { a: { b: 5 }, d: [3], e: null });
    expect(merged).toEqual({ a: { b: 5, c: 2 }, d: [3], e: null });
  });

  test('unknown keys and bad values are rejected naming the field', () => {
    const base = defaultConfig();
    expect(() => applyConfigPatch(base, { faults: { errorRat: 1 } })).toThrow(/faults\.errorRat/);
    expect(() => applyConfigPatch(base, { webhook: { secret: 'plain' } })).toThrow(/webhook\.secret/);
    expect(() => applyConfigPatch(base, { clients: [{ clientId: 'x', scopes: [] }] })).toThrow(/clients\.0/);
    expect(() => applyConfigPatch(base, [])).toThrow(SandboxConfigError);
    expect(applyConfigPatch(base, { rateLimit: { ratePerSecond: 2, burst: 4 } }).rateLimit).toEqual({
      ratePerSecond: 2,
      burst: 4,
    });
  });
});

describe('random draws', () => {
  test('a seed makes draws reproducible and distributions respect their bounds', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const d = { distribution: 'uniform' as const, meanMs: 100, minMs: 50, maxMs: 150 };
    const xs = Array.from({ length: 100 }, () => drawDuration(a, d));
    expect(xs).toEqual(Array.from({ length: 100 }, () => drawDuration(b, d)));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(50);
    expect(Math.max(...xs)).toBeLessThanOrEqual(150);
    const e = { distribution: 'exponential' as const, meanMs: 100, maxMs: 300 };
    const ys = Array.from({ length: 500 }, () => drawDuration(a, e));
    expect(Math.max(...ys)).toBeLessThanOrEqual(300);
    expect(drawDuration(a, { distribution: 'fixed', meanMs: 7 })).toBe(7);
  });
});

describe('RateLimiter', () => {
  test('allows a burst, then waits for the refill', () => {
    const limiter = new RateLimiter();
    const limit = { ratePerSecond: 2, burst: 2 };
    expect(limiter.take('c', limit, 0)).toBe(0);
    expect(limiter.take('c', limit, 0)).toBe(0);
    expect(limiter.take('c', limit, 0)).toBe(500);
    expect(limiter.take('other', limit, 0)).toBe(0);
    expect(limiter.take('c', limit, 500)).toBe(0);
  });

  test('Retry-After as seconds or HTTP date', () => {
    expect(formatRetryAfter(1200, 'seconds')).toBe('2');
    expect(formatRetryAfter(10, 'seconds')).toBe('1');
    expect(formatRetryAfter(1000, 'http-date', Date.parse('2024-01-01T00:00:00Z'))).toBe(
      'Mon, 01 Jan 2024 00:00:01 GMT',
    );
  });
});
