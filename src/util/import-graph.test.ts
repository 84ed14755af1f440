/**
 * The shape of the code: no import cycle between files of src/, none between its folders
 * (a folder imports another only if that one does not import it back, through any path), and nothing
 * in util/ imports a feature folder (util/ is the ground floor). Type-only imports count: a cycle of
 * types is a cycle of meaning. Test files are left out (a test may reach anywhere). A folder and one
 * of its own sub-folders are one unit, not two: the parent assembles its sub-folders and holds their
 * shared vocabulary (`connector/connector.ts` and `connector/types.ts`, `cli/program.ts` and
 * `cli/exit-codes.ts`), so edges between them are not folder edges; sibling sub-folders' edges are.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The src/ files `file` imports or re-exports (relative specifiers only), as paths relative to src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => join(dirname(file), spec.replace(/\.js$/, '.ts')))
    .map((path) => (existsSync(join(root, path)) ? path : join(path.replace(/\.ts$/, ''), 'index.ts')))
    .filter((path) => existsSync(join(root, path)));
}

/** Strongly connected components of more than one node (or a node importing itself): the cycles. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return found;
}

/** The folder of a file: its directory below src/ (`connector/consumer`), `.` for src/ itself. */
const folderOf = (file: string) => dirname(file).split(sep).join('/');

/** True when one folder holds the other (or they are the same). */
const nested = (a: string, b: string) =>
  a === b || a === '.' || b === '.' || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/** The folder graph of a file graph: an edge for each import between folders not nested in each other. */
function folderGraph(graph: Map<string, Set<string>>): Map<string, Set<string>> {
  const folders = new Map<string, Set<string>>();
  for (const [file, imports] of graph) {
    const from = folderOf(file);
    const edges = folders.get(from) ?? new Set<string>();
    for (const target of imports) if (!nested(folderOf(target), from)) edges.add(folderOf(target));
    folders.set(from, edges);
  }
  return folders;
}

const files = sources(root).map((path) => relative(root, path));
const fileGraph = new Map(files.map((f) => [f, new Set(importsOf(f))]));

/** Every .ts file under `dir`, tests included. */
function allTypeScript(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return allTypeScript(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** True when `text` imports, re-exports or requires kafkajs or one of its files (type-only imports too). */
function importsKafkajs(text: string): boolean {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.some((f) => f.fileName === 'kafkajs' || f.fileName.startsWith('kafkajs/'));
}

describe('the import graph of src/', () => {
  it('has no cycle between files', () => {
    expect(cycles(fileGraph)).toEqual([]);
  });

  it('has no cycle between folders', () => {
    expect(cycles(folderGraph(fileGraph))).toEqual([]);
  });

  it('has util/ import nothing outside util/', () => {
    const upward = [...fileGraph]
      .filter(([file]) => folderOf(file) === 'util')
      .flatMap(([file, imports]) =>
        [...imports].filter((t) => folderOf(t) !== 'util').map((t) => `${file} → ${t}`),
      );
    expect(upward).toEqual([]);
  });

  it('has only kafka/ import kafkajs (tests included), so that another client replaces it there alone', () => {
    const outside = allTypeScript(root)
      .map((path) => relative(root, path).split(sep).join('/'))
      .filter((file) => !file.startsWith('kafka/'))
      .filter((file) => importsKafkajs(readFileSync(join(root, file), 'utf8')));
    expect(outside).toEqual([]);
  });

  it('tells an import of kafkajs, of any kind, from other imports', () => {
    expect(importsKafkajs("import kafkajs from 'kafkajs';")).toBe(true);
    expect(importsKafkajs("import type { Kafka } from 'kafkajs';")).toBe(true);
    expect(importsKafkajs("export { logLevel } from 'kafkajs';")).toBe(true);
    expect(importsKafkajs("const c = require('kafkajs/src/network/connection.js');")).toBe(true);
    expect(importsKafkajs("const k = await import('kafkajs');")).toBe(true);
    expect(importsKafkajs("import { KafkaClient } from '../kafka/index.js';")).toBe(false);
    expect(importsKafkajs("import x from 'kafkajs-extra';")).toBe(false);
    expect(importsKafkajs("// kafkajs is imported only by src/kafka/\nconst a = 'kafkajs';")).toBe(false);
  });

  it('finds a cycle and a folder cycle when there is one', () => {
    const graph = new Map([
      ['a/x.ts', new Set(['a/y.ts'])],
      ['a/y.ts', new Set(['b/z.ts'])],
      ['b/z.ts', new Set(['a/x.ts'])],
      ['c/w.ts', new Set(['a/x.ts'])],
    ]);
    expect(cycles(graph)).toEqual([['a/x.ts', 'a/y.ts', 'b/z.ts']]);
    expect(cycles(folderGraph(graph))).toEqual([['a', 'b']]);
    // A sub-folder and its parent import each other freely; two sibling sub-folders may not.
    const siblings = new Map([
      ['h/index.ts', new Set(['h/r/x.ts'])],
      ['h/r/x.ts', new Set(['h/types.ts', 'h/s/y.ts'])],
      ['h/s/y.ts', new Set(['h/r/z.ts'])],
    ]);
    expect(cycles(folderGraph(siblings))).toEqual([['h/r', 'h/s']]);
  });
});
