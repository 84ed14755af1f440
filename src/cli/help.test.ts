/**
 * Help that teaches: every command's help (groups too) ends with one to three examples that run
 * that very command; the top-level help lists the commands by what the user is doing and the exit
 * codes, and the README's exit-code table is the same table.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { EXIT_CODES } from './exit-codes.js';
import { buildProgram } from './program.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md');

function allCommands(command: Command, prefix: string[] = []): Array<[string, Command]> {
  return command.commands
    .filter((c) => c.name() !== 'help')
    .flatMap((c) => {
      const at = [...prefix, c.name()];
      return [[at.join(' '), c] as [string, Command], ...allCommands(c, at)];
    });
}

/** The help as `--help` prints it, with the texts added after it. */
function helpOf(command: Command): string {
  let out = '';
  command.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += s) });
  command.outputHelp();
  return out;
}

const program = buildProgram();

describe('help', () => {
  it.each(allCommands(program))(
    'docstream %s --help ends with one to three examples of itself',
    (name, command) => {
      const help = helpOf(command);
      const at = help.lastIndexOf('\nExamples:\n');
      expect(at).toBeGreaterThan(0);
      const lines = help
        .slice(at + '\nExamples:\n'.length)
        .split('\n')
        .filter((l) => l.trim() !== '');
      expect(lines.length).toBeGreaterThanOrEqual(1);
      expect(lines.length).toBeLessThanOrEqual(3);
      for (const line of lines) {
        expect(line).toMatch(/^ {2}\$ /);
        // The example runs this command (or, for a group, one of its subcommands).
        expect(line).toContain(`docstream ${name}`);
      }
    },
  );

  it('groups the top-level commands by what the user is doing, then lists the exit codes', () => {
    const help = helpOf(program);
    const headings = [...help.matchAll(/^([A-Z][^\n:]*):\n/gm)].map((m) => m[1]);
    expect(headings).toEqual(
      expect.arrayContaining([
        'Run it',
        'Operate it',
        'Try it',
        'The local stack',
        'Exit codes (the same in every command)',
      ]),
    );
    // Every command sits in a named group, not in the catch-all "Commands:" list.
    const catchAll = /\nCommands:\n((?: {2}.*\n)+)/.exec(help)?.[1] ?? '';
    expect(
      catchAll
        .trim()
        .split('\n')
        .map((l) => l.trim().split(' ')[0]),
    ).toEqual(['help']);
    const codes = help.slice(help.indexOf('Exit codes'));
    for (const { code, meaning } of EXIT_CODES) {
      expect(codes.replace(/\s+/g, ' ')).toContain(`${code} ${meaning}`);
    }
  });

  it("has the README's exit-code table, row for row", () => {
    const readme = fs.readFileSync(README, 'utf8');
    const rows = [...readme.matchAll(/^\| (\d+) \| (.*) \|$/gm)].map((m) => ({
      code: Number(m[1]),
      meaning: m[2]!.replace(/`/g, ''),
    }));
    expect(rows).toEqual(EXIT_CODES.map((e) => ({ code: e.code, meaning: e.meaning.replace(/`/g, '') })));
  });
});
