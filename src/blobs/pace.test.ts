import { jest } from '@jest/globals';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobError } from './errors.js';
import { Pace, transferLimits } from './pace.js';

/** A source that sends `chunk` every `everyMs`, `count` times. */
function trickle(chunk: Buffer, everyMs: number, count: number): Readable {
  const out = new PassThrough();
  let sent = 0;
  const timer = setInterval(() => {
    if (out.destroyed) return clearInterval(timer);
    out.write(chunk);
    if (++sent === count) {
      clearInterval(timer);
      out.end();
    }
  }, everyMs);
  out.once('close', () => clearInterval(timer));
  return out;
}

const sink = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

async function codeOf(run: Promise<unknown>): Promise<string> {
  try {
    await run;
    return 'done';
  } catch (err) {
    return err instanceof BlobError ? err.code : String(err);
  }
}

describe('Pace', () => {
  it('fails a transfer slower than the minimum rate over a window (blob_too_slow)', async () => {
    const pace = new Pace({ transferTimeoutMs: 0, minBytesPerSecond: 1000, rateWindowMs: 100 }, 'http://h/x');
    expect(await codeOf(pipeline(trickle(Buffer.alloc(1), 20, 1000), pace, sink()))).toBe('blob_too_slow');
  });

  it('fails a transfer longer than its total bound, counted from its request (blob_timeout)', async () => {
    const startedAt = Date.now() - 150;
    const pace = new Pace({ transferTimeoutMs: 200, minBytesPerSecond: 0 }, 'http://h/x', startedAt);
    const run = codeOf(pipeline(trickle(Buffer.alloc(1000), 10, 1000), pace, sink()));
    expect(await run).toBe('blob_timeout');
  });

  it('lets a transfer within both bounds through, byte for byte', async () => {
    const pace = new Pace({ transferTimeoutMs: 5000, minBytesPerSecond: 1000, rateWindowMs: 50 }, 'x');
    let bytes = 0;
    const count = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        callback();
      },
    });
    await pipeline(trickle(Buffer.alloc(100), 5, 40), pace, count);
    expect(bytes).toBe(4000);
  });

  it('does not blame the source for time the reader takes no bytes', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const pace = new Pace({ transferTimeoutMs: 150, minBytesPerSecond: 1000, rateWindowMs: 50 }, 'x');
      Readable.from([Buffer.alloc(64 * 1024)]).pipe(pace);
      // Nobody reads for a while (well past the transfer bound, in fake time): the readable side stays full.
      await jest.advanceTimersByTimeAsync(400);
      expect(pace.destroyed).toBe(false);
      pace.destroy();
    } finally {
      jest.useRealTimers();
    }
  });

  it('reads unset limits of a policy as no bound', () => {
    expect(transferLimits({})).toEqual({ transferTimeoutMs: 0, minBytesPerSecond: 0 });
  });
});
