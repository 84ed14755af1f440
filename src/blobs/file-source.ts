/**
 * `file://` blobs, confined to the configured roots. The check is made on the real path (symlinks
 * followed), and again on the file actually opened, so neither `..`, a symlink pointing out of a
 * root, nor a symlink swapped in after the check can make docstream read a file outside the roots.
 *
 * A small file (at most `blobs.inMemoryBytes`) is read once, at admission, into one buffer: hashed
 * from it, uploaded from it and closed at once, so an upload costs no second read and no file stream
 * (opening, streaming and closing each file is a large part of a document's CPU: docs/performance.md).
 * The buffers held at once are bounded (the source's MemoryBudget); past that, and for a larger file,
 * the file stays open until cleanup and every `open()` streams the same file that was checked and
 * hashed, so memory stays flat with file size. A small file is checked and read with synchronous
 * system calls unless `blobs.fileSyncReads` is false: the same checks in the same order, cheaper than
 * six asynchronous calls. The roots and the temp directory are resolved once, not per document; a
 * root that did not exist yet is resolved again on each use until it does.
 */
import fs from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../observability/logger.js';
import { BlobError } from './errors.js';
import { IN_MEMORY_BYTES, memoryBlob, MemoryBudget } from './kept.js';
import { checkSha256, expectedSha256, Meter } from './meter.js';
import type { BlobPolicy } from './policy.js';
import {
  checkOpened,
  checkRealPath,
  fsError,
  isInside,
  OPEN_FLAGS,
  openedPath,
  openedPathSync,
  realRoot,
  type PathChecks,
  type Root,
} from './file-checks.js';
import type { BlobRef, OpenedBlob } from './types.js';

/** Bytes read per step when a file is streamed. */
const CHUNK_BYTES = 64 * 1024;

/**
 * The first `size` bytes of the file as a stream that reads through the handle without owning it.
 * A stream from `handle.createReadStream` closes the handle when it is destroyed, whatever
 * `autoClose` says, and an upload attempt that fails (a connection reset mid-body) destroys its
 * body: the retry then read a closed handle (`fd` -1). Only `cleanup` closes the handle.
 */
