import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { FileBlobReader } from './file-source.js';
import { createBlobSource, type BlobSource } from './index.js';
import { SPOOL_PREFIX } from './spool.js';
import { silentLogger } from '../observability/logger.js';
import { blobError, policy, readAll } from './test-helpers.js';

const content = Buffer.from('%PDF-1.4 not really a pdf, but bytes\n');
const sha = createHash('sha256').update(content).digest('hex');

let base: string;
let root: string;
let source: BlobSource;
const url = (p: string) => pathToFileURL(p).href;

beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'blobs-file-test-'));
  root = path.join(base, 'root');
  fs.mkdirSync(path.join(root, 'sub'), { recursive: true });
  fs.mkdirSync(path.join(base, 'outside'));
  fs.writeFileSync(path.join(root, 'doc.pdf'), content);
  fs.writeFileSync(path.join(root, 'empty.pdf'), '');
  fs.writeFileSync(path.join(base, 'outside', 'secret.txt'), 'secret');
  fs.symlinkSync(path.join(base, 'outside', 'secret.txt'), path.join(root, 'link-out'));
  fs.symlinkSync(path.join(base, 'outside'), path.join(root, 'dir-out'));
  fs.symlinkSync('doc.pdf', path.join(root, 'link-in'));
  fs.symlinkSync(root, path.join(base, 'root-alias'));
  execFileSync('mkfifo', [path.join(root, 'fifo')]);
});

afterAll(() => {
  fs.rmSync(base, { recursive: true, force: true });
});

