/**
 * The configuration page's reference (docs/configuration.md) is `docstream config docs` (the spec's
 * own reference) with each key's required mark and importance grade (grades.ts), so that a key added
 * to the spec cannot be missing from the documentation. When it fails, run `npm run docs:config`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_GRADES, gradedReference, specKeys } from './grades.js';
import { configReference } from './load.js';
import { referenceOf } from './reference-page.js';

const PAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/configuration.md');

describe("the configuration page's reference", () => {
  const table = referenceOf(fs.readFileSync(PAGE, 'utf8'));

  it('is the generated table, row for row (npm run docs:config writes it)', () => {
    expect(table).toBe(gradedReference());
  });

  it('has a row for every key of the spec, with what `docstream config docs` says of it', () => {
    const rows = configReference().split('\n').slice(2);
    expect(rows.length).toBe(specKeys().length);
    for (const row of rows) {
      const [keyCell, variable, type, def] = row.split(' | ');
      const line = table!.split('\n').find((l) => l.startsWith(`${keyCell} | `));
      expect(line).toContain(` | ${variable} | ${type} | ${def} | `);
    }
  });

  it('grades every key: a new key gets its importance (and required mark) in grades.ts', () => {
    expect(specKeys().filter((key) => !(key in CONFIG_GRADES))).toEqual([]);
  });

  it('marks the keys a deployment must set as required, and flags the unsafe defaults', () => {
    for (const key of ['kafka.brokers', 'registry.url', 'api.clientId', 'api.clientSecret'])
      expect(table).toMatch(new RegExp(`^\\| \`${key.replace('.', '\\.')}\` \\| yes \\| high \\|`, 'm'));
    for (const key of ['topics.replicationFactor', 'api.clientSecret', 'blobs.s3ForcePathStyle'])
      expect(table).toMatch(
        new RegExp(`^\\| \`${key.replace('.', '\\.')}\` \\|.*Default unsafe outside this machine`, 'm'),
      );
  });
});
