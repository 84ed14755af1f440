import { BacklogRefusedError, decideStart, parseStartFrom } from './first-contact.js';
import { silentLogger } from '../observability/logger.js';

type Ends = Array<{ partition: number; low: string; high: string }>;

/** An admin over fixed offsets that records what it commits for the group. */
function admin(ends: Ends, committed: Record<number, string | null>, state = 'Empty') {
  const commits: Array<Map<number, string>> = [];
  return {
    commits,
    topicOffsets: () => Promise.resolve(ends),
    groupOffsets: () =>
      Promise.resolve(new Map(ends.map((e) => [e.partition, committed[e.partition] ?? null] as const))),
    // Records from offset 40 on are newer than the timestamp asked for.
    offsetsForTimestamp: () => Promise.resolve(new Map(ends.map((e) => [e.partition, '40']))),
    describeGroup: () => Promise.resolve({ groupId: 'g', state, members: state === 'Empty' ? 0 : 2 }),
    commitGroupOffsets: (_g: string, _t: string, offsets: Map<number, string>) => {
      commits.push(offsets);
      return Promise.resolve();
    },
  };
}

const history: Ends = [
  { partition: 0, low: '0', high: '6000' },
  { partition: 1, low: '10', high: '4010' },
  { partition: 2, low: '0', high: '0' },
];
const decide = (a: ReturnType<typeof admin>, startFrom: string, limit = 1000) =>
  decideStart({
    admin: a,
    groupId: 'g',
    topic: 'documents.arrived',
    startFrom: parseStartFrom(startFrom, limit),
    logger: silentLogger,
  });

describe('where a group starts on partitions it never read', () => {
  it('refuses, unset, a history past the limit, with the count and the ways on', async () => {
    const a = admin(history, {});
    const refused = decide(a, '');
    await expect(refused).rejects.toThrow(BacklogRefusedError);
    await expect(refused).rejects.toThrow(
      /documents\.arrived holds 10000 record\(s\) on 2 partition\(s\).*earliest.*latest.*timestamp/,
    );
    expect(a.commits).toEqual([]);
  });

  it('starts from the beginning, unset, on a small history, an empty topic, or a group that committed', async () => {
    await expect(decide(admin(history, {}), '', 10_000)).resolves.toMatchObject({
      fromBeginning: true,
      analysed: 10_000,
    });
    await expect(decide(admin(history, { 0: '6000', 1: '4010' }), '')).resolves.toMatchObject({
      fromBeginning: true,
      backlog: 0,
    });
  });

  it('earliest analyses the history; latest and a timestamp commit where the group starts', async () => {
    await expect(decide(admin(history, {}), 'earliest')).resolves.toMatchObject({ analysed: 10_000 });
    const latest = admin(history, {});
    await expect(decide(latest, 'latest')).resolves.toMatchObject({ fromBeginning: true, analysed: 0 });
    expect(latest.commits).toEqual([
      new Map([
        [0, '6000'],
        [1, '4010'],
        [2, '0'],
      ]),
    ]);
    const since = admin(history, { 0: '6000' });
    await expect(decide(since, '2026-11-01T00:00:00Z')).resolves.toMatchObject({ analysed: 3970 });
    // Only the partitions the group never committed are moved.
    expect(since.commits).toEqual([
      new Map([
        [1, '40'],
        [2, '0'],
      ]),
    ]);
  });

  it('leaves an active group its own commits', async () => {
    const active = admin(history, {}, 'Stable');
    await expect(decide(active, 'latest')).resolves.toMatchObject({ fromBeginning: false });
    expect(active.commits).toEqual([]);
  });

  it('refuses a start position it cannot read', () => {
    expect(() => parseStartFrom('yesterday', 1000)).toThrow(/earliest, latest or an ISO-8601 timestamp/);
    expect(parseStartFrom(' latest ', 1000)).toEqual({ kind: 'latest' });
    expect(parseStartFrom('2026-01-31', 1000)).toEqual({ kind: 'timestamp', at: Date.UTC(2026, 0, 31) });
  });
});
