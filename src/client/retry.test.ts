import { NotFoundError, ServerError } from './errors.js';
import { FakeClock } from './test-helpers.js';
import { pollUntilReady } from './poll.js';
import { parseRetryAfter } from './retry.js';

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    const now = Date.parse('Sun, 22 Nov 2026 10:00:00 GMT');
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:59:00 GMT', now)).toBe(0);
  });

  it('ignores absent or malformed values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter('-1')).toBeUndefined();
  });
});

describe('pollUntilReady', () => {
  const notFound = () => new NotFoundError('not yet', { method: 'GET', endpoint: 'GET /x' });

  it('polls with growing waits until the result is there', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const waits: number[] = [];
    const result = pollUntilReady(
      async () => {
        if (++calls < 4) throw notFound();
        return 'done';
      },
      { timeoutMs: 60_000, initialDelayMs: 100, clock, onWait: (_a, ms) => waits.push(ms) },
    );
    await clock.advance(10_000);
    await expect(result).resolves.toBe('done');
    expect(waits).toEqual([100, 160, 256]);
  });

  it('rethrows the last NotFoundError at the deadline and other errors at once', async () => {
    const clock = new FakeClock();
    const pending = pollUntilReady(
      async () => {
        throw notFound();
      },
      { timeoutMs: 1000, initialDelayMs: 400, clock },
    );
    const settled = pending.catch((e: unknown) => e);
    await clock.advance(5000);
    expect(await settled).toBeInstanceOf(NotFoundError);

    let calls = 0;
    await expect(
      pollUntilReady(
        async () => {
          calls += 1;
          throw new ServerError('boom', { method: 'GET', endpoint: 'GET /x', status: 500 });
        },
        { timeoutMs: 1000, clock },
      ),
    ).rejects.toBeInstanceOf(ServerError);
    expect(calls).toBe(1);
  });
});
