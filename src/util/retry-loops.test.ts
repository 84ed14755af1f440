/**
 * Every retry goes through `retry()`, the one retry primitive: this test reads every source file of src/ and fails
 * on a hand-written sleep-and-retry loop elsewhere. Such a loop is a `for`/`while`/`do` whose body both
 * catches a failure (a try with a catch) and waits (an awaited `sleep(...)`, `setTimeout(...)` or a
 * `new Promise` around one) before going round again. Timers that are not retries pass: the scheduler
 * (no catch), polls of progress or health that wait without catching (replay's progress, the stack's
 * health wait), and loops that catch without waiting.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
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

/** True when `node` is a call that waits: `sleep(...)`, `x.sleep(...)`, `setTimeout(...)`. */
function isWait(node: ts.Node): boolean {
  if (!ts.isCallExpression(node)) return false;
  const callee = node.expression;
  const name = ts.isIdentifier(callee)
    ? callee.text
    : ts.isPropertyAccessExpression(callee)
      ? callee.name.text
      : '';
  return name === 'sleep' || name === 'setTimeout';
}

/** True when `node`'s subtree (functions declared inside excluded, but promise executors kept) has `what`. */
function contains(node: ts.Node, what: (n: ts.Node) => boolean): boolean {
  let found = false;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (what(n)) {
      found = true;
      return;
    }
    // A function declared in the loop runs later, not as part of this round (a callback, a handler).
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n)) && n !== node) return;
    ts.forEachChild(n, visit);
  };
  visit(node);
  return found;
}

/** An awaited wait: `await sleep(..)`, `await new Promise((r) => setTimeout(r, ..))`. */
function isAwaitedWait(n: ts.Node): boolean {
  return ts.isAwaitExpression(n) && contains(n.expression, isWait);
}

function hasCatch(n: ts.Node): boolean {
  return ts.isTryStatement(n) && n.catchClause !== undefined;
}

function isLoop(n: ts.Node): n is ts.IterationStatement {
  return ts.isForStatement(n) || ts.isWhileStatement(n) || ts.isDoStatement(n);
}

/** `file:line` of every loop that catches and waits. */
export function handWrittenRetries(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    if (isLoop(n) && contains(n.statement, hasCatch) && contains(n.statement, isAwaitedWait)) {
      const line = source.getLineAndCharacterOfPosition(n.getStart()).line + 1;
      found.push(`${file}:${line}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

describe('retry loops', () => {
  it('finds no hand-written sleep-and-retry loop in src/ outside util/retry.ts', () => {
    const found = sources(root)
      .map((path) => relative(root, path))
      .filter((file) => file !== join('util', 'retry.ts'))
      .flatMap((file) => handWrittenRetries(file, readFileSync(join(root, file), 'utf8')));
    expect(found).toEqual([]);
  });

  it('recognises the shapes it looks for, and leaves timers that are not retries alone', () => {
    const retries = `
      async function a() {
        for (let attempt = 0; ; attempt++) {
          try { return await f(); } catch (err) { await new Promise((r) => setTimeout(r, 100)); }
        }
      }
      async function b() {
        while (true) {
          try { await f(); break; } catch { log(); }
          await clock.sleep(100);
        }
      }`;
    expect(handWrittenRetries('x.ts', retries)).toEqual(['x.ts:3', 'x.ts:8']);
    const notRetries = `
      async function poll() {
        for (;;) { if (await done()) return; await sleep(100); }
      }
      function scheduler() {
        for (;;) { const t = setTimeout(fire, 10); if (ok()) break; }
      }
      async function shrink() {
        for (let i = 0; i < 12; i++) { try { return await send(); } catch (e) { limit /= 2; } }
      }`;
    expect(handWrittenRetries('y.ts', notRetries)).toEqual([]);
  });
});
