/**
 * Every command the documentation tells a reader to run names a command, flags and configuration
 * keys that exist: each `docstream ...` line of a code block (and each `docstream ...` in backquotes)
 * resolves to a command of the CLI whose options include every flag it passes, and every
 * `section.key` in backquotes whose section is a configuration section is a key of the spec, and every
 * configuration shown as a JSON block passes `docstream config check`'s checks. The
 * commands that need a cluster are run for real by the integration tests; this catches a renamed
 * command, flag or key in the pages.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { replacementOf } from '../cli/deprecated.js';
import { buildProgram } from '../cli/program.js';
import { checkConfigFile } from '../config/check.js';
import { CONFIG_SPEC } from '../config/spec.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The pages a user reads (the design notes of docs/ aside). */
const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  'config/README.md',
  'deploy/README.md',
  'deploy/helm/docstream/README.md',
  'docs/getting-started.md',
  'docs/producing.md',
  'docs/consuming.md',
  'docs/operating.md',
  'docs/configuration.md',
  'docs/semantics.md',
  'docs/deployment.md',
  'docs/performance.md',
].filter((page) => fs.existsSync(path.join(ROOT, page)));

const program = buildProgram();

/** The command a docstream invocation names, and the words after it. */
function resolve(words: string[]): { command: Command; rest: string[] } | string {
  let command: Command = program;
  let i = 0;
  for (; i < words.length; i++) {
    const word = words[i]!;
    if (word.startsWith('-')) break;
    const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) {
      if (command === program) return `no command "${word}"`;
      break;
    }
    command = sub;
  }
  return { command, rest: words.slice(i) };
}

function flagsOf(command: Command): Set<string> {
  const flags = new Set(['--help', '-h']);
  for (let c: Command | null = command; c; c = c.parent) {
    for (const option of c.options) {
      // An old spelling kept for scripts is not one to teach.
      if (replacementOf(option) !== undefined) continue;
      if (option.long) flags.add(option.long);
      if (option.short) flags.add(option.short);
      if (option.negate && option.long) flags.add(option.long);
    }
  }
  if (command === program) flags.add('--version').add('-V');
  return flags;
}

/**
 * Every docstream invocation in the page: in code blocks, where `docstream` is the command of a line
 * (first, after a `$ ` prompt (the only commands of a `console` transcript), `npx`, `$(`, `&&`, `;`, `|`
 * or a shell keyword such as `until`; continuation lines joined); inline, a code span that
 * starts with `docstream ` followed by a command word.
 */
function invocations(text: string): string[] {
  const found: string[] = [];
  const fence = /```([a-z]*)\n([\s\S]*?)```/g;
  for (const block of text.matchAll(fence)) {
    const joined = block[2]!.replace(/\\\n\s*/g, ' ');
    for (const line of joined.split('\n')) {
      // In a console transcript only the prompted lines are commands; the rest is their output.
      if (block[1] === 'console' && !/^\s*\$ /.test(line)) continue;
      for (const m of line.matchAll(
        /(?:^\s*(?:\$\s+)?(?:(?:until|while|if|then|do|time)\s+)?|\$\(|&&\s*|;\s*|\|\s*)(?:npx )?docstream ((?:[^#'"|;&)]|'[^']*'|"[^"]*")*)/g,
      ))
        found.push(m[1]!.trim());
    }
  }
  for (const span of text.replace(fence, '').matchAll(/`([^`\n]+)`/g)) {
    const m = /^(?:npx )?docstream ([a-z][\s\S]*)$/.exec(span[1]!);
    if (m) found.push(m[1]!.trim());
  }
  return found;
}

/** Placeholder words (`<file>`, `...`) and alternatives (`up|down`) are not checked literally. */
function words(invocation: string): string[] {
  return invocation
    .split(/\s+/)
    .filter(Boolean)
    .filter((w) => !/^[<[{…]|\.\.\.|^\\?\|/.test(w));
}

describe('the commands the documentation names', () => {
  it.each(PAGES)('%s: every docstream command and flag exists', (page) => {
    const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
    const wrong: string[] = [];
    for (const invocation of invocations(text)) {
      // A markdown table escapes the alternatives' bar: `feedback\|delete`.
      const ws = words(invocation.replace(/\\\|/g, '|'));
      if (ws.length === 0) continue;
      // "dlq list|redrive", "stack up|down|status": each alternative is a command.
      const alternatives = ws[0]!.includes('|') || (ws[1] ?? '').includes('|') ? expand(ws) : [ws];
      for (const alt of alternatives) {
        const found = resolve(alt);
        if (typeof found === 'string') {
          wrong.push(`docstream ${invocation}: ${found}`);
          continue;
        }
        const flags = flagsOf(found.command);
        for (const w of found.rest) {
          for (const flag of w.replace(/\\\|/g, '|').split('|')) {
            const name = /^(--?[a-zA-Z][\w-]*)/.exec(flag)?.[1];
            if (name && !flags.has(name))
              wrong.push(`docstream ${invocation}: ${found.command.name()} has no ${name}`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it.each(PAGES)('%s: every configuration key in backquotes exists', (page) => {
    const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
    const sections = CONFIG_SPEC as unknown as Record<string, Record<string, unknown>>;
    const wrong: string[] = [];
    for (const m of text.matchAll(/`([a-z]+)\.([a-zA-Z0-9]+)`/g)) {
      const [, section, key] = m;
      // A file name (`connector.ts`) is not a key.
      if (!(section! in sections) || /^(ts|js|md|json|yaml|yml)$/.test(key!)) continue;
      if (!(key! in sections[section!]!)) wrong.push(`${section}.${key}`);
    }
    expect(wrong).toEqual([]);
  });

  it.each(PAGES)('%s: every configuration file it shows passes `docstream config check`', (page) => {
    const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-docs-config-'));
    const findings: string[] = [];
    try {
      for (const [i, block] of [...text.matchAll(/```json\n([\s\S]*?)```/g)].entries()) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(block[1]!);
        } catch {
          continue;
        }
        // A configuration is an object of configuration sections (an arrival event is not).
        const keys = parsed && typeof parsed === 'object' ? Object.keys(parsed) : [];
        if (keys.length === 0 || !keys.every((k) => k in CONFIG_SPEC)) continue;
        const file = path.join(dir, `block-${i}.json`);
        fs.writeFileSync(file, block[1]!);
        const result = checkConfigFile(file);
        findings.push(
          ...result.errors.map((e) => `${page}, JSON block ${i + 1}: ${e.replace(file, 'the block')}`),
        );
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(findings).toEqual([]);
  });
});

function expand(ws: string[]): string[][] {
  const [first, second, ...rest] = ws;
  const out: string[][] = [];
  for (const a of first!.split('|'))
    for (const b of (second ?? '').split('|')) out.push([a, ...(b ? [b] : []), ...rest].filter(Boolean));
  return out;
}
