import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sampleBytes } from '../demo/corpus.js';
import { inspectFile } from './analysis/inspect.js';
import { UploadScanner } from './analysis/scanner.js';
import { MemoryBudget, UploadSink } from './upload-store.js';

const KiB = 1024;
const MiB = 1024 * KiB;

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'docstream-upload-store-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const exists = (p: string) =>
  fs.stat(p).then(
    () => true,
    () => false,
  );

/** Streams `bytes` in `chunk`-sized pieces into a new sink. */
async function store(
  bytes: Buffer,
  o: { max?: number; budget?: MemoryBudget; declared?: boolean; chunk?: number; name?: string } = {},
) {
  const file = path.join(dir, o.name ?? 'upload.bin');
  const budget = o.budget ?? new MemoryBudget(() => 256 * MiB);
  const sink = new UploadSink({
    path: file,
    maxMemoryBytes: o.max ?? MiB,
    declaredBytes: o.declared ? bytes.length : null,
    budget,
  });
  const chunk = o.chunk ?? 16 * KiB;
  const pieces = function* () {
    for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk);
  };
  await pipeline(Readable.from(pieces()), sink);
  return { stored: sink.result(), file, budget };
}

describe('UploadSink', () => {
  test('a small upload stays in memory and is inspected like the same file on disk', async () => {
    const bytes = await sampleBytes('backdated-pdf');
    const { stored, file, budget } = await store(bytes, { chunk: 1000 });
    expect(stored).toMatchObject({ kind: 'memory', sha256: sha(bytes), size: bytes.length });
    expect(await exists(file)).toBe(false);
    expect(budget.bytes).toBe(bytes.length);

    const copy = path.join(dir, 'copy.pdf');
    await fs.writeFile(copy, bytes);
    const scanner = new UploadScanner();
    scanner.update(bytes);
    const fromFile = await inspectFile(copy, scanner.finish());
    const { facts, cacheable } = await stored.inspect();
    expect(cacheable).toBe(true);
    expect(facts).toEqual(fromFile);
    expect(facts).toMatchObject({ fileType: 'pdf', numPages: 2, parseFailed: false });

    stored.discard();
    stored.discard();
    expect(budget.bytes).toBe(0);
    await expect(stored.inspect()).rejects.toThrow('discarded');
  });

  test.each([
    ['a declared length over the limit', true],
    ['a chunked body that grows over the limit', false],
  ])('%s goes to disk, whole and scanned', async (_name, declared) => {
    const bytes = Buffer.alloc(3 * MiB + 5, 7);
    bytes.write('%PDF-1.4\n', 0, 'latin1');
    const { stored, file, budget } = await store(bytes, { declared });
    expect(stored).toMatchObject({ kind: 'disk', sha256: sha(bytes), size: bytes.length });
    expect(sha(await fs.readFile(file))).toBe(sha(bytes));
    expect(budget.bytes).toBe(0);
    const { facts } = await stored.inspect();
    expect(facts.mimeType).toBe('application/pdf');
    stored.discard();
    // The file goes in the background: wait until it is gone, 5 s at most.
    for (let i = 0; i < 500 && (await exists(file)); i++) await new Promise((r) => setTimeout(r, 10));
    expect(await exists(file)).toBe(false);
  });

  test('past the total budget uploads go to disk; discarding one frees budget again', async () => {
    const budget = new MemoryBudget(() => 100 * KiB);
    const a = Buffer.alloc(60 * KiB, 1);
    const b = Buffer.alloc(60 * KiB, 2);
    const first = await store(a, { budget, name: 'a.bin' });
    const second = await store(b, { budget, name: 'b.bin' });
    expect(first.stored.kind).toBe('memory');
    expect(second.stored.kind).toBe('disk');
    expect(sha(await fs.readFile(second.file))).toBe(sha(b));
    expect(budget.bytes).toBe(60 * KiB);
    first.stored.discard();
    expect(budget.bytes).toBe(0);
    const third = await store(b, { budget, name: 'c.bin' });
    expect(third.stored.kind).toBe('memory');
    expect(await exists(third.file)).toBe(false);
  });

  test('past maxBytes the upload fails with tooLarge, holding nothing', async () => {
    const budget = new MemoryBudget(() => 256 * MiB);
    for (const maxMemoryBytes of [MiB, 0]) {
      const sink = new UploadSink({
        path: path.join(dir, `big-${maxMemoryBytes}.bin`),
        maxMemoryBytes,
        declaredBytes: null,
        budget,
        maxBytes: 100 * KiB,
        tooLarge: () => new Error('413 too large'),
      });
      const source = Readable.from([Buffer.alloc(60 * KiB), Buffer.alloc(60 * KiB), Buffer.alloc(60 * KiB)]);
      await expect(pipeline(source, sink)).rejects.toThrow('413 too large');
      expect(budget.bytes).toBe(0);
    }
    const exact = new UploadSink({
      path: path.join(dir, 'exact.bin'),
      maxMemoryBytes: MiB,
      declaredBytes: null,
      budget,
      maxBytes: 100 * KiB,
    });
    await pipeline(Readable.from([Buffer.alloc(50 * KiB), Buffer.alloc(50 * KiB)]), exact);
    expect(exact.result().size).toBe(100 * KiB);
  });

  test('maxMemoryBytes 0 sends every upload to disk', async () => {
    const { stored, file } = await store(Buffer.from('tiny'), { max: 0 });
    expect(stored.kind).toBe('disk');
    expect(await fs.readFile(file, 'latin1')).toBe('tiny');
  });

  test('a large streamed upload is never held in memory', async () => {
    const size = 96 * MiB;
    const chunk = Buffer.alloc(64 * KiB, 0x41);
    const budget = new MemoryBudget(() => 256 * MiB);
    const file = path.join(dir, 'large.bin');
    const sink = new UploadSink({ path: file, maxMemoryBytes: MiB, declaredBytes: null, budget });
    const before = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const source = Readable.from(
      (function* () {
        for (let sent = 0; sent < size; sent += chunk.length) {
          peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
          yield Buffer.from(chunk);
        }
      })(),
    );
    await pipeline(source, sink);
    expect(sink.result()).toMatchObject({ kind: 'disk', size });
    expect((await fs.stat(file)).size).toBe(size);
    expect(budget.bytes).toBe(0);
    // Buffers of the chunks in flight and chunks V8 has not collected yet (it collects external
    // memory lazily: 24.01 MiB was seen once), never the upload: a sink holding it would pass 96 MiB.
    expect(peak).toBeLessThan(size / 2);
  });

  test('an aborted upload frees its memory and closes its file', async () => {
    const budget = new MemoryBudget(() => 256 * MiB);
    const file = path.join(dir, 'aborted.bin');
    const sink = new UploadSink({ path: file, maxMemoryBytes: MiB, declaredBytes: null, budget });
    const source = Readable.from(
      (async function* () {
        yield Buffer.alloc(600 * KiB);
        yield Buffer.alloc(600 * KiB); // spills to the file
        throw new Error('client went away');
      })(),
    );
    await expect(pipeline(source, sink)).rejects.toThrow('client went away');
    expect(budget.bytes).toBe(0);
    expect(() => sink.result()).toThrow('not finished');
    // The file handle is closed: the file can be removed and is gone.
    await fs.rm(file, { force: true });
    expect(await exists(file)).toBe(false);

    const small = new UploadSink({ path: file, maxMemoryBytes: MiB, declaredBytes: null, budget });
    const failing = Readable.from(
      (async function* () {
        yield Buffer.alloc(10 * KiB);
        throw new Error('again');
      })(),
    );
    await expect(pipeline(failing, small)).rejects.toThrow('again');
    expect(budget.bytes).toBe(0);
    expect(await exists(file)).toBe(false);
  });
});
