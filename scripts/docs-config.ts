/**
 * Writes the configuration reference into docs/configuration.md (npm run docs:config), between its
 * `config-reference` markers: `docstream config docs`'s table with the required mark and importance
 * grade of src/config/grades.ts. src/config/readme-table.test.ts fails until the page is regenerated
 * after a key or a grade changes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gradedReference } from '../src/config/grades.js';
import { replaceBetweenMarkers } from '../src/config/reference-page.js';

const page = path.resolve(process.cwd(), 'docs/configuration.md');
fs.writeFileSync(page, replaceBetweenMarkers(fs.readFileSync(page, 'utf8'), gradedReference()));
process.stdout.write(`docs-config: wrote the reference into ${page}\n`);
