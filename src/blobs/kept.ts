/**
 * Blobs kept from admission to upload, so that each is read or fetched once: in memory when small
 * (`blobs.inMemoryBytes`) and the process's memory budget has space, else (remote blobs) in a private
 * temp file (`spool.ts`). Every `open()` (a retried upload included) reads what was kept; nothing is
 * fetched a second time. The digest, when one is to be verified, is computed from the bytes kept.
 *
 * Memory stays bounded whatever `connector.maxInFlight` is: all blobs held in memory at once share
 * one budget (MEMORY_BUDGET_BYTES); a blob that does not fit it takes the path of a large one.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { BlobError } from './errors.js';
import { guard } from './guard.js';
import { checkSha256 } from './meter.js';
import { Pace, TransferClock, type TransferLimits } from './pace.js';
import { verifiedSpooledBlob, type Spool } from './spool.js';
import type { OpenedBlob } from './types.js';

/** Default of `blobs.inMemoryBytes`. */
export const IN_MEMORY_BYTES = 1024 * 1024;
/** At most this much of blobs is held in memory at once, however many documents are in flight. */
export const MEMORY_BUDGET_BYTES = 64 * 1024 * 1024;

/** The bytes of in-memory blobs held now, against a maximum shared by every reader of a source. */
export class MemoryBudget {
  private held = 0;

  constructor(private readonly maxBytes = MEMORY_BUDGET_BYTES) {}

  fits(bytes: number): boolean {
    return this.held + bytes <= this.maxBytes;
  }

  /** Reserves `bytes` when they fit. */
  take(bytes: number): boolean {
    if (!this.fits(bytes)) return false;
    this.held += bytes;
    return true;
  }

  /** Counts `bytes` held whether they fit or not (read after `fits` said yes). */
  hold(bytes: number): void {
    this.held += bytes;
  }

  give(bytes: number): void {
    this.held -= bytes;
  }

  get bytes(): number {
    return this.held;
  }
}

/**
 * A blob held in memory, its digest verified (when `expected` is given) from the buffer: counted
 * against `budget` (which the caller already took `bytes.length` from) until cleanup.
 */
export function memoryBlob(
  bytes: Buffer,
  expected: string | undefined,
  contentType: string | undefined,
  display: string,
  budget: MemoryBudget,
): OpenedBlob {
  const sha256 = expected === undefined ? undefined : createHash('sha256').update(bytes).digest('hex');
  try {
    if (expected !== undefined) checkSha256(expected, sha256 as string, display);
  } catch (error) {
    budget.give(bytes.length);
    throw error;
  }
  let held: Buffer | undefined = bytes;
  return {
    size: bytes.length,
    sha256,
    contentType,
    get bytes() {
      return held;
    },
    open: async () => {
      if (!held) throw new BlobError('blob_unreadable', `${display} was already cleaned up`);
      return Readable.from(held.length === 0 ? [] : [held]);
    },
    cleanup: async () => {
      if (!held) return;
      budget.give(held.length);
      held = undefined;
    },
  };
}

export interface KeepOptions {
  display: string;
  /** Content-Length, when the answer gave one (already checked against `blobs.maxBytes`). */
  length: number | undefined;
  contentType: string | undefined;
  /** The digest to verify, when the event gave one. */
  expected: string | undefined;
  /** The transfer's bounds, counted from `startedAt` (its request: the wait for the answer counts). */
  limits: TransferLimits;
  startedAt: number;
  /** Turns a transport error of `source` into a BlobError without secrets. */
  mapError: (error: unknown) => BlobError;
}

/** What `collect` read: every chunk when the source ended, else the first ones past the limit. */
interface Collected {
  chunks: Buffer[];
  bytes: number;
  ended: boolean;
}

/** Reads remote answers' bodies once into what an upload can read any number of times. */
export class Keeper {
  constructor(
    private readonly spool: Spool,
    private readonly budget: MemoryBudget,
    private readonly inMemoryBytes: number,
    private readonly maxBytes: number,
  ) {}

  /** Reads `source` to its end (or fails), and holds its bytes until the blob's cleanup. */
  async keep(source: Readable, options: KeepOptions): Promise<OpenedBlob> {
    const limit = Math.min(this.inMemoryBytes, this.maxBytes);
    const reserve = options.length ?? limit;
    const small = options.length === undefined || options.length <= limit;
    if (!small || !this.budget.take(reserve)) return this.spooled(paced(source, options, 0), options);

    let read: Collected;
    try {
      read = await collect(source, limit, options);
    } catch (error) {
      this.budget.give(reserve);
      throw options.mapError(error);
    }
    const { chunks, bytes } = read;
    if (!read.ended) {
      // A body of unknown length turned out large: what came so far and the rest go to a file.
      this.budget.give(reserve);
      const rest = paced(source, options, bytes)[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      return this.spooled(Readable.from(concat(chunks, rest)), options);
    }
    this.budget.give(reserve - bytes);
    const whole = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, bytes);
    return memoryBlob(whole, options.expected, options.contentType, options.display, this.budget);
  }

  private async spooled(source: Readable, options: KeepOptions): Promise<OpenedBlob> {
    const file = await this.spool.write(source, this.maxBytes, options.display).catch((error: unknown) => {
      throw options.mapError(error);
    });
    return verifiedSpooledBlob(file, options.contentType, options.expected, options.display);
  }
}

/** `source` through the transfer's bounds (`counted`: bytes of it already read), as one stream. */
function paced(source: Readable, options: KeepOptions, counted: number): Readable {
  const pace = new Pace(options.limits, options.display, options.startedAt);
  pace.count(counted);
  return guard(source, pace, options.mapError);
}

/**
 * Reads `source` in memory, within the transfer's bounds, until it ends or more than `limit` bytes
 * came (then it is left paused for the rest). Its 'data' events are taken as they come, without a
 * pass-through stream and an async iterator per blob: the reader always takes the bytes here, so
 * no time is held back from the bounds.
 */
function collect(source: Readable, limit: number, options: KeepOptions): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const clock = new TransferClock(
      options.limits,
      options.display,
      options.startedAt,
      () => false,
      (error) => source.destroy(error),
    );
    const settle = () => {
      clock.stop();
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      source.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
      clock.count(chunk.length);
      if (bytes > limit) {
        settle();
        source.pause();
        resolve({ chunks, bytes, ended: false });
      }
    };
    const onEnd = () => {
      settle();
      resolve({ chunks, bytes, ended: true });
    };
    const onError = (error: unknown) => {
      settle();
      reject(error);
    };
    // Destroyed without an error: the answer ended before its last byte.
    const onClose = () =>
      onError(Object.assign(new Error('premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
    source.on('close', onClose);
  });
}

/** The chunks read so far, then the rest of the iterator; the source is released if left early. */
async function* concat(head: Buffer[], rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  try {
    yield* head;
    for (;;) {
      const next = await rest.next();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await rest.return?.();
  }
}
