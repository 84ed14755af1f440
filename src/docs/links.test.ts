/**
 * Every reference the repository makes to its own text leads somewhere: each markdown link names a
 * file of the repository (never one outside it) and, with `#anchor`, a heading of that file; each
 * citation of a section by its title (`docs/deployment.md, "Kafka ACLs"`, `the README's "Quickstart"`)
 * in a page, a manifest, a configuration or a source comment names a heading (or a bold lead-in) that
 * the cited file has; and nothing names a path outside the repository. A section renamed or a page
 * rewritten fails this test until every reference to it is updated.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SKIP = new Set(['node_modules', 'dist', '.cache', '.git', '.stack', 'coverage', 'bench-results']);
/** Files whose comments may cite a page: manifests, configuration, scripts and sources. */
const COMMENTED = /\.(?:ts|js|cjs|mjs|ya?ml|json|sh|py|env|toml|xml|properties|avsc)$|^Dockerfile$/;

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return entry.isFile() ? [full] : [];
  });
}

/** This file cites and links to broken targets on purpose, to show that the checks catch them. */
const SELF = path.relative(ROOT, fileURLToPath(import.meta.url));
const all = filesUnder(ROOT)
  .map((full) => path.relative(ROOT, full))
  .filter((file) => file !== SELF);
const markdown = all.filter((file) => file.endsWith('.md'));
const commented = all.filter((file) => COMMENTED.test(path.basename(file)) && file !== 'package-lock.json');
const textOf = (file: string): string => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** Markdown without its fenced code blocks (where `#` lines are not headings). */
function unfenced(text: string): string {
  return text.replace(/^[ \t]*(```|~~~)[^\n]*\n[\s\S]*?^[ \t]*\1[ \t]*$/gm, '');
}

/** Markdown without its code, fenced or inline (where `](` is not a link). */
function prose(text: string): string {
  return unfenced(text).replace(/`[^`\n]*`/g, '');
}

/** A heading's text as a reader sees it: links reduced to their text, code and emphasis marks removed. */
function plain(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*_]/g, '')
    .replace(/<[^>]+>/g, '')
    .trim();
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return plain(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

interface Page {
  anchors: Set<string>;
  /** Headings and bold lead-ins, in plain lower-case text: what a citation by title can name. */
  titles: string[];
}

const pages = new Map<string, Page>();
function page(file: string): Page {
  let cached = pages.get(file);
  if (cached) return cached;
  const text = unfenced(textOf(file));
  const headings = [...text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)].map((m) => m[1]!);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const heading of headings) {
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  const bold = [...text.matchAll(/\*\*([^*\n]+)\*\*/g)].map((m) => m[1]!);
  const titles = [...headings, ...bold].map((t) => normalise(plain(t)));
  cached = { anchors, titles };
  pages.set(file, cached);
  return cached;
}

function normalise(s: string): string {
  return s.replace(/[’‘]/g, "'").replace(/[“”]/g, '"').replace(/\s+/g, ' ').trim().toLowerCase();
}

/** Is `target` (absolute) inside the repository? */
const inside = (target: string): boolean => {
  const rel = path.relative(ROOT, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** What is wrong with a link from `file` to `target` (undefined when nothing is). */
function linkProblem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const resolved =
    pathPart === '' ? path.join(ROOT, file) : path.resolve(ROOT, path.dirname(file), decodeURI(pathPart));
  if (!inside(resolved)) return 'outside the repository';
  if (!fs.existsSync(resolved)) return 'no such file';
  if (anchor === undefined || anchor === '') return undefined;
  if (!resolved.endsWith('.md')) return undefined;
  const anchors = page(path.relative(ROOT, resolved)).anchors;
  return anchors.has(decodeURIComponent(anchor).toLowerCase()) ? undefined : `no heading #${anchor}`;
}

/** Every markdown link of a page, as [target, problem] for the broken ones. */
function brokenLinks(file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const problem = linkProblem(file, m[1]!);
    if (problem) found.push(`${file}: (${m[1]}): ${problem}`);
  }
  for (const m of prose(text).matchAll(/^\s*\[[^\]]+\]:\s+(\S+)/gm)) {
    const problem = linkProblem(file, m[1]!);
    if (problem) found.push(`${file}: [${m[1]}]: ${problem}`);
  }
  return found;
}

/**
 * A text's citations of a section by title: `<file>.md, "Title"`, `<file>.md's "Title"`,
 * `README, "Title"`, `the README's "Title"` (comment markers at line starts removed first, so a
 * title broken over two comment lines is read whole).
 */
