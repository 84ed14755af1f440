/**
 * Where an upload's bytes go. A small upload (at most `inMemoryUploads.maxFileBytes`) is kept in
 * memory and inspected from there: no file is opened, written, read back or removed. Larger ones,
 * and small ones once the bytes held by all submissions would exceed
 * `inMemoryUploads.maxTotalBytes`, stream to a file as before, scanned on the way, so a large
 * upload is never held whole. Discarding a stored upload (delete, eviction) frees its bytes.
 */
import { createHash } from 'node:crypto';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import type { Inspection } from './analysis/facts-cache.js';
import { inspectUpload } from './analysis/inspect.js';
import { UploadScanner, type ScanResult } from './analysis/scanner.js';

/** Bytes of uploads held in memory by all submissions of one sandbox. */
export class MemoryBudget {
  private held = 0;

  constructor(private readonly limit: () => number) {}

  get bytes(): number {
    return this.held;
  }

  tryReserve(n: number): boolean {
    if (this.held + n > this.limit()) return false;
    this.held += n;
    return true;
  }

  release(n: number): void {
    this.held -= n;
  }
}

export interface StoredUpload {
  readonly kind: 'memory' | 'disk';
  readonly sha256: string;
  readonly size: number;
  /** Inspects the bytes (a file is read back only when it is a PDF small enough to parse). */
  inspect(): Promise<Inspection>;
  /** Frees the memory or removes the file; idempotent. */
  discard(): void;
}

function scanOf(bytes: Buffer): ScanResult {
  const scanner = new UploadScanner();
  scanner.update(bytes);
  return scanner.finish();
}

function inMemory(bytes: Buffer, budget: MemoryBudget): StoredUpload {
  let held: Buffer | null = bytes;
  return {
    kind: 'memory',
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    inspect: () =>
      held === null ? Promise.reject(new Error('upload discarded')) : inspectUpload(held, scanOf(held)),
    discard() {
      if (held === null) return;
      budget.release(held.length);
      held = null;
    },
  };
}

function onDisk(path: string, scan: ScanResult): StoredUpload {
  let removed = false;
  return {
    kind: 'disk',
    sha256: scan.sha256,
    size: scan.size,
    inspect: () => inspectUpload(path, scan),
    discard() {
      if (removed) return;
      removed = true;
      void rm(path, { force: true }).catch(() => undefined);
    },
  };
}

export interface SinkOptions {
  /** The file the upload goes to if it is not kept in memory. */
  path: string;
  /** Uploads larger than this go to the file; 0 sends every upload there. */
  maxMemoryBytes: number;
  /** The declared Content-Length, when there is one: a larger one goes to the file at once. */
  declaredBytes: number | null;
  budget: MemoryBudget;
  /** Past this many bytes the upload fails with `tooLarge()`. */
  maxBytes?: number;
  tooLarge?: () => Error;
}

/** The end of the upload pipeline: keeps the bytes in memory until they must go to the file. */
export class UploadSink extends Writable {
  /** The chunks held in memory; null once the upload goes to the file. */
  private chunks: Buffer[] | null = [];
  private held = 0;
  private received = 0;
  private file: FileHandle | null = null;
  private scanner: UploadScanner | null = null;
  private stored: StoredUpload | null = null;
  /** The file operation in flight, which destroy waits for before closing the file. */
  private busy: Promise<void> = Promise.resolve();

  constructor(private readonly o: SinkOptions) {
    super();
    if (o.maxMemoryBytes === 0 || (o.declaredBytes !== null && o.declaredBytes > o.maxMemoryBytes)) {
      this.chunks = null;
    }
  }

  /** The stored upload, once the pipeline finished. */
  result(): StoredUpload {
    if (!this.stored) throw new Error('upload not finished');
    return this.stored;
  }

  override _construct(callback: (error?: Error | null) => void): void {
    if (this.chunks !== null) return callback();
    this.openFile().then(() => callback(), callback);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.take([chunk], callback);
  }

  override _writev(entries: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.take(
      entries.map((e) => e.chunk),
      callback,
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.chunks !== null) {
      this.stored = inMemory(Buffer.concat(this.chunks, this.held), this.o.budget);
      this.chunks = null;
      this.held = 0;
      return callback();
    }
    const file = this.file as FileHandle;
    this.file = null;
    file.close().then(() => {
      this.stored = onDisk(this.o.path, (this.scanner as UploadScanner).finish());
      callback();
    }, callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.chunks = null;
    this.freeHeld();
    const settled = this.busy.catch(() => undefined);
    settled
      .then(async () => {
        const file = this.file;
        this.file = null;
        await file?.close();
      })
      .then(
        () => callback(error),
        () => callback(error),
      );
  }

  private take(buffers: Buffer[], callback: (error?: Error | null) => void): void {
    const n = buffers.reduce((sum, b) => sum + b.length, 0);
    this.received += n;
    if (this.o.maxBytes !== undefined && this.received > this.o.maxBytes) {
      return callback(this.o.tooLarge?.() ?? new Error(`more than ${this.o.maxBytes} bytes`));
    }
    if (this.chunks !== null) {
      if (this.held + n <= this.o.maxMemoryBytes && this.o.budget.tryReserve(n)) {
        this.chunks.push(...buffers);
        this.held += n;
        return callback();
      }
      // Too large for memory, or the budget is spent: what came so far goes to the file first.
      const earlier = this.chunks;
      this.chunks = null;
      this.freeHeld();
      this.io(() => this.openFile().then(() => this.append([...earlier, ...buffers])), callback);
      return;
    }
    this.io(() => this.append(buffers), callback);
  }

  private io(op: () => Promise<void>, callback: (error?: Error | null) => void): void {
    this.busy = op();
    this.busy.then(() => callback(), callback);
  }

  private freeHeld(): void {
    this.o.budget.release(this.held);
    this.held = 0;
  }

  private async openFile(): Promise<void> {
    this.scanner = new UploadScanner();
    this.file = await open(this.o.path, 'w');
  }

  private async append(buffers: Buffer[]): Promise<void> {
    for (const b of buffers) (this.scanner as UploadScanner).update(b);
    const expected = buffers.reduce((sum, b) => sum + b.length, 0);
    const { bytesWritten } = await (this.file as FileHandle).writev(buffers);
    if (bytesWritten !== expected) throw new Error(`short write: ${bytesWritten} of ${expected} bytes`);
  }
}