function readRange(handle: FileHandle, size: number): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let position = 0; position < size;) {
      const length = Math.min(CHUNK_BYTES, size - position);
      const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(length), 0, length, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      yield bytesRead === length ? buffer : buffer.subarray(0, bytesRead);
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

export interface FileBlobReaderOptions {
  smallFileBytes?: number;
  bufferedBytesMax?: number;
  /** The budget shared with the other readers of a source (else one of `bufferedBytesMax`). */
  budget?: MemoryBudget;
}

export class FileBlobReader {
  private roots: Promise<Root[]> | undefined;
  private realTmp: Promise<string> | undefined;
  private readonly smallFileBytes: number;
  private readonly budget: MemoryBudget;

  constructor(
    private readonly policy: BlobPolicy,
    private readonly logger: Logger,
    options: FileBlobReaderOptions = {},
  ) {
    this.smallFileBytes = options.smallFileBytes ?? IN_MEMORY_BYTES;
    this.budget = options.budget ?? new MemoryBudget(options.bufferedBytesMax);
  }

  /** Bytes of small files held in memory now (tests, metrics). */
  get bufferedBytes(): number {
    return this.budget.bytes;
  }

  private async realRoots(): Promise<Root[]> {
    this.roots ??= Promise.all(this.policy.fileRoots.map((root) => realRoot(path.resolve(root))));
    const roots = await this.roots;
    if (roots.every((r) => r.real !== undefined)) return roots;
    // A root created after start-up becomes usable once it exists.
    const again = await Promise.all(roots.map((r) => (r.real !== undefined ? r : realRoot(r.lexical))));
    this.roots = Promise.resolve(again);
    return again;
  }

  private tmpDir(): Promise<string> {
    this.realTmp ??= fsp.realpath(os.tmpdir()).catch(() => os.tmpdir());
    return this.realTmp;
  }

  async open(filePath: string, display: string, ref: BlobRef): Promise<OpenedBlob> {
    const { policy } = this;
    if (policy.fileRoots.length === 0) {
      throw new BlobError(
        'blob_not_allowed',
        `${display}: file:// blobs are not allowed; list the directories docstream may read in blobs.fileRoots`,
      );
    }
    const roots = await this.realRoots();
    const notAllowed = (why: string) =>
      new BlobError('blob_not_allowed', `${display} ${why}; it is outside blobs.fileRoots`);

    // Refuse before touching the file system, so events cannot probe which files exist elsewhere.
    const lexicallyInside = roots.some(
      (r) => isInside(filePath, r.lexical) || (r.real !== undefined && isInside(filePath, r.real)),
    );
    if (!lexicallyInside) throw notAllowed('is not under an allowed directory');

    const insideRealRoot = (p: string) => roots.some((r) => r.real !== undefined && isInside(p, r.real));
    const realTmp = await this.tmpDir();
    const checks: PathChecks = { display, insideRealRoot, realTmp, notAllowed };
    if (policy.fileSyncReads !== false) {
      const small = this.openSmallSync(filePath, checks, ref);
      if (small) return small;
    }

    const realPath = await fsp.realpath(filePath).catch((error: unknown) => {
      throw fsError(error, display);
    });
    checkRealPath(realPath, checks);

    const handle = await fsp.open(realPath, OPEN_FLAGS).catch((error: unknown) => {
      throw fsError(error, display);
    });
    let keepOpen = false;
    try {
      checkOpened(await openedPath(handle), checks);
      const size = this.checkStat(await handle.stat(), display, ref);
      if (this.fitsInMemory(size))
        return this.bufferedBlob(await readExactly(handle, size, display), ref, display);

      const expected = this.expectedSha256(ref);

      let sha256: string | undefined;
      if (expected !== undefined) {
        const meter = new Meter({
          maxBytes: size,
          hash: true,
          tooMany: () =>
            new BlobError('blob_unreadable', `${display} grew while it was read`, { retriable: true }),
        });
        await pipeline(readRange(handle, size), meter, async (source: AsyncIterable<Buffer>) => {
          for await (const _chunk of source) {
            // Drained only for the digest.
          }
        }).catch((error: unknown) => {
          throw error instanceof BlobError ? error : fsError(error, display);
        });
        sha256 = meter.digest();
        checkSha256(expected, sha256, display);
      }

      let closed = false;
      keepOpen = true;
      return {
        size,
        sha256,
        contentType: ref.content_type ?? undefined,
        open: async () => {
          if (closed) throw new BlobError('blob_unreadable', `${display} was already cleaned up`);
          return readRange(handle, size);
        },
        cleanup: async () => {
          if (closed) return;
          closed = true;
          await handle.close();
        },
      };
    } finally {
      if (!keepOpen) await handle.close();
    }
  }

  private fitsInMemory(size: number): boolean {
    return size <= this.smallFileBytes && this.budget.fits(size);
  }

  /** The size of an opened file that may be read: a regular file within blobs.maxBytes. */
  private checkStat(stat: fs.Stats, display: string, ref: BlobRef): number {
    if (stat.isDirectory()) throw new BlobError('blob_unreadable', `${display} is a directory`);
    if (!stat.isFile()) throw new BlobError('blob_unreadable', `${display} is not a regular file`);
    const size = stat.size;
    if (size > this.policy.maxBytes) {
      throw new BlobError(
        'blob_too_large',
        `${display} has ${size} bytes, more than blobs.maxBytes (${this.policy.maxBytes})`,
      );
    }
    if (ref.size_bytes != null && ref.size_bytes !== size) {
      this.logger.warn(
        { blob: display, sizeHint: ref.size_bytes, size },
        'blob.size_bytes differs from the file size',
      );
    }
    return size;
  }

  /**
   * The same checks and read as `open`, with synchronous system calls, for a file small enough to
   * be held in memory; null (the file closed again) for a larger one, which `open` streams. On a
   * local disk these calls take microseconds, and save the thread-pool round trips and promises of
   * six asynchronous calls per document; `blobs.fileSyncReads: false` turns this off (e.g. for a
   * network file system that may stall, which would stall the event loop).
   */
  private openSmallSync(filePath: string, checks: PathChecks, ref: BlobRef): OpenedBlob | null {
    const { display } = checks;
    let fd: number;
    try {
      const realPath = fs.realpathSync.native(filePath);
      checkRealPath(realPath, checks);
      fd = fs.openSync(realPath, OPEN_FLAGS);
    } catch (error) {
      throw error instanceof BlobError ? error : fsError(error, display);
    }
    try {
      checkOpened(openedPathSync(fd), checks);
      const size = this.checkStat(fs.fstatSync(fd), display, ref);
      if (!this.fitsInMemory(size)) return null;
      return this.bufferedBlob(readExactlySync(fd, size, display), ref, display);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The digest `blob.sha256` asks for, when it is to be verified. */
  private expectedSha256(ref: BlobRef): string | undefined {
    return this.policy.verifySha256 && ref.sha256 ? expectedSha256(ref.sha256) : undefined;
  }

  /** A small file's bytes, held in memory and counted against the budget until cleanup. */
  private bufferedBlob(bytes: Buffer, ref: BlobRef, display: string): OpenedBlob {
    this.budget.hold(bytes.length);
    return memoryBlob(bytes, this.expectedSha256(ref), ref.content_type ?? undefined, display, this.budget);
  }
}

/** The first `size` bytes of the file, in one buffer; a file that shrank meanwhile is retriable. */
async function readExactly(handle: FileHandle, size: number, display: string): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(size);
  let at = 0;
  try {
    while (at < size) {
      const { bytesRead } = await handle.read(bytes, at, size - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
  } catch (error) {
    throw fsError(error, display);
  }
  return whole(bytes, at, display);
}

/** `readExactly` with synchronous reads of a descriptor. */
function readExactlySync(fd: number, size: number, display: string): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  let at = 0;
  try {
    while (at < size) {
      const read = fs.readSync(fd, bytes, at, size - at, at);
      if (read === 0) break;
      at += read;
    }
  } catch (error) {
    throw fsError(error, display);
  }
  return whole(bytes, at, display);
}

function whole(bytes: Buffer, read: number, display: string): Buffer {
  if (read < bytes.length) {
    throw new BlobError('blob_unreadable', `${display} shrank while it was read`, { retriable: true });
  }
  return bytes;
}
