/**
 * What the deployment files expose: published ports and the Docker build context. No YAML or
 * Docker here, only the text of the files, so this runs anywhere.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const read = (name: string) => fs.readFileSync(path.join(root, name), 'utf8');

describe('docker-compose.yml', () => {
  const compose = read('docker-compose.yml');
  const published = [...compose.matchAll(/^\s*ports:\s*\[([^\]]*)\]/gm)].flatMap((m) =>
    (m[1] as string).split(',').map((p) => p.trim().replace(/^'|'$/g, '')),
  );

  it('publishes every port on 127.0.0.1 only', () => {
    expect(published.length).toBeGreaterThanOrEqual(5);
    for (const port of published) expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
  });
});

/** A .dockerignore pattern as Docker reads it: `*` within a segment, `**` across, `!` to re-include. */
function dockerIgnored(patterns: string[], file: string): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+/, '').replace(/\/+$/, '');
    const source = pattern
      .split(/(\*\*\/?|\*|\?)/)
      .map((part) => {
        if (part === '**/' || part === '**') return '(?:.*/)?';
        if (part === '*') return '[^/]*';
        if (part === '?') return '[^/]';
        return part.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      })
      .join('');
    // A pattern that names a directory excludes everything under it.
    if (new RegExp(`^${source}(?:/.*)?$`).test(file)) ignored = !negate;
  }
  return ignored;
}

describe('.dockerignore', () => {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  it.each([
    'config/docstream.json',
    'config/production.json',
    '.env',
    '.env.local',
    '.npmrc',
    'client.pem',
    'tls.key',
  ])('keeps %s out of the build context', (file) => {
    expect(dockerIgnored(patterns, file)).toBe(true);
  });

  it.each(['package.json', 'package-lock.json', 'src/cli/index.ts', 'avro/arrival.avsc', 'stack/README.md'])(
    'still sends %s',
    (file) => {
      expect(dockerIgnored(patterns, file)).toBe(false);
    },
  );
});
