/**
 * `file://` blobs, confined to the configured roots. The check is made on the real path
 * (symlinks followed), and again on the file actually opened, so neither `..`, a symlink
 * pointing out of a root, nor a symlink swapped in after the check can make docstream read
 * a file outside the roots. The file stays open until cleanup, so every `open()` reads the
 * same file that was checked and hashed.
 */
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

interface Root {
  lexical: string;
  real: string | undefined;
}

const RETRIABLE_FS_CODES = new Set(['EMFILE', 'ENFILE', 'EIO', 'EAGAIN', 'EBUSY']);

export function isInside(candidate: string, root: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === '' ||
    (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative))
  );
}

async function realRoots(fileRoots: readonly string[]): Promise<Root[]> {
  return Promise.all(
    fileRoots.map(async (root) => {
      const lexical = path.resolve(root);
      const real = await fsp.realpath(lexical).catch(() => undefined);
      return { lexical, real };
    }),
  );
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

export async function openFileBlob(
  filePath: string,
  display: string,
  ref: BlobRef,
  policy: BlobPolicy,
  logger: Logger,
): Promise<OpenedBlob> {
  if (policy.fileRoots.length === 0) {
    throw new BlobError(
      'blob_not_allowed',
      `${display}: file:// blobs are not allowed; list the directories docstream may read in blobs.fileRoots`,
    );
  }
  const roots = await realRoots(policy.fileRoots);
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
  const realTmp = await fsp.realpath(os.tmpdir()).catch(() => os.tmpdir());
  if (isInSpoolArea(realPath, realTmp)) {
    throw new BlobError('blob_not_allowed', `${display} is a docstream temporary file`);
  }

  const flags = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
  const handle = await fsp.open(realPath, flags).catch((error: unknown) => {
    throw fsError(error, display);
  });
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

    let sha256: string | undefined;
    if (policy.verifySha256 && ref.sha256) {
      const expected = expectedSha256(ref.sha256);
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
  } catch (error) {
    await handle.close();
    throw error;
  }
}
