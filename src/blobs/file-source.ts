/**
 * `file://` blobs, confined to the configured roots. The check is made on the real path
 * (symlinks followed), and again on the file actually opened, so neither `..`, a symlink
 * pointing out of a root, nor a symlink swapped in after the check can make docstream read
 * a file outside the roots.
 *
 * A small file (at most SMALL_FILE_BYTES) is read once, at admission, into one buffer: hashed
 * from it, uploaded from it and closed at once, so an upload costs no second read and no file
 * stream (profiled at ~15 % of the connector's CPU per document: opening, streaming and closing
 * each file). The buffers held at once are bounded (BUFFERED_BYTES_MAX); past that, and for a
 * larger file, the file stays open until cleanup and every `open()` streams the same file that
 * was checked and hashed, so memory stays flat with file size.
 *
 * The roots and the temp directory are resolved once, not per document; a root that did not
 * exist yet is resolved again on each use until it does.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../observability/logger.js';
import { BlobError } from './errors.js';
import { checkSha256, expectedSha256, Meter } from './meter.js';
import type { BlobPolicy } from './policy.js';
import { isInSpoolArea } from './spool.js';
import type { BlobRef, OpenedBlob } from './types.js';

/** Files up to this size are read into memory once, at admission. */
const SMALL_FILE_BYTES = 1024 * 1024;
/** At most this much of small files is held in memory at once (maxInFlight documents may wait). */
const BUFFERED_BYTES_MAX = 64 * 1024 * 1024;

interface Root {
  lexical: string;
  real: string | undefined;
}

const RETRIABLE_FS_CODES = new Set(['EMFILE', 'ENFILE', 'EIO', 'EAGAIN', 'EBUSY']);

function isInside(candidate: string, root: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === '' ||
    (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative))
  );
}

async function realRoot(lexical: string): Promise<Root> {
  const real = await fsp.realpath(lexical).catch(() => undefined);
  return { lexical, real };
}

function fsError(error: unknown, display: string): BlobError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new BlobError('blob_not_found', `${display} does not exist`, { cause: error });
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new BlobError('blob_unreadable', `${display} is not readable (permission denied)`, {
      cause: error,
    });
  }
  if (code === 'ELOOP') {
    return new BlobError('blob_not_allowed', `${display} goes through a symlink loop or a replaced symlink`, {
      cause: error,
    });
  }
  return new BlobError('blob_unreadable', `${display} could not be read (${code || 'error'})`, {
    cause: error,
    retriable: RETRIABLE_FS_CODES.has(code),
  });
}

/** Where the descriptor really points, on systems that tell (Linux); undefined elsewhere. */
async function openedPath(handle: FileHandle): Promise<string | undefined> {
  try {
    const link = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
    return link.replace(/ \(deleted\)$/, '');
  } catch {
    return undefined;
  }
}

function readRange(handle: FileHandle, size: number): Readable {
  if (size === 0) return Readable.from([]);
  return handle.createReadStream({ start: 0, end: size - 1, autoClose: false });
}

export interface FileBlobReaderOptions {
  smallFileBytes?: number;
  bufferedBytesMax?: number;
}

export class FileBlobReader {
  private roots: Promise<Root[]> | undefined;
  private realTmp: Promise<string> | undefined;
  private buffered = 0;
  private readonly smallFileBytes: number;
  private readonly bufferedBytesMax: number;

  constructor(
    private readonly policy: BlobPolicy,
    private readonly logger: Logger,
    options: FileBlobReaderOptions = {},
  ) {
    this.smallFileBytes = options.smallFileBytes ?? SMALL_FILE_BYTES;
    this.bufferedBytesMax = options.bufferedBytesMax ?? BUFFERED_BYTES_MAX;
  }

  /** Bytes of small files held in memory now (tests, metrics). */
  get bufferedBytes(): number {
    return this.buffered;
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
    const { policy, logger } = this;
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

    const realPath = await fsp.realpath(filePath).catch((error: unknown) => {
      throw fsError(error, display);
    });
    const insideRealRoot = (p: string) => roots.some((r) => r.real !== undefined && isInside(p, r.real));
    if (!insideRealRoot(realPath)) throw notAllowed('resolves (through a symlink) to a file');
    const realTmp = await this.tmpDir();
    if (isInSpoolArea(realPath, realTmp)) {
      throw new BlobError('blob_not_allowed', `${display} is a docstream temporary file`);
    }

    const flags = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
    const handle = await fsp.open(realPath, flags).catch((error: unknown) => {
      throw fsError(error, display);
    });
    let keepOpen = false;
    try {
      const opened = await openedPath(handle);
      if (opened !== undefined && (!insideRealRoot(opened) || isInSpoolArea(opened, realTmp))) {
        throw notAllowed('was replaced during the check by a file');
      }
      const stat = await handle.stat();
      if (stat.isDirectory()) throw new BlobError('blob_unreadable', `${display} is a directory`);
      if (!stat.isFile()) throw new BlobError('blob_unreadable', `${display} is not a regular file`);
      const size = stat.size;
      if (size > policy.maxBytes) {
        throw new BlobError(
          'blob_too_large',
          `${display} has ${size} bytes, more than blobs.maxBytes (${policy.maxBytes})`,
        );
      }
      if (ref.size_bytes != null && ref.size_bytes !== size) {
        logger.warn(
          { blob: display, sizeHint: ref.size_bytes, size },
          'blob.size_bytes differs from the file size',
        );
      }
      const expected = policy.verifySha256 && ref.sha256 ? expectedSha256(ref.sha256) : undefined;

      if (size <= this.smallFileBytes && this.buffered + size <= this.bufferedBytesMax) {
        const bytes = await readExactly(handle, size, display);
        const sha256 = expected === undefined ? undefined : createHash('sha256').update(bytes).digest('hex');
        if (expected !== undefined) checkSha256(expected, sha256 as string, display);
        return this.bufferedBlob(bytes, ref.content_type ?? undefined, sha256, display);
      }

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

  /** A blob held in memory: counted against the budget until cleanup. */
  private bufferedBlob(
    bytes: Buffer,
    contentType: string | undefined,
    sha256: string | undefined,
    display: string,
  ): OpenedBlob {
    this.buffered += bytes.length;
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
        this.buffered -= held.length;
        held = undefined;
      },
    };
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
  if (at < size) {
    throw new BlobError('blob_unreadable', `${display} shrank while it was read`, { retriable: true });
  }
  return bytes;
}
