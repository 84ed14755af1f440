/**
 * Temporary copies of remote blobs, for when the bytes must be checked before they are handed
 * out (sha256) or their length is not known in advance (an upload needs Content-Length).
 * Files live in one private directory (mode 0700) under the system temp directory, are
 * created 0600, and that directory is refused to `file://` blobs so that one event cannot
 * read another event's download.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobError } from './errors.js';
import { checkSha256, Meter } from './meter.js';
import type { Pace } from './pace.js';
import type { OpenedBlob } from './types.js';

export const SPOOL_PREFIX = 'docstream-blobs-';

export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
}

export class Spool {
  private dir: Promise<string> | undefined;
  private dirPath: string | undefined;

  private directory(): Promise<string> {
    this.dir ??= fsp.mkdtemp(path.join(os.tmpdir(), SPOOL_PREFIX)).then((dir) => {
      this.dirPath = dir;
      return dir;
    });
    return this.dir;
  }

  /**
   * Copies `source` to a new file, counting and hashing, within the transfer's bounds when `pace` is
   * given; removes the file on any failure.
   */
  async write(source: Readable, maxBytes: number, display: string, pace?: Pace): Promise<SpooledFile> {
    const dir = await this.directory();
    const file = path.join(dir, `${randomBytes(16).toString('hex')}.blob`);
    const meter = new Meter({
      maxBytes,
      hash: true,
      tooMany: () => new BlobError('blob_too_large', `${display} is larger than ${maxBytes} bytes`),
    });
    try {
      const sink = fs.createWriteStream(file, { flags: 'wx', mode: 0o600 });
      await (pace ? pipeline(source, pace, meter, sink) : pipeline(source, meter, sink));
    } catch (error) {
      await fsp.rm(file, { force: true });
      throw error;
    }
    return { path: file, size: meter.bytes, sha256: meter.digest() };
  }

  /** Removes the directory and whatever is left in it; for shutdown. */
  closeSync(): void {
    if (this.dirPath) fs.rmSync(this.dirPath, { recursive: true, force: true });
    this.dir = undefined;
    this.dirPath = undefined;
  }
}

/** True when `realPath` lies in any docstream spool directory under the real temp directory. */
export function isInSpoolArea(realPath: string, realTmpDir: string): boolean {
  const relative = path.relative(realTmpDir, realPath);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return false;
  const first = relative.split(path.sep, 1)[0] ?? '';
  return first.startsWith(SPOOL_PREFIX);
}

/**
 * The spooled copy as a blob, once its digest matches `expected` (when given); on a mismatch the
 * copy is removed and `sha256_mismatch` thrown.
 */
export async function verifiedSpooledBlob(
  file: SpooledFile,
  contentType: string | undefined,
  expected: string | undefined,
  display: string,
): Promise<OpenedBlob> {
  const blob = spooledBlob(file, contentType);
  if (expected === undefined) return blob;
  try {
    checkSha256(expected, file.sha256, display);
  } catch (error) {
    await blob.cleanup();
    throw error;
  }
  return blob;
}

/** An OpenedBlob backed by a spooled copy: every `open()` re-reads the copy. */
function spooledBlob(file: SpooledFile, contentType: string | undefined): OpenedBlob {
  let removed = false;
  return {
    size: file.size,
    sha256: file.sha256,
    contentType,
    open: async () => {
      if (removed) throw new BlobError('blob_unreadable', 'blob was already cleaned up');
      return fs.createReadStream(file.path);
    },
    cleanup: async () => {
      removed = true;
      await fsp.rm(file.path, { force: true });
    },
  };
}
