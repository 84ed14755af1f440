/**
 * The one way every command that talks to Kafka, the registry or the API takes its configuration:
 * `-c, --config <file>`, repeatable, later files winning, then `DOCSTREAM_*` variables, then the
 * command's own flags (`loadConfig` keeps that order). A file is JSON sections or a `.env` file of
 * `DOCSTREAM_*` lines, so that secrets can stay in files named by `…_FILE` variables.
 */
import fs from 'node:fs';
import { type Command, Option } from 'commander';
import { loadConfig, type Config } from '../config/index.js';
import { UsageError } from './exit-codes.js';

export interface ConfigFlags {
  config?: string[];
}

/** Each `-c` adds its file(s); a value may also be a comma-separated list, as $DOCSTREAM_CONFIG is. */
function collectFiles(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  ];
}

export function addConfigOption(command: Command): Command {
  return command.addOption(
    new Option(
      '-c, --config <file>',
      'configuration file, JSON or .env with DOCSTREAM_* lines (repeatable, later files win; default: $DOCSTREAM_CONFIG or config/docstream.json)',
    ).argParser(collectFiles),
  );
}

/** Flag values that override configuration keys: `{ section: { key: value } }`, only what was given. */
export type Overrides = Record<string, Record<string, unknown>>;

/** The configuration of a command: its `-c` files (or the defaults), the environment, its flags. */
export function configOf(flags: ConfigFlags, overrides: Overrides = {}): Config {
  const given = Object.fromEntries(
    Object.entries(overrides)
      .map(([section, values]) => [
        section,
        Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)),
      ])
      .filter(([, values]) => Object.keys(values as object).length > 0),
  ) as Overrides;
  return loadConfig({
    ...(flags.config && flags.config.length > 0 ? { files: flags.config } : {}),
    overrides: given,
  });
}

/** The `-c` flags that give the same configuration again, for a hint printed to the user. */
export function configArgs(flags: ConfigFlags): string {
  return (flags.config ?? []).map((file) => ` -c ${file}`).join('');
}

/**
 * A secret from the file a flag names (trailing newline dropped, as `*_FILE` variables do), or
 * from standard input (`--…-stdin`, as `docker login --password-stdin`): never from argv, which
 * shell history and `ps` show to others.
 */
export async function readSecret(
  from: { file?: string; stdin?: boolean },
  flag: string,
): Promise<string | undefined> {
  if (from.file !== undefined && from.stdin) {
    throw new UsageError(`give ${flag}-file or ${flag}-stdin, not both`);
  }
  let value: string;
  if (from.file !== undefined) {
    try {
      value = fs.readFileSync(from.file, 'utf8');
    } catch (error) {
      throw new UsageError(
        `${flag}-file ${from.file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  } else if (from.stdin) {
    if (process.stdin.isTTY)
      process.stderr.write(`${flag.slice(2)}: reading it from standard input (end with Ctrl-D)\n`);
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    value = Buffer.concat(chunks).toString('utf8');
  } else {
    return undefined;
  }
  const secret = value.replace(/\r?\n$/, '').trim();
  if (secret === '') {
    throw new UsageError(`${from.file !== undefined ? `${flag}-file ${from.file}` : `${flag}-stdin`}: empty`);
  }
  return secret;
}

/**
 * A flag that would take a secret as its value: kept (hidden) only to refuse it with exit 2 and the
 * ways that work, before anything is started. The value is never echoed.
 */
export function refusedSecretFlag(flag: string, ways: string): Option {
  return new Option(`${flag} <secret>`, 'refused: a secret is never a flag value')
    .hideHelp()
    .argParser(() => {
      throw new UsageError(
        `${flag} takes no value on the command line: shell history and the process list (ps) would show ` +
          `the secret to others. Pass it ${ways}`,
      );
    });
}
