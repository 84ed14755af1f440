import { ReadingPace } from './lag.js';

describe('ReadingPace: how often the lag timer reads the group offsets', () => {
  const quiet = { batches: 3, inFlight: 0 };

  it('reads every tick until a reading finds the whole group idle', () => {
    const pace = new ReadingPace(5000);
    expect(pace.due(0, quiet)).toBe(true);
    pace.read(0, quiet, false);
    expect(pace.due(500, quiet)).toBe(true);
  });

  it('while the group is idle and this member saw nothing, reads once per idle interval', () => {
    const pace = new ReadingPace(5000);
    pace.read(0, quiet, true);
    expect(pace.due(500, quiet)).toBe(false);
    expect(pace.due(4999, quiet)).toBe(false);
    expect(pace.due(5000, quiet)).toBe(true);
  });

  it('reads at the next tick once this member handles a batch, or has a document in flight', () => {
    const pace = new ReadingPace(5000);
    pace.read(0, quiet, true);
    expect(pace.due(500, { batches: 4, inFlight: 0 })).toBe(true);
    expect(pace.due(500, { batches: 3, inFlight: 1 })).toBe(true);
  });

  it('does not count a reading taken while documents were in flight as idle', () => {
    const pace = new ReadingPace(5000);
    pace.read(0, { batches: 3, inFlight: 2 }, true);
    expect(pace.due(500, quiet)).toBe(true);
  });

  it('a failed reading (reported as not idle) keeps the fast pace', () => {
    const pace = new ReadingPace(5000);
    pace.read(0, quiet, true);
    pace.read(5000, quiet, false);
    expect(pace.due(5500, quiet)).toBe(true);
  });
});
