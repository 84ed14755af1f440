import { jest } from '@jest/globals';
import { createLogger } from '../../observability/logger.js';
import { PollScheduler } from '../../util/scheduler.js';
import { InFlight } from './in-flight.js';
import type { Run } from './run.js';

/** The parts of a run `InFlight` touches; its blob's cleanup fails as a spool removal can. */
function runWithFailingCleanup(cleanup: () => Promise<void>): Run {
  return {
    eventId: 'e-1',
    pointer: { topic: 'in', partition: 0, offset: '4' },
    identity: { tenant: 'acme' },
    state: { submission_id: 's-1', awaited: [] },
    cancelled: false,
    transitionTo: () => undefined,
    key: (what: string) => `e-1:${what}`,
    blob: { cleanup },
  } as unknown as Run;
}

describe('InFlight', () => {
  it('logs a stopped document’s blob cleanup that fails, and no rejection is left unhandled', async () => {
    const warned: string[] = [];
    const logger = createLogger({ level: 'silent' });
    jest.spyOn(logger, 'warn').mockImplementation(((_obj: unknown, msg: string) => {
      warned.push(msg);
    }) as never);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const runs = new InFlight(new PollScheduler(), logger, () => undefined);
      const run = runWithFailingCleanup(() => Promise.reject(new Error('EBUSY: spool file still open')));
      runs.add(run);
      expect(runs.tenants()).toEqual(new Map([['acme', 1]]));
      runs.remove(run, 'stopped');
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      expect(warned).toEqual([expect.stringContaining('spooled file was not removed')]);
      expect(runs.size).toBe(0);
      expect(runs.tenants()).toEqual(new Map());
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('waits for a tracked step and forgets it once settled, a failed one logged', async () => {
    const errors: unknown[] = [];
    const logger = createLogger({ level: 'silent' });
    jest.spyOn(logger, 'error').mockImplementation(((obj: unknown) => {
      errors.push(obj);
    }) as never);
    const runs = new InFlight(new PollScheduler(), logger, () => undefined);
    let fail!: (err: Error) => void;
    runs.track(new Promise((_resolve, reject) => (fail = reject)));
    fail(new Error('a bug'));
    await runs.settle(100);
    expect(errors).toHaveLength(1);
  });
});
