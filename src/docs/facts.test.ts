/**
 * What the documentation says against what the code does, for facts that once contradicted each
 * other: each check fails if the contradiction comes back. The documentation is every markdown file
 * of the repository (README, docs/, CHANGELOG, SECURITY, CONTRIBUTING, the folders' READMEs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildProgram } from '../cli/program.js';
import { CONFIG_SPEC } from '../config/spec.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SKIP = new Set(['node_modules', 'dist', '.cache', '.git', '.stack', 'coverage', 'bench-results']);

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

const docs = markdownFiles(ROOT).map((file) => ({
  file: path.relative(ROOT, file),
  text: fs.readFileSync(file, 'utf8'),
}));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};

/** Paths the documentation names that are not the repository's files, on purpose. */
const NOT_IN_THE_REPOSITORY = new Set([
  // The configuration file a user writes; docstream reads it when present (src/config/load.ts).
  'config/docstream.json',
  // Paths in KEDA's repository, where the vendored CRDs come from (deploy/kubernetes/schemas/README.md).
  'config/crd/bases/keda.sh_scaledobjects.yaml',
  'config/crd/bases/keda.sh_triggerauthentications.yaml',
]);

/** Every match of `pattern` in the documentation, as "file: match" (empty when none). */
function mentions(pattern: RegExp): string[] {
  return docs.flatMap(({ file, text }) => [...text.matchAll(pattern)].map((m) => `${file}: ${m[0]}`));
}