// Every case runs with the synchronous small-file path (the default) and with asynchronous calls only.
describe.each([true, false])('file:// blobs (blobs.fileSyncReads %s)', (fileSyncReads) => {
  beforeAll(() => {
    source = createBlobSource(policy({ fileRoots: [root], fileSyncReads }));
  });
  afterAll(() => source.close());
  it('reads a file under a root, with its size, as a fresh stream on every open', async () => {
    const blob = await source.resolve({
      url: url(path.join(root, 'doc.pdf')),
      content_type: 'application/pdf',
    });
    expect(blob.size).toBe(content.length);
    expect(blob.contentType).toBe('application/pdf');
    expect(await readAll(await blob.open())).toEqual(content);
    expect(await readAll(await blob.open())).toEqual(content);
    await blob.cleanup();
    expect((await blobError(blob.open())).code).toBe('blob_unreadable');
  });

  it('reads an empty file', async () => {
    const blob = await source.resolve({
      url: url(path.join(root, 'empty.pdf')),
      sha256: createHash('sha256').digest('hex'),
    });
    expect(blob.size).toBe(0);
    expect((await readAll(await blob.open())).length).toBe(0);
    await blob.cleanup();
  });

  it('refuses .. that leaves the root', async () => {
    const error = await blobError(source.resolve({ url: `file://${root}/../outside/secret.txt` }));
    expect(error.code).toBe('blob_not_allowed');
    expect(error.retriable).toBe(false);
  });

  it('refuses symlinks pointing out of the root, to a file or through a directory', async () => {
    expect((await blobError(source.resolve({ url: url(path.join(root, 'link-out')) }))).code).toBe(
      'blob_not_allowed',
    );
    const viaDir = path.join(root, 'dir-out', 'secret.txt');
    expect((await blobError(source.resolve({ url: url(viaDir) }))).code).toBe('blob_not_allowed');
  });

  it('follows symlinks that stay inside, and roots that are symlinks themselves', async () => {
    const inside = await source.resolve({ url: url(path.join(root, 'link-in')) });
    expect(await readAll(await inside.open())).toEqual(content);
    await inside.cleanup();
    const aliased = createBlobSource(policy({ fileSyncReads, fileRoots: [path.join(base, 'root-alias')] }));
    try {
      const blob = await aliased.resolve({ url: url(path.join(base, 'root-alias', 'doc.pdf')) });
      expect(blob.size).toBe(content.length);
      await blob.cleanup();
    } finally {
      aliased.close();
    }
  });

  it('refuses files outside every root, without saying whether they exist', async () => {
    expect((await blobError(source.resolve({ url: 'file:///etc/passwd' }))).code).toBe('blob_not_allowed');
    expect((await blobError(source.resolve({ url: 'file:///etc/no-such-file' }))).code).toBe(
      'blob_not_allowed',
    );
    expect((await blobError(source.resolve({ url: url(`${root}-sibling/doc.pdf`) }))).code).toBe(
      'blob_not_allowed',
    );
  });

  it('reports a missing file under a root as not found', async () => {
    const error = await blobError(source.resolve({ url: url(path.join(root, 'missing.pdf')) }));
    expect(error.code).toBe('blob_not_found');
    expect(error.retriable).toBe(false);
  });

  it('refuses directories and other non-regular files', async () => {
    expect((await blobError(source.resolve({ url: url(path.join(root, 'sub')) }))).code).toBe(
      'blob_unreadable',
    );
    expect((await blobError(source.resolve({ url: url(path.join(root, 'fifo')) }))).code).toBe(
      'blob_unreadable',
    );
  });

  it('refuses files larger than maxBytes and accepts one of exactly maxBytes', async () => {
    const tight = createBlobSource(
      policy({ fileSyncReads, fileRoots: [root], maxBytes: content.length - 1 }),
    );
    const exact = createBlobSource(policy({ fileSyncReads, fileRoots: [root], maxBytes: content.length }));
    try {
      const error = await blobError(tight.resolve({ url: url(path.join(root, 'doc.pdf')) }));
      expect(error.code).toBe('blob_too_large');
      const blob = await exact.resolve({ url: url(path.join(root, 'doc.pdf')) });
      expect(blob.size).toBe(content.length);
      await blob.cleanup();
    } finally {
      tight.close();
      exact.close();
    }
  });

  it('verifies sha256 before handing the file out', async () => {
    const ok = await source.resolve({ url: url(path.join(root, 'doc.pdf')), sha256: sha.toUpperCase() });
    expect(ok.sha256).toBe(sha);
    await ok.cleanup();
    const wrong = await blobError(
      source.resolve({ url: url(path.join(root, 'doc.pdf')), sha256: 'a'.repeat(64) }),
    );
    expect(wrong.code).toBe('sha256_mismatch');
    expect(wrong.retriable).toBe(false);
    const garbage = await blobError(source.resolve({ url: url(path.join(root, 'doc.pdf')), sha256: 'xyz' }));
    expect(garbage.code).toBe('sha256_mismatch');
  });

  it('skips verification when verifySha256 is off', async () => {
    const lax = createBlobSource(policy({ fileSyncReads, fileRoots: [root], verifySha256: false }));
    try {
      const blob = await lax.resolve({ url: url(path.join(root, 'doc.pdf')), sha256: 'a'.repeat(64) });
      expect(blob.sha256).toBeUndefined();
      await blob.cleanup();
    } finally {
      lax.close();
    }
  });

  it("refuses docstream's own temp files even under an allowed root", async () => {
    const spoolDir = fs.mkdtempSync(path.join(os.tmpdir(), SPOOL_PREFIX));
    const file = path.join(spoolDir, 'other-event.blob');
    fs.writeFileSync(file, 'someone else');
    const tmpRooted = createBlobSource(policy({ fileSyncReads, fileRoots: [os.tmpdir()] }));
    try {
      expect((await blobError(tmpRooted.resolve({ url: url(file) }))).code).toBe('blob_not_allowed');
    } finally {
      tmpRooted.close();
      fs.rmSync(spoolDir, { recursive: true, force: true });
    }
  });

  it('reads a small file once into memory: the bytes stay what was checked, and are released at cleanup', async () => {
    const file = path.join(root, 'small.pdf');
    fs.writeFileSync(file, content);
    const reader = new FileBlobReader(policy({ fileSyncReads, fileRoots: [root] }), silentLogger);
    const blob = await reader.open(file, 'small.pdf', { url: url(file), sha256: sha });
    expect(blob.bytes).toEqual(content);
    expect(blob.sha256).toBe(sha);
    expect(reader.bufferedBytes).toBe(content.length);
    // Changed after admission: the upload still sends the bytes that were checked and hashed.
    fs.writeFileSync(file, 'replaced');
    expect(await readAll(await blob.open())).toEqual(content);
    await blob.cleanup();
    expect(blob.bytes).toBeUndefined();
    expect(reader.bufferedBytes).toBe(0);
    expect((await blobError(blob.open())).code).toBe('blob_unreadable');
  });

  it('streams a file larger than the small-file size from the file that was checked', async () => {
    const reader = new FileBlobReader(policy({ fileSyncReads, fileRoots: [root] }), silentLogger, {
      smallFileBytes: 4,
    });
    const file = path.join(root, 'doc.pdf');
    const blob = await reader.open(file, 'doc.pdf', { url: url(file), sha256: sha });
    expect(blob.bytes).toBeUndefined();
    expect(blob.sha256).toBe(sha);
    expect(reader.bufferedBytes).toBe(0);
    expect(await readAll(await blob.open())).toEqual(content);
    await blob.cleanup();
    const wrong = await blobError(reader.open(file, 'doc.pdf', { url: url(file), sha256: 'a'.repeat(64) }));
    expect(wrong.code).toBe('sha256_mismatch');
  });

  it('streams a large file again after an attempt destroyed its stream (a failed upload is retried)', async () => {
    const big = Buffer.alloc(200 * 1024 + 7, 7);
    big.write('start', 0);
    big.write('end', big.length - 3);
    const file = path.join(root, `big-${String(fileSyncReads)}.bin`);
    fs.writeFileSync(file, big);
    const reader = new FileBlobReader(policy({ fileSyncReads, fileRoots: [root] }), silentLogger, {
      smallFileBytes: 1024,
    });
    const blob = await reader.open(file, 'big.bin', { url: url(file) });
    expect(blob.bytes).toBeUndefined();
    const first = await blob.open();
    await new Promise<void>((resolve) => first.once('data', () => resolve()));
    first.on('error', () => undefined);
    first.destroy(new Error('connection reset mid-body'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await readAll(await blob.open())).toEqual(big);
    expect(await readAll(await blob.open())).toEqual(big);
    await blob.cleanup();
    expect((await blobError(blob.open())).code).toBe('blob_unreadable');
  });

  it('streams once the memory for small files is spent, and buffers again after a cleanup', async () => {
    const reader = new FileBlobReader(policy({ fileSyncReads, fileRoots: [root] }), silentLogger, {
      bufferedBytesMax: content.length,
    });
    const file = path.join(root, 'doc.pdf');
    const first = await reader.open(file, 'doc.pdf', { url: url(file) });
    const second = await reader.open(file, 'doc.pdf', { url: url(file) });
    expect(first.bytes).toEqual(content);
    expect(second.bytes).toBeUndefined();
    expect(await readAll(await second.open())).toEqual(content);
    await first.cleanup();
    await second.cleanup();
    const third = await reader.open(file, 'doc.pdf', { url: url(file) });
    expect(third.bytes).toEqual(content);
    await third.cleanup();
  });

  it('resolves the roots once, and a root created after start-up once it exists', async () => {
    const later = path.join(base, `later-${String(fileSyncReads)}`);
    const reader = new FileBlobReader(policy({ fileSyncReads, fileRoots: [later] }), silentLogger);
    const file = path.join(later, 'doc.pdf');
    expect((await blobError(reader.open(file, 'doc.pdf', { url: url(file) }))).code).toBe('blob_not_found');
    fs.mkdirSync(later);
    fs.writeFileSync(file, content);
    const blob = await reader.open(file, 'doc.pdf', { url: url(file) });
    expect(blob.bytes).toEqual(content);
    await blob.cleanup();
    const outside = path.join(base, 'outside', 'secret.txt');
    expect((await blobError(reader.open(outside, 'secret.txt', { url: url(outside) }))).code).toBe(
      'blob_not_allowed',
    );
  });
});
