import { parseFloors } from './bench-floor.js';

describe('parseFloors (--floor)', () => {
  it('is the mode’s own default when not given', () => {
    expect(parseFloors('auto', ['node'])).toEqual(['node']);
    expect(parseFloors('auto', [])).toEqual([]);
  });

  it('names one floor, both in order, or none', () => {
    expect(parseFloors('node', [])).toEqual(['node']);
    expect(parseFloors('go', [])).toEqual(['go']);
    expect(parseFloors('both', [])).toEqual(['node', 'go']);
    expect(parseFloors('true', [])).toEqual(['node']);
    expect(parseFloors('false', ['node'])).toEqual([]);
    expect(parseFloors('none', ['node'])).toEqual([]);
  });

  it('refuses anything else', () => {
    expect(() => parseFloors('rust', [])).toThrow('--floor must be node, go, both or false, got rust');
  });
});
