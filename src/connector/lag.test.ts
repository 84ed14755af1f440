import { silentLogger } from '../observability/logger.js';
import { ConnectorMetrics } from '../observability/metrics.js';
import { updateLag } from './lag.js';

describe('updateLag', () => {
  it("reports the lag of this instance's partitions and of the whole group, never-committed partitions from their start", async () => {
    const seen: Array<[number, number]> = [];
    await updateLag({
      admin: {
        topicOffsets: async () => [
          { partition: 0, low: '0', high: '100' },
          { partition: 1, low: '0', high: '50' },
          { partition: 2, low: '10', high: '40' },
        ],
        groupOffsets: async () =>
          new Map<number, string | null>([
            [0, '90'],
            [1, '20'],
            [2, null],
          ]),
      },
      assignment: () => ({ in: [0, 2] }),
      limiterRate: () => 10,
      topic: 'in',
      groupId: 'g',
      metrics: new ConnectorMetrics({ defaultMetrics: false }),
      logger: silentLogger,
      onGroupLag: (owned, total) => seen.push([owned, total]),
    });
    // Partition 0: 10 left, partition 1 (another member's): 30, partition 2: 30 from its low offset.
    expect(seen).toEqual([[40, 70]]);
  });
});
