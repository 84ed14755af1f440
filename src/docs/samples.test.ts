/**
 * The producer and consumer samples the pages show are the files under examples/ that the
 * integration tests run (test/examples/samples.test.ts): each code block a page marks with
 * `<!-- sample: examples/... -->` is that file, byte for byte, and every sample file is shown by a
 * page. A sample edited in one place and not the other fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PAGES = ['docs/producing.md', 'docs/consuming.md'];
/** The samples a reader runs (their set-up script and build files aside). */
const SAMPLES = [
  'examples/python/produce_arrival.py',
  'examples/python/consume_results.py',
  'examples/kcat/produce-arrival.sh',
  'examples/kcat/consume-results.sh',
  'examples/go/main.go',
  'examples/java/SendArrival.java',
  'examples/java/ConsumeResults.java',
];

/** Each marked block of a page: the file it names and the block's text. */
function markedBlocks(page: string): Array<{ file: string; block: string }> {
  const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
  return [...text.matchAll(/<!-- sample: (\S+) -->\n```[a-z]*\n([\s\S]*?)```/g)].map((m) => ({
    file: m[1]!,
    block: m[2]!,
  }));
}

describe('the samples the pages show', () => {
  it.each(PAGES)('%s: every marked block is its file under examples/', (page) => {
    const blocks = markedBlocks(page);
    expect(blocks.length).toBeGreaterThan(0);
    for (const { file, block } of blocks) {
      expect({ file, block }).toEqual({ file, block: fs.readFileSync(path.join(ROOT, file), 'utf8') });
    }
  });

  it('every sample file is shown by a page', () => {
    const shown = new Set(PAGES.flatMap((page) => markedBlocks(page).map((b) => b.file)));
    expect(SAMPLES.filter((file) => !shown.has(file))).toEqual([]);
    for (const file of SAMPLES) expect(fs.existsSync(path.join(ROOT, file))).toBe(true);
  });
});
