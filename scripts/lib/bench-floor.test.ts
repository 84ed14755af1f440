import { parseFloors } from './bench-floor.js';

describe('parseFloors (--floor)', () => {
  it('is the mode’s own default when not given', () => {
    expect(parseFloors('auto', ['node'])).toEqual(['node']);
    expect(parseFloors('auto', [])).toEqual([]);
  });

  it('names one floor, both in order, or none', () => {
    expect(parseFloors('node', [])).toEqual(['node']);
    expect(parseFloors('go', [])).toEqual(['go']);
    expect(parseFloors('rdkafka', [])).toEqual(['rdkafka']);
    expect(parseFloors('platformatic', [])).toEqual(['platformatic']);
    expect(parseFloors('both', [])).toEqual(['node', 'go']);
    expect(parseFloors('true', [])).toEqual(['node']);
    expect(parseFloors('false', ['node'])).toEqual([]);
    expect(parseFloors('none', ['node'])).toEqual([]);
  });

  it('takes a comma list in the order given, each floor once', () => {
    expect(parseFloors('node,go,rdkafka', [])).toEqual(['node', 'go', 'rdkafka']);
    expect(parseFloors('rdkafka,node', ['go'])).toEqual(['rdkafka', 'node']);
    expect(parseFloors('both,rdkafka', [])).toEqual(['node', 'go', 'rdkafka']);
    expect(parseFloors('node, rdkafka,node', [])).toEqual(['node', 'rdkafka']);
    expect(parseFloors('platformatic,node,go,rdkafka', [])).toEqual([
      'platformatic',
      'node',
      'go',
      'rdkafka',
    ]);
  });

  it('refuses anything else', () => {
    const message =
      '--floor must be node, go, rdkafka, platformatic or a comma list of them (both: node,go), or false';
    expect(() => parseFloors('rust', [])).toThrow(`${message}; got rust`);
    expect(() => parseFloors('node,rust', [])).toThrow(`${message}; got node,rust`);
    expect(() => parseFloors('node,', [])).toThrow(`${message}; got node,`);
    expect(() => parseFloors('node,false', [])).toThrow(`${message}; got node,false`);
  });
});
