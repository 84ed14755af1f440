import { fullGc } from '../../util/full-gc.js';
import { OPTIMISATIONS_OFF_ENV } from '../../util/optimisations.js';
import { FinishedIndex } from './finished-index.js';
import { packId } from './packed-id.js';
import type { FinishedEntry } from './partition-index.js';
import { restoreCollector } from './store.js';

const entry = (id: string, finishedAt: number): FinishedEntry => ({
  event_id: id,
  submission_id: '8d0e7c36-2b1f-4f6e-9a54-3f0b1c2d4e5f',
  status: 'DONE',
  awaited: ['fraud', 'quality'],
  published: ['fraud'],
  finished_at: finishedAt,
  generation: 2,
  blob: 77,
});

afterEach(() => {
  delete process.env[OPTIMISATIONS_OFF_ENV];
});

describe('heap-compaction-after-restore switched off', () => {
  it('leaves a restore without the forced collection', () => {
    expect(restoreCollector()).toBe(fullGc);
    process.env[OPTIMISATIONS_OFF_ENV] = 'heap-compaction-after-restore';
    expect(restoreCollector()).toBeNull();
  });
});

describe('packed-state-index switched off', () => {
  /** The same operations on an index; what it answers. */
  function exercise(index: FinishedIndex) {
    const uuid = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
    index.set(0, entry(uuid, 1_700_000_000_500));
    index.set(0, entry('not-a-uuid', 1_700_000_100_000));
    index.set(1, entry('other', 1_600_000_000_000));
    // The restore's path: ids packed from the record, results as bits.
    index.setPacked(
      2,
      packId('5f1e7c36-2b1f-4f6e-9a54-3f0b1c2d4e50'),
      packId('sid text'),
      true,
      0x13,
      1_700_000_000_999,
      3,
      9,
    );
    const got = index.get(0, uuid);
    // A caller changing what it got does not change what is held.
    got!.awaited.push('classification');
    const expired: string[] = [];
    const n = index.expire(1_650_000_000_000, (p, id) => expired.push(`${p}/${id}`));
    return {
      packed: index.isPacked,
      uuid: index.get(0, uuid),
      text: index.get(0, 'not-a-uuid'),
      restored: index.get(2, '5f1e7c36-2b1f-4f6e-9a54-3f0b1c2d4e50'),
      expired,
      n,
      sizes: [index.size(0), index.size(1), index.size(2), index.size()],
      deleted: index.delete(0, 'not-a-uuid'),
      after: index.get(0, 'not-a-uuid'),
    };
  }

  it('holds a Map of objects that answers as the packed index does', () => {
    const packed = exercise(new FinishedIndex());
    process.env[OPTIMISATIONS_OFF_ENV] = 'packed-state-index';
    const plain = exercise(new FinishedIndex());
    expect(packed.packed).toBe(true);
    expect(plain.packed).toBe(false);
    expect({ ...plain, packed: true }).toEqual(packed);
    expect(plain.uuid).toEqual({ ...entry('1b4e28ba-2fa1-11d2-883f-0016d3cca427', 1_700_000_000_000) });
    expect(plain.expired).toEqual(['1/other']);
  });
});
