import { DEFAULT_RETENTION_MS, replayWarning } from './retention.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const DAY = 86_400_000;

describe('replayWarning', () => {
  it('says nothing for a target within the window', () => {
    expect(replayWarning(NOW - 6 * DAY, DEFAULT_RETENTION_MS, NOW)).toBeNull();
    expect(replayWarning(NOW - 7 * DAY, DEFAULT_RETENTION_MS, NOW)).toBeNull();
  });

  it('warns for a target older than the window, naming the cutoff', () => {
    const warning = replayWarning(NOW - 10 * DAY, DEFAULT_RETENTION_MS, NOW);
    expect(warning).toContain('10 days back');
    expect(warning).toContain('retention of 7 days');
    expect(warning).toContain('2026-11-16T12:00:00.000Z');
  });
});
