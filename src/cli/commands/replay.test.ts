import type { OffsetResetPlan } from '../../operator/replay-plan.js';
import { Progress } from '../../util/progress.js';
import { replayBacklog, watchReplay } from './replay.js';

const plan: OffsetResetPlan = {
  groupId: 'g',
  topic: 't',
  target: { kind: 'earliest' },
  applied: true,
  partitions: [
    { partition: 0, current: '10', target: '0', low: '0', high: '10' },
    { partition: 1, current: '5', target: '2', low: '0', high: '6' },
    // Moved forward (records skipped, none to re-read).
    { partition: 2, current: '1', target: '3', low: '0', high: '3' },
  ],
};

describe('watchReplay', () => {
  it('counts the records to re-read from each target to the end at the reset', () => {
    expect(replayBacklog(plan)).toBe(10 + 4);
  });

  it('follows the committed offsets until every partition is back at its end', async () => {
    const answers = [
      new Map<number, string | null>([
        [0, '0'],
        [1, null],
      ]),
      new Map<number, string | null>([
        [0, '7'],
        [1, '3'],
      ]),
      // Past the end of the reset (new records arrived meanwhile) counts as the end.
      new Map<number, string | null>([
        [0, '12'],
        [1, '6'],
        [2, '3'],
      ]),
    ];
    let polls = 0;
    const admin = { groupOffsets: async () => answers[Math.min(polls++, answers.length - 1)]! };
    const writes: string[] = [];
    const progress = new Progress({
      label: 'replay t',
      unit: 'records',
      stream: { isTTY: true, write: (s: string) => writes.push(s) },
      env: {},
      redrawMs: 0,
    });
    const result = await watchReplay(admin, plan, progress, 1);
    expect(result.records).toBe(14);
    expect(polls).toBe(3);
    expect(writes.map((w) => /\d+\/14 records/.exec(w)?.[0])).toEqual([
      '0/14 records',
      '8/14 records',
      '14/14 records',
    ]);
  });
});
