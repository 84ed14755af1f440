import fc from 'fast-check';
import { SerialIndex } from './serial-index.js';

/** The sampling SubmissionStore did before SerialIndex: a Set per content, copied in full. */
class Reference {
  private readonly bySha = new Map<string, Set<string>>();
  takeSampleAndAdd(sha: string, id: string, n: number): string[] {
    const earlier = [...(this.bySha.get(sha) ?? [])].filter((x) => x !== id);
    let ids = this.bySha.get(sha);
    if (!ids) {
      ids = new Set();
      this.bySha.set(sha, ids);
    }
    ids.add(id);
    return earlier.slice(-n);
  }
  delete(sha: string, id: string): void {
    const ids = this.bySha.get(sha);
    ids?.delete(id);
    if (ids?.size === 0) this.bySha.delete(sha);
  }
}

describe('SerialIndex', () => {
  test('samples the last n earlier submissions of the same content, oldest first', () => {
    const index = new SerialIndex();
    for (let i = 0; i < 30; i++) index.takeSampleAndAdd('a', `s${i}`, 10);
    index.takeSampleAndAdd('b', 'other', 10);
    index.delete('a', 's28');
    index.delete('a', 's5');
    expect(index.takeSampleAndAdd('a', 'new', 3)).toEqual(['s26', 's27', 's29']);
    expect(index.takeSampleAndAdd('b', 'new2', 3)).toEqual(['other']);
    expect(index.takeSampleAndAdd('c', 'first', 3)).toEqual([]);
  });

  test('answers what the full-copy sampling answered, over any adds and deletes', () => {
    const op = fc.record({
      add: fc.boolean(),
      sha: fc.constantFrom('a', 'b', 'c'),
      id: fc.integer({ min: 0, max: 8 }),
      n: fc.integer({ min: 1, max: 12 }),
    });
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 400, size: 'max' }), (ops) => {
        const index = new SerialIndex();
        const reference = new Reference();
        for (const o of ops) {
          const id = `s${o.id}`;
          if (o.add) {
            expect(index.takeSampleAndAdd(o.sha, id, o.n)).toEqual(
              reference.takeSampleAndAdd(o.sha, id, o.n),
            );
          } else {
            index.delete(o.sha, id);
            reference.delete(o.sha, id);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
