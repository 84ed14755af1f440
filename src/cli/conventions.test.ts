/**
 * The CLI's conventions, checked on every command of commander's tree, so that a new command cannot
 * break them either: an unknown flag is answered in one line on standard error, in the command's
 * name, with a hint and where to read more, and exits 2 (invalid input), never the whole help; a
 * secret is read from a file named by `--…-file` (or `--…-stdin`), never taken as a value; every
 * duration is `<seconds>`; every command that reads settings takes them with `-c, --config`; an old
 * spelling kept for scripts is hidden, names its replacement and warns once.
 */
import { jest } from '@jest/globals';
import { Command, type Option } from 'commander';
import { applyDeprecated, deprecatedOption, replacementOf } from './deprecated.js';
import { isDuration } from './durations.js';
import { EXIT_INVALID_INPUT } from './exit-codes.js';
import { allCommands, buildProgram } from './program.js';
import { commandPath } from './messages.js';

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

/** Every command of the program with its options, as `docstream dlq list`. */
const everyCommand = (): Array<[string, Command]> =>
  allCommands(buildProgram())
    .filter((c) => c.name() !== 'help')
    .map((c) => [commandPath(c), c]);

const takesValue = (o: Option) => o.required || o.optional;

describe('secrets on the command line', () => {
  const SECRET = /secret|password|private-key|credential/;
  it.each(everyCommand())(
    '%s: a secret comes from --…-file or --…-stdin, never as a value',
    (_path, command) => {
      for (const option of command.options.filter((o) => SECRET.test(o.long ?? ''))) {
        if (replacementOf(option) !== undefined) continue;
        const long = option.long!;
        const has = (flag: string) => command.options.some((o) => o.long === flag && !o.hidden);
        if (option.hidden) {
          // The bare name refuses a value and points at the ways that work.
          expect({ long, refused: option.description.startsWith('refused: a secret') }).toEqual({
            long,
            refused: true,
          });
          expect({ long, file: has(`${long}-file`) }).toEqual({ long, file: true });
        } else if (long.endsWith('-stdin')) {
          expect({ long, value: takesValue(option), file: has(long.replace(/-stdin$/, '-file')) }).toEqual({
            long,
            value: false,
            file: true,
          });
        } else {
          expect(option.flags).toBe(`${long.replace(/-file$/, '')}-file <file>`);
        }
      }
    },
  );

  it('finds the secret files of the commands that take them', () => {
    const files = everyCommand().flatMap(([path, c]) =>
      c.options
        .filter((o) => !o.hidden && /-file$/.test(o.long ?? '') && SECRET.test(o.long!))
        .map((o) => `${path} ${o.long}`),
    );
    expect(files).toEqual(
      expect.arrayContaining([
        'docstream analyze --client-secret-file',
        'docstream sandbox --webhook-secret-file',
        'docstream tenants create --private-key-file',
        'docstream tenants apps --private-key-file',
      ]),
    );
  });
});

describe('durations', () => {
  const LOOKS_LIKE_ONE =
    /timeout|ttl|latency|window|delay|interval|duration|wait|retry-base|-(ms|secs?|seconds|minutes)$|<(ms|secs?|seconds|minutes|duration)>/;
  it.each(everyCommand())('%s: every duration is <seconds>, named without a unit', (_path, command) => {
    for (const option of command.options) {
      if (replacementOf(option) !== undefined) continue;
      if (LOOKS_LIKE_ONE.test(option.flags))
        expect({ flags: option.flags, seconds: isDuration(option) }).toEqual({
          flags: option.flags,
          seconds: true,
        });
      if (!isDuration(option)) continue;
      expect(option.flags).toBe(`${option.long} <seconds>`);
      expect(option.long).not.toMatch(/-(ms|s|secs?|seconds|minutes)$/);
      expect(() => option.parseArg!('30s', undefined)).toThrow(/number of seconds/);
      expect(option.parseArg!('2', undefined)).toBe(2);
    }
  });

  it("finds the durations of every command (timeouts, lifetimes, the sandbox's delays)", () => {
    const found = everyCommand().flatMap(([path, c]) =>
      c.options.filter(isDuration).map((o) => `${path} ${o.long}`),
    );
    expect(found).toEqual(
      expect.arrayContaining([
        'docstream analyze --timeout',
        'docstream analyze --request-timeout',
        'docstream config check --timeout',
        'docstream demo --timeout',
        'docstream stack up --timeout',
        'docstream sandbox --token-ttl',
        'docstream sandbox --processing-mean',
        'docstream sandbox --extra-latency',
        'docstream sandbox --webhook-retry-base',
      ]),
    );
  });
});

describe('-c, --config', () => {
  /** The commands that read no settings, and why. */
  const NO_SETTINGS: Record<string, string> = {
    'docstream config docs': 'prints the reference of the keys',
    'docstream stack up': "the local stack's settings are its flags and DOCSTREAM_STACK_* variables",
    'docstream stack down': 'as stack up',
    'docstream stack status': 'as stack up',
    'docstream stack env': 'as stack up',
    'docstream stack install': 'as stack up',
  };
  const leaves = everyCommand().filter(([, c]) => c.commands.length === 0);

  it.each(leaves)('%s: takes its settings with -c, --config (or reads none)', (path, command) => {
    const config = command.options.find((o) => o.long === '--config');
    if (Object.hasOwn(NO_SETTINGS, path)) expect(config).toBeUndefined();
    else expect(config?.flags).toMatch(/^-c, --config <file(\.json)?>$/);
  });

  it('names only commands that exist among those that read no settings', () => {
    const paths = leaves.map(([path]) => path);
    expect(Object.keys(NO_SETTINGS).filter((p) => !paths.includes(p))).toEqual([]);
  });
});

describe('an old spelling kept for scripts', () => {
  it.each(everyCommand())('%s: is hidden, and names a flag the command has', (_path, command) => {
    for (const option of command.options) {
      const replacement = replacementOf(option);
      if (replacement === undefined) continue;
      const target = command.options.find((o) => o.long === replacement);
      expect({ old: option.long, hidden: option.hidden, replacement: target?.hidden }).toEqual({
        old: option.long,
        hidden: true,
        replacement: false,
      });
      expect(option.description).toBe(`deprecated: use ${replacement}`);
    }
  });

  it('warns once, hands its value to the new flag, and yields to the new flag when both are given', async () => {
    const seen: unknown[] = [];
    let stderr = '';
    const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
      stderr += String(chunk);
      return true;
    });
    try {
      for (const args of [
        ['--wait-ms', '50', '--wait-ms', '70'],
        ['--wait-ms', '50', '--wait', '1'],
      ]) {
        const program = new Command('old-spelling')
          .option('--wait <seconds>', 'how long', Number)
          .addOption(deprecatedOption('--wait-ms <ms>', '--wait', (v) => Number(v) / 1000))
          .hook('preAction', (_p, action) => applyDeprecated(action))
          .action((flags: { wait?: number }) => void seen.push(flags.wait));
        await program.parseAsync(args, { from: 'user' });
      }
    } finally {
      write.mockRestore();
    }
    expect(seen).toEqual([0.07, 1]);
    expect(stderr).toBe('old-spelling: warning: --wait-ms is deprecated; use --wait\n');
  });
});