function citations(text: string): { file: string; title: string }[] {
  const flat = text
    .replace(/^[ \t]*(?:\/\/+|\/?\*+|#+|<!--)[ \t]?/gm, '')
    .replace(/\s+/g, ' ')
    .replace(/[“”]/g, '"')
    .replace(/’/g, "'");
  return [...flat.matchAll(/\b((?:[\w.-]+\/)*[\w.-]+\.md|README)(?:'s|,) (?:section )?"([^"]{2,120})"/g)].map(
    (m) => ({ file: m[1]!, title: m[2]!.replace(/[.,;:…]+$/, '').replace(/\.\.\.$/, '') }),
  );
}

/** The repository file a citation names, from the citing file's folder or the repository's root. */
function citedFile(from: string, cited: string): string | undefined {
  const name = cited === 'README' ? 'README.md' : cited;
  for (const base of [path.dirname(from), '.']) {
    const rel = path.normalize(path.join(base, name));
    if (!rel.startsWith('..') && fs.existsSync(path.join(ROOT, rel))) return rel;
  }
  return undefined;
}

function brokenCitations(file: string, text: string): string[] {
  const found: string[] = [];
  for (const { file: cited, title } of citations(text)) {
    const target = citedFile(file, cited);
    if (!target) {
      found.push(`${file}: ${cited}, "${title}": no such file`);
      continue;
    }
    const want = normalise(title);
    if (!page(target).titles.some((t) => t.startsWith(want)))
      found.push(`${file}: ${cited}, "${title}": no such section in ${target}`);
  }
  return found;
}

/**
 * The directory around the checkout, whose paths a text must not name; none when the checkout sits
 * in a directory every machine has (a clone in the temporary directory or a home), where such paths
 * (`/tmp/x.pdf` in a test) say nothing about this machine.
 */
function machineAround(): string | null {
  const parent = path.dirname(ROOT);
  const generic = [path.parse(ROOT).root, os.tmpdir(), os.homedir()].map((p) => path.resolve(p));
  return generic.includes(path.resolve(parent)) ? null : parent + path.sep;
}

/** Paths that leave the repository: `../` far enough to climb out of it, or this machine's paths around it. */
function outsidePaths(file: string, text: string, around: string | null = machineAround()): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?<![\w.])((?:\.\.\/)+)[\w.-]+(?:\/[\w.-]+)*/g)) {
    if (!inside(path.resolve(ROOT, path.dirname(file), m[1]!))) found.push(`${file}: ${m[0]}`);
  }
  if (around === null) return found;
  for (const m of text.matchAll(
    new RegExp(`${around.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}[\\w./-]*`, 'g'),
  )) {
    if (!inside(path.resolve(m[0]))) found.push(`${file}: ${m[0]}`);
  }
  return found;
}

describe('references within the repository', () => {
  it('finds the pages, manifests and sources it checks', () => {
    expect(markdown).toEqual(expect.arrayContaining(['README.md', path.join('docs', 'performance.md')]));
    expect(commented).toEqual(
      expect.arrayContaining([path.join('deploy', 'kubernetes', 'deployment.yaml'), 'jest.config.js']),
    );
  });

  it('links only to files of the repository, and to headings those files have', () => {
    expect(markdown.flatMap((file) => brokenLinks(file, textOf(file)))).toEqual([]);
  });

  it('cites only sections that exist, by the title the cited file gives them', () => {
    const found = [...markdown, ...commented].flatMap((file) => brokenCitations(file, textOf(file)));
    expect(found).toEqual([]);
  });

  it('names no path outside the repository', () => {
    const found = [...markdown, ...commented].flatMap((file) => outsidePaths(file, textOf(file)));
    expect(found).toEqual([]);
  });

  // The checks above pass on a repository with no references at all: these say they can fail.
  describe('the checks themselves', () => {
    it('flag a missing file, a missing heading and a link out of the repository', () => {
      expect(brokenLinks('docs/x.md', '[a](api.md) [b](nowhere.md) [c](../../shared/spec.md)')).toEqual([
        'docs/x.md: (nowhere.md): no such file',
        'docs/x.md: (../../shared/spec.md): outside the repository',
      ]);
      expect(
        brokenLinks('README.md', '[a](docs/api.md#getting-access) [b](docs/api.md#no-such-heading)'),
      ).toEqual(['README.md: (docs/api.md#no-such-heading): no heading #no-such-heading']);
      expect(brokenLinks('README.md', '[a](#quickstart) [b](#the-old-quickstart)')).toEqual([
        'README.md: (#the-old-quickstart): no heading #the-old-quickstart',
      ]);
    });

    it('flag a citation of a section the file does not have, across comment lines', () => {
      const yaml = '# from files (docs/deployment.md, "Kafka\n# ACLs"); sized (README, "Performance").\n';
      expect(brokenCitations('deploy/kubernetes/x.yaml', yaml)).toEqual([
        'deploy/kubernetes/x.yaml: README, "Performance": no such section in README.md',
      ]);
      expect(brokenCitations('src/x.ts', ' * see docs/gone.md, "Anything".')).toEqual([
        'src/x.ts: docs/gone.md, "Anything": no such file',
      ]);
    });

    it('flag a path that climbs out of the repository or names the machine around it', () => {
      const around = path.join(path.dirname(ROOT), 'shared', 'spec.md');
      const text = `(../../../shared/spec.md) ${around} ../index.js`;
      expect(outsidePaths('src/api/x.ts', text, path.dirname(ROOT) + path.sep)).toEqual([
        'src/api/x.ts: ../../../shared/spec.md',
        `src/api/x.ts: ${around}`,
      ]);
      // A checkout in the temporary directory: its neighbours' paths are no machine's own.
      expect(outsidePaths('src/api/x.ts', text, null)).toEqual(['src/api/x.ts: ../../../shared/spec.md']);
    });

    it('read anchors as GitHub writes them', () => {
      expect(slug("Kafka's bad minutes, and the group's `moves`")).toBe(
        'kafkas-bad-minutes-and-the-groups-moves',
      );
      expect(slug('Sandbox decisions (where the spec says "not shown")')).toBe(
        'sandbox-decisions-where-the-spec-says-not-shown',
      );
    });
  });
});
