/**
 * The checks that confine `file://` blobs to their roots (`file-source.ts`): a path inside a root
 * lexically and really (symlinks resolved), never a docstream temporary file, and the file actually
 * opened still inside (a symlink swapped in after the check is caught); and file system errors as
 * blob errors.
 */
import fs from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { BlobError } from './errors.js';
import { isInSpoolArea } from './spool.js';

/** No symlink followed at the last step, and no wait on a FIFO. */
export const OPEN_FLAGS =
  fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

/** What a path (before opening) and the file opened (after) are checked against. */
export interface PathChecks {
  display: string;
  insideRealRoot: (p: string) => boolean;
  realTmp: string;
  notAllowed: (why: string) => BlobError;
}

export function checkRealPath(realPath: string, c: PathChecks): void {
  if (!c.insideRealRoot(realPath)) throw c.notAllowed('resolves (through a symlink) to a file');
  if (isInSpoolArea(realPath, c.realTmp)) {
    throw new BlobError('blob_not_allowed', `${c.display} is a docstream temporary file`);
  }
}

export function checkOpened(opened: string | undefined, c: PathChecks): void {
  if (opened !== undefined && (!c.insideRealRoot(opened) || isInSpoolArea(opened, c.realTmp))) {
    throw c.notAllowed('was replaced during the check by a file');
  }
}

export interface Root {
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

export async function realRoot(lexical: string): Promise<Root> {
  const real = await fsp.realpath(lexical).catch(() => undefined);
  return { lexical, real };
}

export function fsError(error: unknown, display: string): BlobError {
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
export async function openedPath(handle: FileHandle): Promise<string | undefined> {
  try {
    const link = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
    return link.replace(/ \(deleted\)$/, '');
  } catch {
    return undefined;
  }
}

export function openedPathSync(fd: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`).replace(/ \(deleted\)$/, '');
  } catch {
    return undefined;
  }
}
