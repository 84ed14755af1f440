/**
 * Comments in src/ say what the code does, why, and which invariant it keeps; they do not remember.
 * This test reads every comment of every .ts file under src/ (tests included) and fails on:
 * - a reference to one of this project's issues (`issue 31`, `issues 29 and 30`, a bare `#31`); an
 *   upstream one names its repository (`tulios/kafkajs#1556`) and leads somewhere, so it stays;
 * - a calendar date (`2026-11-27`, `27 Nov 2026`, `November 2026`): history and dated figures belong
 *   in docs/performance.md and docs/decisions/, where they can be dated and replaced. A date inside
 *   backticks is a sample of data (a version string, a header), not history;
 * - a file header (the comments a file opens with) longer than 15 lines: what does not fit is either
 *   history or belongs beside the code it explains.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MAX_HEADER_LINES = 15;

function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface Comment {
  /** 1-based line of the comment's start. */
  line: number;
  text: string;
}

/** Every comment of a TypeScript source, once each, in order. */
function commentsOf(text: string): Comment[] {
  const source = ts.createSourceFile('file.ts', text, ts.ScriptTarget.Latest, false);
  const seen = new Map<number, Comment>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? [])
      if (!seen.has(r.pos))
        seen.set(r.pos, {
          line: source.getLineAndCharacterOfPosition(r.pos).line + 1,
          text: text.slice(r.pos, r.end),
        });
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    node.forEachChild(visit);
  };
  collect(ts.getLeadingCommentRanges(text, 0));
  visit(source);
  // Comments after the last statement hang on the end-of-file token.
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return [...seen.values()].sort((a, b) => a.line - b.line);
}

const MONTH =
  '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';
const FORBIDDEN: Array<[string, RegExp]> = [
  ['an issue number', /\bissues?\s+#?\d+/i],
  // A bare `#123`; `owner/repo#123` (another project's issue) is preceded by a name character.
  ['an issue number', /(?<![\w/.-])#\d+\b/],
  ['a date', /\b(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b/],
  ['a date', new RegExp(`\\b\\d{1,2}\\s+${MONTH}\\.?,?\\s+(?:19|20)\\d{2}\\b`)],
  ['a date', new RegExp(`\\b${MONTH}\\.?\\s+(?:\\d{1,2},?\\s+)?(?:19|20)\\d{2}\\b`)],
];

/** What a comment must not hold, each found as "line: what (the words)". */
function rememberedIn(comments: Comment[]): string[] {
  const found: string[] = [];
  for (const { line, text } of comments) {
    // Code samples in backticks are data, not history.
    const prose = text.replace(/`[^`\n]*`/g, '``');
    const said = new Set<string>();
    for (const [what, pattern] of FORBIDDEN) {
      const m = pattern.exec(prose);
      if (m && !said.has(what)) {
        said.add(what);
        found.push(`${line}: ${what} (${m[0]})`);
      }
    }
  }
  return found;
}

/** How many lines the comments a file opens with take. */
function headerLines(text: string): number {
  const ranges = ts.getLeadingCommentRanges(text, 0) ?? [];
  if (ranges.length === 0) return 0;
  return text.slice(ranges[0]!.pos, ranges.at(-1)!.end).split('\n').length;
}

const files = typeScriptFiles(root).map((path) => relative(root, path).split(sep).join('/'));

describe('comments under src/', () => {
  it('cite no issue number of this project and no date', () => {
    const found = files.flatMap((file) =>
      rememberedIn(commentsOf(readFileSync(join(root, file), 'utf8'))).map((hit) => `${file}:${hit}`),
    );
    expect(found).toEqual([]);
  });

  it(`open no file with a header longer than ${MAX_HEADER_LINES} lines`, () => {
    const long = files
      .map((file) => [file, headerLines(readFileSync(join(root, file), 'utf8'))] as const)
      .filter(([, lines]) => lines > MAX_HEADER_LINES)
      .map(([file, lines]) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });

  it('finds issue numbers and dates in comments of every kind, and nothing in code or strings', () => {
    const text = [
      '/** The header (issue 31). */',
      "const a = 'issue 31, 2026-11-27'; // measured 2026-11-27",
      'function f(): void {',
      '  /* see #42 */',
      '  return;',
      '}',
      '// found on 27 Nov 2026; upstream tulios/kafkajs#1556 stays',
      '// issues 29 and 30',
      '// In November 2026 it was slower.',
      '// `openjdk version "17.0.15" 2025-04-15` is what java prints.',
    ].join('\n');
    expect(rememberedIn(commentsOf(text))).toEqual([
      '1: an issue number (issue 31)',
      '2: a date (2026-11-27)',
      '4: an issue number (#42)',
      '7: a date (27 Nov 2026)',
      '8: an issue number (issues 29)',
      '9: a date (November 2026)',
    ]);
  });

  it('counts the lines of the header a file opens with', () => {
    expect(headerLines('/**\n * One.\n * Two.\n */\nimport x from "y";\n// not the header\n')).toBe(4);
    expect(headerLines('// a\n// b\n\n/** c */\nconst x = 1;\n')).toBe(4);
    expect(headerLines('const x = 1;\n/** after code */\n')).toBe(0);
  });
});
