import { randomUUID } from 'node:crypto';
import { FinishedIndex } from './finished-index.js';
import { packIdBytes } from './packed-id.js';
import type { FinishedEntry } from './partition-index.js';

const T0 = 1_700_000_000_000;

function entry(eventId: string, i: number, overrides: Partial<FinishedEntry> = {}): FinishedEntry {
  return {
    event_id: eventId,
    submission_id: randomUUID(),
    status: i % 7 === 0 ? 'FAILED' : 'DONE',
    awaited: ['fraud', 'quality', 'classification'],
    published: i % 2 === 0 ? ['fraud', 'quality', 'classification'] : ['quality'],
    finished_at: T0 + i * 1000,
    generation: i % 3,
    // Unknown (0) for some, as in states written before fingerprints.
    blob: i % 5 === 0 ? 0 : ((i * 2654435761) | 1) >>> 0,
    ...overrides,
  };
}

/** A small deterministic PRNG, so a failing sequence can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('FinishedIndex', () => {
  it('answers what was set, per partition, for UUID and other ids', () => {
    const index = new FinishedIndex();
    const a = entry(randomUUID(), 1);
    const b = entry('order-17/€', 2, { submission_id: 'SUB-NOT-A-UUID', status: 'FAILED' });
    const c = entry(randomUUID().toUpperCase(), 3, { awaited: ['decision'], published: [] });
    index.set(0, a);
    index.set(0, b);
    index.set(1, c);
    expect(index.get(0, a.event_id)).toEqual(a);
    expect(index.get(0, b.event_id)).toEqual(b);
    expect(index.get(1, c.event_id)).toEqual(c);
    // The same id in another partition is another document.
    expect(index.get(1, a.event_id)).toBeUndefined();
    expect(index.get(0, c.event_id.toLowerCase())).toBeUndefined();
    expect(index.size()).toBe(3);
  });

  it('updates in place, e.g. a reprocessed document with a new submission', () => {
    const index = new FinishedIndex();
    const first = entry('evt', 1, { submission_id: 'text-id' });
    index.set(2, first);
    const second = entry('evt', 9, { status: 'FAILED' });
    index.set(2, second);
    expect(index.get(2, 'evt')).toEqual(second);
    expect(index.size(2)).toBe(1);
  });

  it('finds by string what was set from key bytes, packing only lower-case UUIDs', () => {
    const index = new FinishedIndex();
    const scratch = new Uint8Array(16);
    const uuid = randomUUID();
    const ids = [uuid, uuid.toUpperCase(), `${uuid.slice(0, 35)}g`, uuid.replaceAll('-', '_'), 'short'];
    const sid = { uuid: null, bytes: Buffer.from('SUB-1') };
    for (const [i, id] of ids.entries()) {
      const packed = packIdBytes(Buffer.from(id), scratch);
      expect(packed.uuid !== null).toBe(i === 0);
      index.setPacked(0, packed, sid, false, 0x11, T0 + i * 1000, i);
    }
    for (const [i, id] of ids.entries()) {
      expect(index.get(0, id)).toEqual({
        event_id: id,
        submission_id: 'SUB-1',
        status: 'DONE',
        awaited: ['fraud'],
        published: ['fraud'],
        finished_at: T0 + i * 1000,
        generation: i,
        blob: 0,
      });
    }
    expect(index.size()).toBe(ids.length);
  });

  it('keeps the finished time to the second', () => {
    const index = new FinishedIndex();
    index.set(0, entry('x', 0, { finished_at: T0 + 1999 }));
    expect(index.get(0, 'x')?.finished_at).toBe(T0 + 1000);
  });

  it('agrees with a Map through random sets, deletes, expiries and growth', () => {
    const random = prng(7);
    const index = new FinishedIndex();
    const model = new Map<string, FinishedEntry>();
    const ids = Array.from({ length: 3000 }, (_, i) => (i % 3 === 0 ? `evt-${i}` : randomUUID()));
    let clock = 0;
    for (let step = 0; step < 20_000; step++) {
      const id = ids[Math.floor(random() * ids.length)]!;
      const r = random();
      if (r < 0.6) {
        const e = entry(id, clock++, random() < 0.2 ? { submission_id: `sub-${step}` } : {});
        e.finished_at = T0 + clock * 1000;
        index.set(0, e);
        model.set(id, e);
      } else if (r < 0.95) {
        expect(index.delete(0, id)).toBe(model.delete(id));
      } else if (r < 0.96) {
        const before = T0 + (clock - 500) * 1000;
        const gone: string[] = [];
        const n = index.expire(before, (_p, eventId) => gone.push(eventId));
        const expected = [...model.values()].filter((e) => e.finished_at < before).map((e) => e.event_id);
        expect(n).toBe(expected.length);
        expect(gone.sort()).toEqual(expected.sort());
        for (const eventId of expected) model.delete(eventId);
      }
      if (step % 1000 === 0) {
        for (const id2 of ids.slice(0, 300)) expect(index.get(0, id2)).toEqual(model.get(id2));
      }
    }
    expect(index.size(0)).toBe(model.size);
    for (const id of ids) expect(index.get(0, id)).toEqual(model.get(id));
    const listed = [...index.entries(0)].sort((x, y) => x.event_id.localeCompare(y.event_id));
    expect(listed).toEqual([...model.values()].sort((x, y) => x.event_id.localeCompare(y.event_id)));
  });

  it('drops a whole partition at once and leaves the others', () => {
    const index = new FinishedIndex();
    for (let i = 0; i < 500; i++) {
      index.set(i % 2, entry(`e${i}`, i));
    }
    index.dropPartition(0);
    expect(index.size(0)).toBe(0);
    expect(index.get(0, 'e0')).toBeUndefined();
    expect(index.size(1)).toBe(250);
    expect(index.get(1, 'e1')?.event_id).toBe('e1');
    expect(index.partitionsHeld()).toEqual([1]);
  });

  it('reports its footprint per document (a number to read, not a speed or size assertion)', () => {
    const index = new FinishedIndex();
    const n = 200_000;
    for (let i = 0; i < n; i++) index.set(i % 4, entry(randomUUID(), i));
    const texts = new FinishedIndex();
    for (let i = 0; i < n; i++)
      texts.set(i % 4, entry(`order-${i}-${'x'.repeat(12)}`, i, { submission_id: `S${i}` }));
    console.log(
      `finished index, ${n} documents: ${(index.bytes() / n).toFixed(1)} bytes/doc in arrays (UUID ids), ` +
        `${(texts.bytes() / n).toFixed(1)} bytes/doc with 24-char event ids and short text submission ids`,
    );
    expect(index.size()).toBe(n);
    expect(texts.size()).toBe(n);
  });
});
