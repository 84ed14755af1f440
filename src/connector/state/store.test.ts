import { jest } from '@jest/globals';
import type { ChangelogSink } from '../../kafka/changelog.js';
import { createLogger, silentLogger } from '../../observability/logger.js';
import type { FinishedState, UnfinishedState } from './document-state.js';
import { encodeState } from './record.js';
import { OwnedState, TOMBSTONES_IN_FLIGHT, type StateFeed } from './store.js';

const DAY = 86_400_000;
const NOW = 1_800_000_000_000;

/** A changelog reader over in-memory partitions: assign replays a partition's records into the sink. */
class FakeFeed implements StateFeed {
  owned = new Set<number>();
  log = new Map<number, Array<{ key: string; value: Buffer | null }>>();
  constructor(private readonly sink: ChangelogSink) {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async assign(partitions: number[]): Promise<void> {
    for (const p of partitions) {
      this.owned.add(p);
      (this.log.get(p) ?? []).forEach((r, offset) =>
        this.sink.apply({ key: Buffer.from(r.key), value: r.value, partition: p, offset, timestamp: NOW }),
      );
    }
  }
  revoke(partitions: number[]): void {
    for (const p of partitions) {
      this.owned.delete(p);
      this.sink.drop(p);
    }
  }
  caughtUp(partitions: number[]): boolean {
    return partitions.every((p) => this.owned.has(p));
  }
  ownedPartitions(): number[] {
    return [...this.owned].sort();
  }
  owns(partition: number): boolean {
    return this.owned.has(partition);
  }
}

const unfinished = (eventId: string, partition: number): UnfinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: `sub-${eventId}`,
  status: 'UPLOADED',
  input: { topic: 'in', partition, offset: '1' },
  awaited: ['quality'],
  published: [],
  created_at: NOW,
  updated_at: NOW,
});

const finished = (eventId: string, partition: number, at: number): FinishedState => ({
  v: 2,
  event_id: eventId,
  submission_id: `sub-${eventId}`,
  status: 'DONE',
  input: { topic: 'in', partition, offset: '1' },
  awaited: ['quality'],
  published: ['quality'],
  finished_at: at,
});

function make() {
  let feed!: FakeFeed;
  const tombstones: string[] = [];
  const store = new OwnedState(
    (sink) => {
      feed = new FakeFeed(sink);
      return feed;
    },
    {
      inputTopic: 'in',
      retentionMs: 7 * DAY,
      logger: silentLogger,
      now: () => NOW,
      tombstone: async (p, id) => {
        tombstones.push(`${p}/${id}`);
      },
      collectGarbage: null,
    },
  );
  return { store, feed, tombstones };
}