/** The documentation's sentences (prose split at full stops and blank lines), with their file. */
function sentences(): { file: string; sentence: string }[] {
  return docs.flatMap(({ file, text }) =>
    text
      .replace(/\s+/g, ' ')
      .split(/(?<=\.)\s+(?=[A-Z`(*])|\s\|\s/)
      .map((sentence) => ({ file, sentence })),
  );
}

describe('the documentation agrees with the code', () => {
  it('states the admission wait of a batch as connector.admissionWaitMs and its default', () => {
    const defaultMs = CONFIG_SPEC.connector.admissionWaitMs.default as number;
    expect(mentions(/waits? for (?:its|their) admissions?[^.]{0,20}at most (?:a|one) second/gi)).toEqual([]);
    const stated = mentions(/`connector\.admissionWaitMs` \((\d+(?:\.\d+)?) (s|ms) by default\)/g);
    expect(stated.length).toBeGreaterThan(0);
    for (const m of stated) {
      const [, n, unit] = /\((\d+(?:\.\d+)?) (s|ms) by default\)/.exec(m)!;
      expect(`${m} -> ${Number(n) * (unit === 's' ? 1000 : 1)}`).toBe(`${m} -> ${defaultMs}`);
    }
  });

  it('never calls the state topic’s values JSON (they are binary records)', () => {
    const wrong = sentences().filter(
      ({ sentence }) =>
        /docstream\.state|state topic/i.test(sentence) && /\bJSON values\b|values are JSON/i.test(sentence),
    );
    expect(wrong.map(({ file, sentence }) => `${file}: ${sentence}`)).toEqual([]);
  });

  it('names the engines floor as the oldest Node.js it runs on', () => {
    const floor = /^>=(\d+\.\d+)$/.exec(pkg.engines.node)![1]!;
    // What a reader needs to run docstream ("Node.js and npm (version 22 or later)", "any version
    // from 20 on", "Node.js ≥ 22"); a Node version named for another reason ("a warning on Node ≥
    // 23") is not a claim about the floor.
    const claims = mentions(
      /Node(?:\.js)?(?: and npm)? \((?:any )?version (?:from )?(\d+(?:\.\d+)?)[^)]*\)|Node(?:\.js)? (?:version )?(\d+(?:\.\d+)?) or later|(?:needs|requires|runs on) Node(?:\.js)? (?:≥|>=) ?(\d+(?:\.\d+)?)/g,
    );
    expect(claims.length).toBeGreaterThan(0);
    for (const claim of claims) {
      const n = /(\d+(?:\.\d+)?)(?!.*\d)/.exec(claim.split(': ').slice(1).join(': '))![1];
      expect(`${claim} -> ${n}`).toBe(`${claim} -> ${floor}`);
    }
  });

  it('says the same as `docstream webhooks --help`: the receiver records deliveries, the owner publishes', () => {
    const webhooks = buildProgram().commands.find((c) => c.name() === 'webhooks')!;
    const help = webhooks.description();
    expect(help).toMatch(/\brecords?\b/);
    expect(help).toMatch(/instance running the document[^.]*publishes/);
    // The README's command table says the same of the receiver.
    const readme = docs.find((d) => d.file === 'README.md')!.text;
    const row = readme.split('\n').find((l) => l.startsWith('| `docstream webhooks`'));
    expect(row).toMatch(/records deliveries/);
    expect(row).not.toMatch(/receiver publishes/);
  });

  it('keeps every example configuration’s blobs.fileRoots away from config/, .env files and the repository root', () => {
    const configDir = path.join(ROOT, 'config');
    const examples = fs.readdirSync(configDir).filter((f) => f.endsWith('.json'));
    expect(examples.length).toBeGreaterThan(0);
    for (const file of examples) {
      const json = JSON.parse(fs.readFileSync(path.join(configDir, file), 'utf8')) as {
        blobs?: { fileRoots?: string[] };
      };
      for (const root of json.blobs?.fileRoots ?? []) {
        // Relative roots resolve against the directory docstream runs in: the repository's root here.
        const resolved = path.resolve(ROOT, root);
        const holds = (dir: string) => dir === resolved || dir.startsWith(resolved + path.sep);
        expect(`${file}: ${root} holds config/: ${holds(configDir)}`).toBe(
          `${file}: ${root} holds config/: false`,
        );
        expect(`${file}: ${root} holds .env: ${holds(path.join(ROOT, '.env'))}`).toBe(
          `${file}: ${root} holds .env: false`,
        );
      }
    }
  });

  it('points only at files that exist (relative links, and repository paths in backquotes)', () => {
    const missing: string[] = [];
    for (const { file, text } of docs) {
      const dir = path.dirname(path.join(ROOT, file));
      for (const m of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue;
        if (!fs.existsSync(path.resolve(dir, target))) missing.push(`${file}: link ${target}`);
      }
      for (const m of text.matchAll(/`((?:src|docs|test|scripts|deploy|avro|config|stack)\/[\w./-]+)`/g)) {
        const target = m[1]!.replace(/[.,]$/, '');
        if (NOT_IN_THE_REPOSITORY.has(target)) continue;
        if (!fs.existsSync(path.join(ROOT, target))) missing.push(`${file}: ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('documents every metric declared in src/ on docs/operating.md', () => {
    const declared = new Set<string>();
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
          const text = fs.readFileSync(full, 'utf8');
          for (const m of text.matchAll(/name: '(docstream_[a-z_]+)'/g)) declared.add(m[1]!);
        }
      }
    };
    walk(path.join(ROOT, 'src'));
    expect(declared.size).toBeGreaterThan(20);
    const operating = docs.find((d) => d.file === path.join('docs', 'operating.md'))!.text;
    const rows = new Set([...operating.matchAll(/^\| `(docstream_[a-z_]+)` \|/gm)].map((m) => m[1]!));
    expect([...declared].filter((name) => !rows.has(name)).sort()).toEqual([]);
    expect([...rows].filter((name) => !declared.has(name)).sort()).toEqual([]);
  });

  it('installs docstream only in ways that work: not from the npm registry, the tarball by its version', () => {
    // Nobody has run `npm publish` (CONTRIBUTING.md, "Releasing", step 4), so an install by name from
    // the registry fails, or installs whatever else holds the name. The release that publishes
    // docstream sets this to true.
    const onTheNpmRegistry = false;
    const byName = mentions(
      /\b(?:npm (?:install|i|add)|yarn add|pnpm add)(?: (?:-g|--global))? docstream(?:@[\w.^~-]+)?(?![\w./-])/g,
    );
    if (!onTheNpmRegistry) expect(byName).toEqual([]);
    // What `npm pack` writes is docstream-<package.json's version>.tgz.
    const tarballs = mentions(/\bdocstream-\d+\.\d+\.\d+[\w.-]*?\.tgz\b/g);
    expect(tarballs.length).toBeGreaterThan(0);
    for (const m of tarballs)
      expect(m).toMatch(new RegExp(`: docstream-${pkg.version.replace(/\./g, '\\.')}\\.tgz$`));
  });

  it('offers no upgrade guide from a version that is not an earlier release', () => {
    const changelog = docs.find((d) => d.file === 'CHANGELOG.md')!.text;
    const released = [...changelog.matchAll(/^## (\d+\.\d+\.\d+)\b/gm)].map((m) => m[1]!);
    const older = (v: string) => {
      const a = v.split('.').map(Number);
      const b = pkg.version.split('.').map(Number);
      for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
      return false;
    };
    for (const m of mentions(/upgrad\w* from (?:version )?v?(\d+(?:\.\d+){0,2})/gi)) {
      const v = /(\d+(?:\.\d+){0,2})$/.exec(m)![1]!;
      const full = released.find((r) => r === v || r.startsWith(`${v}.`));
      expect(`${m}: released before ${pkg.version}: ${full !== undefined && older(full)}`).toBe(
        `${m}: released before ${pkg.version}: true`,
      );
    }
  });
});
