import { OffsetResetError, planOffsetReset, resetOffsets } from './replay-plan.js';

/** Two partitions holding offsets 0..10 and 5..8; the group committed 7 on partition 0 only. */
function fakeAdmin() {
  const commits: Array<{ groupId: string; topic: string; offsets: Map<number, string> }> = [];
  return {
    commits,
    topicOffsets: async () => [
      { partition: 0, low: '0', high: '10' },
      { partition: 1, low: '5', high: '8' },
    ],
    groupOffsets: async () => new Map<number, string | null>([[0, '7']]),
    offsetsForTimestamp: async () => new Map([[0, '4']]),
    commitGroupOffsets: async (groupId: string, topic: string, offsets: Map<number, string>) => {
      commits.push({ groupId, topic, offsets });
    },
  };
}

describe('replay plan', () => {
  it('plans earliest and latest from the partitions’ bounds, with the committed offsets beside them', async () => {
    const admin = fakeAdmin();
    const earliest = await planOffsetReset(admin, 'g', 't', { kind: 'earliest' });
    expect(earliest.partitions).toEqual([
      { partition: 0, current: '7', target: '0', low: '0', high: '10' },
      { partition: 1, current: null, target: '5', low: '5', high: '8' },
    ]);
    const latest = await planOffsetReset(admin, 'g', 't', { kind: 'latest' });
    expect(latest.partitions.map((p) => p.target)).toEqual(['10', '8']);
    expect(admin.commits).toEqual([]);
  });

  it('plans a time from the offsets Kafka finds for it, leaving out partitions it names none for', async () => {
    const plan = await planOffsetReset(fakeAdmin(), 'g', 't', { kind: 'timestamp', timestamp: 1 });
    expect(plan.partitions.map((p) => [p.partition, p.target])).toEqual([[0, '4']]);
  });

  it('refuses named offsets outside a partition, not integers, or on a partition the topic lacks', async () => {
    const admin = fakeAdmin();
    await expect(planOffsetReset(admin, 'g', 't', { kind: 'offsets', offsets: { 1: '4' } })).rejects.toThrow(
      /outside 5\.\.8/,
    );
    await expect(planOffsetReset(admin, 'g', 't', { kind: 'offsets', offsets: { 0: '-1' } })).rejects.toThrow(
      OffsetResetError,
    );
    await expect(planOffsetReset(admin, 'g', 't', { kind: 'offsets', offsets: { 3: '0' } })).rejects.toThrow(
      /no partition 3/,
    );
  });

  it('commits the plan once when applied, and nothing in a dry run', async () => {
    const admin = fakeAdmin();
    const dry = await resetOffsets(
      admin,
      'g',
      't',
      { kind: 'offsets', offsets: { 1: '6' } },
      { dryRun: true },
    );
    expect(dry.applied).toBe(false);
    expect(admin.commits).toEqual([]);
    const applied = await resetOffsets(admin, 'g', 't', { kind: 'offsets', offsets: { 1: '6' } });
    expect(applied.applied).toBe(true);
    expect(admin.commits).toEqual([{ groupId: 'g', topic: 't', offsets: new Map([[1, '6']]) }]);
  });
});