describe('OwnedState', () => {
  it('holds only owned partitions: writes for a partition that left are not applied', async () => {
    const { store } = make();
    await store.assign([0]);
    store.put(unfinished('a', 0));
    store.put(unfinished('b', 1));
    expect(store.get(0, 'a')).toEqual({ unfinished: unfinished('a', 0) });
    expect(store.get(1, 'b')).toBeUndefined();
    expect(store.unfinished(0).map((s) => s.event_id)).toEqual(['a']);
    store.revoke([0]);
    expect(store.get(0, 'a')).toBeUndefined();
    expect(store.owned()).toEqual([]);
  });

  it('restores a partition on assign and writes tombstones for documents past the window', async () => {
    const { store, feed, tombstones } = make();
    feed.log.set(2, [
      { key: 'old', value: encodeState(finished('old', 2, NOW - 8 * DAY)) },
      { key: 'new', value: encodeState(finished('new', 2, NOW - DAY)) },
      { key: 'open', value: encodeState(unfinished('open', 2)) },
    ]);
    await store.assign([2]);
    expect(store.caughtUp([2])).toBe(true);
    expect(store.get(2, 'old')).toBeUndefined();
    expect(store.get(2, 'new')).toMatchObject({ finished: { status: 'DONE' } });
    expect(store.unfinished(2).map((s) => s.event_id)).toEqual(['open']);
    await new Promise((r) => setImmediate(r));
    expect(tombstones).toEqual(['2/old']);
  });

  it('keeps at most TOMBSTONES_IN_FLIGHT tombstones out when an expiry finds thousands', async () => {
    let now = NOW;
    let feed!: FakeFeed;
    const answers: Array<() => void> = [];
    const sent: string[] = [];
    const store = new OwnedState((sink) => (feed = new FakeFeed(sink)), {
      inputTopic: 'in',
      retentionMs: DAY,
      logger: silentLogger,
      now: () => now,
      tombstone: (p, id) =>
        new Promise<void>((resolve) => {
          sent.push(`${p}/${id}`);
          answers.push(resolve);
        }),
      collectGarbage: null,
    });
    await store.assign([0, 1]);
    const total = 3 * TOMBSTONES_IN_FLIGHT + 7;
    for (let i = 0; i < total; i++) store.put(finished(`d${i}`, i % 2, NOW));
    now = NOW + 2 * DAY;
    expect(store.expire()).toBe(total);
    expect(store.tombstonesInFlight).toBe(TOMBSTONES_IN_FLIGHT);
    expect(sent).toHaveLength(TOMBSTONES_IN_FLIGHT);
    // Partition 1 leaves: its waiting tombstones are dropped, not sent for a partition not owned.
    feed.revoke([1]);
    let answered = 0;
    while (answered < answers.length) {
      answers[answered++]!();
      await Promise.resolve();
      await Promise.resolve();
      expect(store.tombstonesInFlight).toBeLessThanOrEqual(TOMBSTONES_IN_FLIGHT);
    }
    await new Promise((r) => setImmediate(r));
    expect(store.tombstonesInFlight).toBe(0);
    const later = sent.slice(TOMBSTONES_IN_FLIGHT);
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((s) => s.startsWith('0/'))).toBe(true);
    expect(new Set(sent).size).toBe(sent.length);
  });

  it('expires finished documents of owned partitions on the timer, with their tombstones', async () => {
    let now = NOW;
    let feed!: FakeFeed;
    const tombstones: string[] = [];
    const store = new OwnedState((sink) => (feed = new FakeFeed(sink)), {
      inputTopic: 'in',
      retentionMs: DAY,
      logger: silentLogger,
      now: () => now,
      tombstone: async (p, id) => void tombstones.push(`${p}/${id}`),
      collectGarbage: null,
    });
    await store.assign([0]);
    expect(feed.owned.has(0)).toBe(true);
    store.put(finished('x', 0, NOW));
    store.put(finished('y', 0, NOW + DAY / 2));
    now = NOW + DAY + 1000;
    expect(store.expire()).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(tombstones).toEqual(['0/x']);
    expect(store.get(0, 'x')).toBeUndefined();
    expect(store.get(0, 'y')).toBeDefined();
  });

  it('asks for one full collection after its first restore, then once a large restore is over or a revoke dropped a large partition', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      let feed!: FakeFeed;
      let collections = 0;
      const lines: Array<Record<string, unknown>> = [];
      const logger = createLogger({
        level: 'info',
        format: 'json',
        stream: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
      });
      const store = new OwnedState((sink) => (feed = new FakeFeed(sink)), {
        inputTopic: 'in',
        retentionMs: 7 * DAY,
        logger,
        now: () => NOW,
        tombstone: async () => undefined,
        collectGarbage: async () => void collections++,
      });
      const records = (partition: number, n: number) =>
        Array.from({ length: n }, (_, i) => {
          const id = `p${partition}-${i}`;
          return { key: id, value: encodeState(finished(id, partition, NOW - DAY)) };
        });
      feed.log.set(0, records(0, 6000));
      feed.log.set(1, records(1, 6000));
      feed.log.set(2, records(2, 100));
      // The first restore's end collects what starting left, however small it was.
      await store.assign([2]);
      await jest.advanceTimersByTimeAsync(1000);
      expect(collections).toBe(1);
      // What the collection left is what was live: the line says how much, to compare with an idle instance.
      const collected = lines.filter((l) => l.msg === 'heap collected after reading or dropping state');
      expect(collected).toEqual([expect.objectContaining({ records: 100, heapUsedMb: expect.any(Number) })]);
      expect(collected[0]!.heapUsedMb).toBeGreaterThan(0);
      store.revoke([2]);
      await jest.advanceTimersByTimeAsync(5000);
      expect(collections).toBe(1);
      await Promise.all([store.assign([0]), store.assign([1])]);
      expect(collections).toBe(1);
      await jest.advanceTimersByTimeAsync(1000);
      expect(collections).toBe(2);
      expect(store.get(0, 'p0-5999')).toBeDefined();
      store.revoke([0, 1]);
      await jest.advanceTimersByTimeAsync(1000);
      expect(collections).toBe(3);
      await store.stop();
    } finally {
      jest.useRealTimers();
    }
  });
});
