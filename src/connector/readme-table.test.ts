/** CONTRIBUTING.md's "Layout", its table of where each step lives, names every source file of the connector, so that it stays a true map. */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(join(here, '../../CONTRIBUTING.md'), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [relative(here, path)] : [];
  });
}

it('CONTRIBUTING.md’s table of where each step lives names every file of src/connector/', () => {
  const start = readme.indexOf('Where each step lives (`src/connector/`');
  const table = readme.slice(start, readme.indexOf('\n\n', readme.indexOf('| step | file |', start)));
  const missing = sources(here).filter((file) => !table.includes(`\`${file.split('\\').join('/')}\``));
  expect(missing).toEqual([]);
});
