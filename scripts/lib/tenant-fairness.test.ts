import {
  achievedRate,
  backlogWindow,
  delayStats,
  documentDelays,
  ratio,
  type RecordedCall,
} from './tenant-fairness.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const call = (
  ms: number,
  status = 200,
  method = 'GET',
  route = '/v2/submission/:id/fraud',
): RecordedCall => ({
  at: at(ms),
  method,
  route,
  status,
});
const create = (ms: number, status = 201) => call(ms, status, 'POST', '/v2/submission');

describe('tenant fairness arithmetic', () => {
  it('gives p50, p95 and max, and null for no values', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(delayStats(values)).toEqual({ count: 100, p50: 50, p95: 95, max: 100 });
    expect(delayStats([])).toBeNull();
  });

  it('divides contended by baseline, and has no ratio without both or with a zero baseline', () => {
    expect(ratio(390, 300)).toBe(1.3);
    expect(ratio(100, 300)).toBe(0.33);
    expect(ratio(null, 300)).toBeNull();
    expect(ratio(100, 0)).toBeNull();
  });

  it('measures delay after ready per result, and end to end per finished document only', () => {
    const subs = [
      {
        query_id: 'a',
        created: at(100),
        ready_at: { fraud: at(1000), quality: at(1200), classification: at(1500) },
      },
      {
        query_id: 'b',
        created: at(300),
        ready_at: { fraud: at(2000), quality: null, classification: at(2100) },
      },
      {
        query_id: 'c',
        created: at(400),
        ready_at: { fraud: at(3000), quality: at(3000), classification: at(3000) },
      },
    ];
    const out = new Map([
      [
        'a',
        new Map([
          ['fraud', T0 + 1100],
          ['quality', T0 + 1250],
          ['classification', T0 + 1800],
        ]),
      ],
      ['b', new Map([['fraud', T0 + 2050]])],
    ]);
    const produced = new Map([
      ['a', T0],
      ['b', T0 + 100],
      ['c', T0 + 200],
    ]);
    const d = documentDelays(subs, out, produced, ['fraud', 'quality', 'classification']);
    expect(d.afterReady).toEqual([100, 50, 300, 50]);
    expect(d.done).toBe(1);
    expect(d.endToEnd).toEqual([1800]);
    expect(d.toCreate).toEqual([100, 200, 200]);
  });

  it('takes the window from the first call plus the ramp-up to the last create once the backlog is created', () => {
    const calls = [call(0, 429), create(1000), create(2000), call(2500), create(11_000), call(12_000)];
    expect(backlogWindow(calls, { backlog: 3, endedAt: T0 + 60_000, rampUpMs: 1000, minMs: 1000 })).toEqual({
      from: T0 + 1000,
      to: T0 + 11_000,
      end: 'backlog created',
    });
  });

  it('ends the window when the measurement ended with creates still waiting, and has none too short', () => {
    const calls = [create(0), create(1000), { ...create(500), route: '/oauth2/token' }];
    expect(backlogWindow(calls, { backlog: 10, endedAt: T0 + 30_000, rampUpMs: 5000, minMs: 1000 })).toEqual({
      from: T0 + 5000,
      to: T0 + 30_000,
      end: 'measurement ended',
    });
    expect(backlogWindow(calls, { backlog: 10, endedAt: T0 + 5500, rampUpMs: 5000, minMs: 1000 })).toBeNull();
    expect(backlogWindow([], { backlog: 1, endedAt: T0, rampUpMs: 0, minMs: 0 })).toBeNull();
  });

  it('counts accepted limited calls in the window against the limit; 429s apart, tokens and uploads not at all', () => {
    const calls: RecordedCall[] = [];
    // 10 s at 5 accepted calls a second, one in five a create, and a 429 each second.
    for (let i = 0; i < 50; i++) calls.push(i % 5 === 0 ? create(i * 200) : call(i * 200));
    for (let s = 0; s < 10; s++) calls.push(call(s * 1000 + 100, 429));
    calls.push({ ...call(500), route: '/oauth2/token' }, { ...call(600, 204, 'PUT'), route: '/_upload/:id' });
    // Outside the window: not counted.
    calls.push(call(20_000), create(20_100));
    const r = achievedRate(calls, { from: T0, to: T0 + 10_000, end: 'measurement ended' }, 5);
    expect(r).toEqual({ seconds: 10, acceptedPerS: 5, createsPerS: 1, refused: 10, percentOfLimit: 100 });
    expect(
      achievedRate(calls, { from: T0, to: T0 + 10_000, end: 'measurement ended' }, 10).percentOfLimit,
    ).toBe(50);
  });
});
