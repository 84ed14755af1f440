import { jest } from '@jest/globals';
import { bounded, findingLines, Findings, NoAnswerError, summaryOf } from './findings.js';

describe('findings of config check --connect', () => {
  it('fails only on a missing finding, not on warnings', () => {
    const f = new Findings();
    f.ok('kafka', 'localhost:9092', 'connected');
    f.warning('topics', 'documents.fraud', 'has 1 replica');
    expect(f.failed).toBe(false);
    f.missing('api', 'api.clientId', 'refused');
    expect(f.failed).toBe(true);
    expect(summaryOf(f.all)).toEqual({ ok: 1, missing: 1, warning: 1 });
  });

  it('prints one line per finding: status, part, subject and detail', () => {
    const f = new Findings();
    f.missing('topics', 'documents.arrived', 'does not exist');
    expect(findingLines(f.all)).toEqual(['missing topics    documents.arrived: does not exist']);
  });

  it('names what did not answer once the bound has passed', async () => {
    jest.useFakeTimers();
    try {
      const never = new Promise<void>(() => undefined);
      const waiting = bounded(never, 5000, 'reaching the registry');
      const settled = expect(waiting).rejects.toThrow('reaching the registry: no answer within 5 s');
      await jest.advanceTimersByTimeAsync(5000);
      await settled;
      await expect(waiting).rejects.toBeInstanceOf(NoAnswerError);
    } finally {
      jest.useRealTimers();
    }
  });

  it('passes on the answer that comes in time', async () => {
    await expect(bounded(Promise.resolve(3), 1000, 'x')).resolves.toBe(3);
  });
});
