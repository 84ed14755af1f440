import { workShare } from './lag.js';

const ends = (highs: number[], low = 0) =>
  highs.map((high, partition) => ({ partition, low: String(low), high: String(high) }));

describe('workShare', () => {
  it('is the share of partitions when nothing is pending', () => {
    const committed = new Map([
      [0, '10'],
      [1, '20'],
      [2, '5'],
      [3, '7'],
    ]);
    expect(workShare(ends([10, 20, 5, 7]), committed, [1])).toEqual({ owned: 1, total: 4 });
    expect(workShare(ends([10, 20, 5, 7]), committed, [0, 3])).toEqual({ owned: 2, total: 4 });
  });

  it('follows the backlog of the owned partitions (each counts its backlog plus one)', () => {
    const committed = new Map([
      [0, '0'],
      [1, '0'],
      [2, '0'],
      [3, '0'],
    ]);
    // Skewed keys: partition 2 holds twice the backlog of the others.
    const offsets = ends([50, 50, 100, 50]);
    expect(workShare(offsets, committed, [2])).toEqual({ owned: 101, total: 254 });
    expect(workShare(offsets, committed, [0, 1])).toEqual({ owned: 102, total: 254 });
    expect(workShare(offsets, committed, [3])).toEqual({ owned: 51, total: 254 });
  });

  it('counts from the log start when nothing was committed or the commit fell below it', () => {
    const offsets = ends([100, 100], 90);
    const committed = new Map<number, string | null>([
      [0, null],
      [1, '3'],
    ]);
    expect(workShare(offsets, committed, [0])).toEqual({ owned: 11, total: 22 });
  });

  it('gives nothing to a member that owns no partition', () => {
    expect(workShare(ends([5, 5]), new Map(), [])).toEqual({ owned: 0, total: 12 });
  });
});
