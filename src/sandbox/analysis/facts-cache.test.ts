import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sampleBytes } from '../../demo/corpus.js';
import { FactsCache, type Inspection } from './facts-cache.js';
import { inspectFile, inspectUpload } from './inspect.js';
import { UploadScanner } from './scanner.js';

function scan(bytes: Buffer) {
  const scanner = new UploadScanner();
  scanner.update(bytes);
  return scanner.finish();
}

/** A real inspection of `bytes`, counting how often it runs. */
function counted(bytes: Buffer, runs: { n: number }) {
  const s = scan(bytes);
  return {
    sha256: s.sha256,
    inspect: () => {
      runs.n++;
      return inspectUpload(bytes, s);
    },
  };
}

describe('FactsCache', () => {
  test('the same bytes are inspected once and give exactly the uncached facts', async () => {
    const cache = new FactsCache();
    const runs = { n: 0 };
    const bytes = await sampleBytes('backdated-pdf');
    const first = counted(bytes, runs);
    const a = await cache.facts(first.sha256, first.inspect);
    const b = await cache.facts(first.sha256, counted(Buffer.from(bytes), runs).inspect);
    expect(runs.n).toBe(1);
    expect(b).toBe(a);
    expect(cache).toMatchObject({ hits: 1, misses: 1, size: 1 });

    // Uncached, from a file as before: the same facts.
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'docstream-facts-'));
    try {
      const file = path.join(dir, 'doc.pdf');
      await fs.writeFile(file, bytes);
      const uncached = await inspectFile(file, scan(bytes));
      expect(a).toEqual(uncached);
      expect(uncached.fileType).toBe('pdf');
      expect(uncached.numPages).toBe(2);
      expect(uncached.pageText[0]).toContain('Invoice 2026-001');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  test('different bytes are inspected, and concurrent uploads of the same bytes share one inspection', async () => {
    const cache = new FactsCache();
    const runs = { n: 0 };
    const pdf = counted(await sampleBytes('clean-pdf'), runs);
    const png = counted(await sampleBytes('png-image'), runs);
    const [x, y, z] = await Promise.all([
      cache.facts(pdf.sha256, pdf.inspect),
      cache.facts(pdf.sha256, pdf.inspect),
      cache.facts(png.sha256, png.inspect),
    ]);
    expect(runs.n).toBe(2);
    expect(y).toBe(x);
    expect(x.fileType).toBe('pdf');
    expect(z).toMatchObject({ fileType: 'image', image: { width: 640, height: 400 } });
  });

  test('shared facts are frozen', async () => {
    const cache = new FactsCache();
    const pdf = counted(await sampleBytes('clean-pdf'), { n: 0 });
    const facts = await cache.facts(pdf.sha256, pdf.inspect);
    expect(Object.isFrozen(facts)).toBe(true);
    expect(Object.isFrozen(facts.metadata)).toBe(true);
    expect(Object.isFrozen(facts.pageText)).toBe(true);
  });

  test('keeps at most its capacity, dropping the least recently used', async () => {
    const cache = new FactsCache(2);
    const runs = { n: 0 };
    const inspect = (): Promise<Inspection> => {
      runs.n++;
      return inspectUpload(Buffer.from('x'), scan(Buffer.from('x')));
    };
    await cache.facts('a', inspect);
    await cache.facts('b', inspect);
    await cache.facts('a', inspect); // a is now the most recent
    await cache.facts('c', inspect); // drops b
    expect(cache.size).toBe(2);
    expect(runs.n).toBe(3);
    await cache.facts('a', inspect);
    expect(runs.n).toBe(3);
    await cache.facts('b', inspect);
    expect(runs.n).toBe(4);
  });

  test('an inspection that could not read the file is not kept', async () => {
    const cache = new FactsCache();
    const bytes = await sampleBytes('clean-pdf');
    const missing = path.join(os.tmpdir(), 'docstream-facts-missing', 'gone.pdf');
    const failed = await cache.facts('k', () => inspectUpload(missing, scan(bytes)));
    expect(failed.parseFailed).toBe(true);
    expect(cache.size).toBe(0);
    const ok = await cache.facts('k', () => inspectUpload(bytes, scan(bytes)));
    expect(ok.parseFailed).toBe(false);
    expect(cache.size).toBe(1);
  });

  test('a rejected inspection is not kept', async () => {
    const cache = new FactsCache();
    await expect(cache.facts('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(cache.size).toBe(0);
  });
});
