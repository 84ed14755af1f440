/**
 * The README's configuration table is `docstream config docs` (the spec's own reference), so that a
 * key added to the spec cannot be missing from the documentation. When it fails, replace the table
 * in the README's "Configuration" with the output of `docstream config docs`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configReference } from './load.js';
import { CONFIG_SPEC } from './spec.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md');

/** The table of the README's "Configuration" section (the one whose header is the reference's). */
function readmeTable(): string {
  const text = fs.readFileSync(README, 'utf8');
  const section = text.indexOf('\n## Configuration\n');
  expect(section).toBeGreaterThan(0);
  const lines = text.slice(section).split('\n');
  const header = configReference().split('\n')[0]!;
  const start = lines.indexOf(header);
  expect(start).toBeGreaterThan(0);
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start, end).join('\n');
}

describe("the README's configuration table", () => {
  it('is the output of `docstream config docs`, row for row', () => {
    expect(readmeTable()).toBe(configReference());
  });

  it('has a row for every key of the spec', () => {
    const table = readmeTable();
    for (const [section, fields] of Object.entries(CONFIG_SPEC)) {
      for (const key of Object.keys(fields)) expect(table).toContain(`| \`${section}.${key}\` |`);
    }
  });
});
