/**
 * The CLI's conventions, checked on every command of commander's tree, so that a new command cannot
 * break them either: an unknown flag is answered in one line on standard error, in the command's
 * name, with a hint and where to read more, and exits 2 (invalid input), never the whole help.
 */
import { jest } from '@jest/globals';
import type { Command } from 'commander';
import { EXIT_INVALID_INPUT } from './exit-codes.js';
import { allCommands, buildProgram } from './program.js';

const paths = (program: Command): string[][] =>
  allCommands(program)
    .filter((c) => c.name() !== 'help')
    .map((c) => {
      const names: string[] = [];
      for (let at: Command | null = c; at !== null && at.parent !== null; at = at.parent)
        names.unshift(at.name());
      return names;
    });

/** The command at `path` of a fresh program. */
function commandAt(program: Command, path: string[]): Command {
  let command = program;
  for (const name of path) command = command.commands.find((c) => c.name() === name)!;
  return command;
}

class Exited extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Parses `docstream ...args` in this process: what it wrote to standard error, and its exit code. */
async function parse(args: string[]): Promise<{ stderr: string; code: number | undefined }> {
  const program = buildProgram();
  let stderr = '';
  const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
    stderr += String(chunk);
    return true;
  });
  const exit = jest.spyOn(process, 'exit').mockImplementation((code?: unknown) => {
    throw new Exited(Number(code));
  });
  try {
    await program.parseAsync(['node', 'docstream', ...args]);
    return { stderr, code: undefined };
  } catch (error) {
    if (error instanceof Exited) return { stderr, code: error.code };
    throw error;
  } finally {
    write.mockRestore();
    exit.mockRestore();
  }
}

/** The command's mandatory options with a value each, so that only the unknown flag is wrong. */
function mandatory(command: Command): string[] {
  return command.options.filter((o) => o.mandatory).flatMap((o) => [o.long!, o.argChoices?.[0] ?? 'x']);
}

describe('an unknown flag', () => {
  const program = buildProgram();
  it.each([
    ['docstream', [] as string[]] as const,
    ...paths(program).map((p) => [`docstream ${p.join(' ')}`, p] as const),
  ])('%s --bogus: one line naming the command, the flag and --help; exit 2', async (_name, path) => {
    const name = ['docstream', ...path].join(' ');
    const { stderr, code } = await parse([...path, ...mandatory(commandAt(program, path)), '--bogus']);
    expect({ stderr, code }).toEqual({
      stderr: `${name}: unknown option '--bogus'; see ${name} --help\n`,
      code: EXIT_INVALID_INPUT,
    });
  });

  it('is answered with the flag meant when one is close', async () => {
    expect(await parse(['run', '--confg', 'x.json'])).toEqual({
      stderr: "docstream run: unknown option '--confg' (did you mean --config?); see docstream run --help\n",
      code: EXIT_INVALID_INPUT,
    });
  });

  it('and an unknown command: one line too', async () => {
    expect(await parse(['dlq', 'lsit'])).toEqual({
      stderr: "docstream dlq: unknown command 'lsit' (did you mean list?); see docstream dlq --help\n",
      code: EXIT_INVALID_INPUT,
    });
  });
});
