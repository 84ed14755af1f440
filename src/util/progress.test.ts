import { Progress, colourWanted, formatDuration, progressLine, progressWanted } from './progress.js';

function terminal(isTTY = true) {
  const writes: string[] = [];
  return { isTTY, columns: 200, writes, write: (chunk: string) => writes.push(chunk) };
}

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('progressLine', () => {
  it('shows count, share, rate and time left', () => {
    expect(
      progressLine({ label: 'replay', unit: 'records', done: 1234, total: 10000, ratePerSecond: 85.24 }),
    ).toBe('replay  1,234/10,000 records (12%)  85.2 records/s  ~1m 43s left');
  });

  it('says done at the total, unknown without a rate, and has no time left without a total', () => {
    expect(progressLine({ label: 'x', unit: 'docs', done: 5, total: 5, ratePerSecond: 2 })).toBe(
      'x  5/5 docs (100%)  2.0 docs/s  done',
    );
    expect(progressLine({ label: 'x', unit: 'docs', done: 4, total: 5, ratePerSecond: 2 })).toBe(
      'x  4/5 docs (80%)  2.0 docs/s  under 1s left',
    );
    expect(progressLine({ label: 'x', unit: 'docs', done: 0, total: 5, ratePerSecond: null })).toBe(
      'x  0/5 docs (0%)  - docs/s  time left unknown',
    );
    expect(progressLine({ label: 'x', unit: 'docs', done: 12000, ratePerSecond: 1500.4 })).toBe(
      'x  12,000 docs  1,500 docs/s',
    );
  });

  it('formats durations for people', () => {
    expect([formatDuration(42), formatDuration(61), formatDuration(7322), formatDuration(Infinity)]).toEqual([
      '42s',
      '1m 01s',
      '2h 02m',
      '?',
    ]);
  });
});

describe('Progress', () => {
  it('stays silent when the output is not a terminal, or under CI', () => {
    expect(progressWanted({ isTTY: false, write: () => true }, {})).toBe(false);
    expect(progressWanted({ isTTY: true, write: () => true }, { CI: 'true' })).toBe(false);
    expect(progressWanted({ isTTY: true, write: () => true }, { TERM: 'dumb' })).toBe(false);
    expect(progressWanted({ isTTY: true, write: () => true }, { CI: 'false' })).toBe(true);
    expect(progressWanted({ isTTY: true, write: () => true }, { NO_COLOR: '1' })).toBe(false);
    expect(progressWanted({ isTTY: true, write: () => true }, { NO_COLOR: '' })).toBe(true);
  });

  it('wants colour only on a terminal, never with NO_COLOR set (to anything but empty)', () => {
    expect(colourWanted({ isTTY: true }, {})).toBe(true);
    expect(colourWanted({ isTTY: false }, {})).toBe(false);
    expect(colourWanted({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colourWanted({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
    expect(colourWanted({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
    for (const [stream, env] of [
      [terminal(false), {}],
      [terminal(true), { CI: '1' }],
    ] as const) {
      const progress = new Progress({ label: 'p', total: 10, stream, env });
      progress.update(5);
      progress.finish();
      expect(stream.writes).toEqual([]);
    }
  });

  it('redraws one line in place with the rate over the last window and the time left', () => {
    const stream = terminal();
    const t = clock();
    const progress = new Progress({ label: 'bench', total: 1000, unit: 'docs', stream, env: {}, now: t.now });
    t.advance(1000);
    progress.update(100);
    t.advance(100);
    progress.update(110); // within redrawMs of the last draw: not drawn
    t.advance(900);
    progress.update(200);
    expect(stream.writes).toEqual([
      '\rbench  100/1,000 docs (10%)  100 docs/s  ~9s left\x1b[K',
      '\rbench  200/1,000 docs (20%)  100 docs/s  ~8s left\x1b[K',
    ]);
    progress.finish();
    expect(stream.writes.at(-1)).toBe('\n');
  });

  it('follows a change of pace: the rate covers only the last window', () => {
    const stream = terminal();
    const t = clock();
    const progress = new Progress({ label: 'r', total: 10_000, stream, env: {}, now: t.now, windowMs: 5000 });
    for (let s = 1; s <= 10; s++) {
      t.advance(1000);
      progress.update(s * 100); // 100/s
    }
    for (let s = 1; s <= 10; s++) {
      t.advance(1000);
      progress.update(1000 + s * 10); // then 10/s
    }
    expect(progress.rate()).toBeCloseTo(10, 5);
  });

  it('cuts the line to the terminal width', () => {
    const stream = { ...terminal(), columns: 20 };
    const progress = new Progress({ label: 'a long label here', total: 10, stream, env: {} });
    progress.update(1);
    expect(stream.writes[0]).toBe('\ra long label here  \x1b[K');
  });
});
