import { applyConfigPatch, defaultConfig, mergeDeep, redactConfig, SandboxConfigError } from './config.js';
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

describe('an organisation in several cells', () => {
  const KEY = '-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n';
  const base = defaultConfig();
  const acme = { name: 'acme', cells: ['eu-1'], applications: [{ clientId: 'acme-app', clientSecret: 'x' }] };

  test('a single-cell config has no cells and no tenants, and keeps its old keys as they were', () => {
    expect(base.cells).toEqual({});
    expect(base.tenants).toEqual([]);
    const old = applyConfigPatch(base, { port: 9000, rateLimit: { ratePerSecond: 1, burst: 1 } });
    expect(old.clients[0]?.clientId).toBe('sandbox-client');
    expect(old.port).toBe(9000);
  });

  test('tenants must live in a served cell, once; their applications need credentials', () => {
    expect(() => applyConfigPatch(base, { cells: { 'us-1': {} }, tenants: [acme] })).toThrow(
      /tenants\.0\.cells: cell eu-1 is not served \(cells: us-1\)/,
    );
    expect(applyConfigPatch(base, { tenants: [acme] }).tenants[0]?.name).toBe('acme');
    expect(() => applyConfigPatch(base, { tenants: [{ ...acme, cells: ['eu-1', 'us-1'] }] })).toThrow(
      /tenants\.0\.cells/,
    );
    expect(() => applyConfigPatch(base, { tenants: [{ ...acme, cells: ['mars-1'] }] })).toThrow(
      /tenants\.0\.cells/,
    );
    expect(() =>
      applyConfigPatch(base, { tenants: [{ ...acme, applications: [{ clientId: 'acme-app' }] }] }),
    ).toThrow(/tenants\.0\.applications\.0: needs clientSecret or publicKeyPem/);
    expect(() =>
      applyConfigPatch(base, {
        tenants: [{ ...acme, applications: [{ clientId: 'a', publicKeyPem: KEY }] }],
      }),
    ).toThrow(/tenants\.0\.applications\.0\.kid/);
    expect(() => applyConfigPatch(base, { tenants: [acme, { ...acme, applications: [] }] })).toThrow(
      /tenants\.1\.name: acme is declared twice/,
    );
  });

  test('client ids are unique across clients and applications; listeners need distinct ports', () => {
    expect(() =>
      applyConfigPatch(base, {
        tenants: [{ ...acme, applications: [{ clientId: 'sandbox-client', clientSecret: 'y' }] }],
      }),
    ).toThrow(/tenants\.0\.applications\.0\.clientId: sandbox-client is already the id/);
    expect(() => applyConfigPatch(base, { cells: { 'eu-1': { port: 8080 } } })).toThrow(
      /cells\.eu-1\.port: 8080 is already the port of the sandbox \(port\)/,
    );
    expect(() =>
      applyConfigPatch(base, { cells: { 'eu-1': { port: 9001 }, 'us-1': { port: 9001 } } }),
    ).toThrow(/cells\.us-1\.port/);
    expect(() =>
      applyConfigPatch(base, { cells: { 'eu-1': { port: 0 }, 'us-1': { port: 0 } } }),
    ).not.toThrow();
    expect(() => applyConfigPatch(base, { cells: { 'mars-1': {} } })).toThrow(/cells/);
  });

  test('an application rate limit is its own: null is none, absent the default', () => {
    const c = applyConfigPatch(base, {
      clients: [{ clientId: 'c', clientSecret: 's', scopes: [], rateLimit: null }],
    });
    expect(c.clients[0]?.rateLimit).toBeNull();
    expect(() =>
      applyConfigPatch(base, {
        clients: [{ clientId: 'c', clientSecret: 's', scopes: [], rateLimit: { burst: 1 } }],
      }),
    ).toThrow(/clients\.0\.rateLimit\.ratePerSecond/);
  });

  test('redaction hides the secrets of tenants applications too', () => {
    const shown = JSON.stringify(redactConfig(applyConfigPatch(base, { tenants: [acme] })));
    expect(shown).not.toContain('"clientSecret":"x"');
    expect(shown).toContain('[redacted]');
  });
});

describe('RateLimiter.forget', () => {
  test("refills one client's bucket and leaves the others' as they were", () => {
    const limiter = new RateLimiter();
    const limit = { ratePerSecond: 1, burst: 1 };
    expect(limiter.take('a', limit, 0)).toBe(0);
    expect(limiter.take('b', limit, 0)).toBe(0);
    limiter.forget('a');
    expect(limiter.take('a', limit, 0)).toBe(0);
    expect(limiter.take('b', limit, 0)).toBe(1000);
  });
});
