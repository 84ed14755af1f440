/**
 * The keeper's in-memory read (its 'data' events taken directly, the transfer's bounds kept by a
 * clock instead of a pass-through) and its hand-over to the spool when a body of unknown length
 * turns out large.
 */
import { jest } from '@jest/globals';
import { createHash } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { BlobError } from './errors.js';
import { Keeper, MemoryBudget, type KeepOptions } from './kept.js';
import { Spool } from './spool.js';
import { settledOnFakeTime as onFakeTime } from '../util/test-helpers.js';

const settledOnFakeTime = <T>(work: Promise<T>) => onFakeTime(work, 10_000);

const spool = new Spool();
afterAll(() => spool.closeSync());

function options(over: Partial<KeepOptions> = {}): KeepOptions {
  return {
    display: 'http://h/x',
    length: undefined,
    contentType: undefined,
    expected: undefined,
    limits: { transferTimeoutMs: 0, minBytesPerSecond: 0 },
    startedAt: Date.now(),
    mapError: (error) =>
      error instanceof BlobError
        ? error
        : new BlobError('blob_unreadable', `failed (${(error as { code?: string }).code})`, {
            retriable: true,
          }),
    ...over,
  };
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function codeOf(run: Promise<unknown>): Promise<string> {
  try {
    await run;
    return 'done';
  } catch (error) {
    return error instanceof BlobError ? error.code : String(error);
  }
}

describe('Keeper', () => {
  afterEach(() => jest.useRealTimers());

  it('keeps a small body in memory, byte for byte, and gives its budget back at cleanup', async () => {
    const budget = new MemoryBudget(1024 * 1024);
    const keeper = new Keeper(spool, budget, 1024, 10_000);
    const bytes = Buffer.from('a small document');
    const source = Readable.from([bytes.subarray(0, 5), bytes.subarray(5)]);
    const blob = await keeper.keep(source, options({ length: bytes.length }));
    expect(blob.bytes).toEqual(bytes);
    expect(budget.bytes).toBe(bytes.length);
    await blob.cleanup();
    expect(budget.bytes).toBe(0);
  });

  it('spools a body of unknown length past the in-memory limit with every byte, in order', async () => {
    const budget = new MemoryBudget(1024 * 1024);
    const keeper = new Keeper(spool, budget, 1000, 100_000);
    const chunks = Array.from({ length: 40 }, (_, i) => Buffer.alloc(100, i));
    const whole = Buffer.concat(chunks);
    const sha256 = createHash('sha256').update(whole).digest('hex');
    const blob = await keeper.keep(Readable.from(chunks), options({ expected: sha256 }));
    expect(blob.bytes).toBeUndefined();
    expect(blob.size).toBe(whole.length);
    expect(await readAll(await blob.open())).toEqual(whole);
    expect(budget.bytes).toBe(0);
    await blob.cleanup();
  });

  it('fails a small body slower than the minimum rate (blob_too_slow) and gives its budget back', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const budget = new MemoryBudget(1024 * 1024);
    const keeper = new Keeper(spool, budget, 1024, 10_000);
    const source = new PassThrough();
    const timer = setInterval(() => source.write('x'), 20);
    source.once('close', () => clearInterval(timer));
    const limits = { transferTimeoutMs: 0, minBytesPerSecond: 1000, rateWindowMs: 100 };
    const kept = keeper.keep(source, options({ length: 500, limits }));
    expect(await codeOf(settledOnFakeTime(kept))).toBe('blob_too_slow');
    expect(source.destroyed).toBe(true);
    expect(budget.bytes).toBe(0);
  });

  it('fails a small body cut off without an error as unreadable, retriable', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const budget = new MemoryBudget(1024 * 1024);
    const keeper = new Keeper(spool, budget, 1024, 10_000);
    const source = new PassThrough();
    source.write('part of it');
    setTimeout(() => source.destroy(), 20);
    const kept = keeper.keep(source, options({ length: 500 }));
    const error = await settledOnFakeTime(kept).catch((e: unknown) => e as BlobError);
    expect(error).toBeInstanceOf(BlobError);
    expect([(error as BlobError).code, (error as BlobError).retriable]).toEqual(['blob_unreadable', true]);
    expect(budget.bytes).toBe(0);
  });
});
