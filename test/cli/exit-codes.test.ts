/**
 * The exit codes the README promises, command by command, on the built CLI as users run it: invalid
 * input (a bad flag or argument, a bad `DOCSTREAM_*` value, a missing file) exits 2 with a message,
 * before anything is started or changed. Every command of the program has a case here: a new
 * command without one fails the first test.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';

const CLI = path.resolve('dist/cli/index.js');
const BAD_ENV = { DOCSTREAM_KAFKA_SESSION_TIMEOUT_MS: 'soon' };
const BAD_ENV_MESSAGE = /DOCSTREAM_KAFKA_SESSION_TIMEOUT_MS: expected an integer, got "soon"/;

interface Case {
  args: string[];
  env?: Record<string, string>;
  message: RegExp;
}

/** One invalid input (or more) per command, by the command's path. */
const CASES: Record<string, Case[]> = {
  'config show': [{ args: [], env: BAD_ENV, message: BAD_ENV_MESSAGE }],
  'config docs': [{ args: ['extra'], message: /too many arguments/ }],
  'config check': [{ args: ['/nonexistent/docstream.json'], message: /cannot read/ }],
  'stack up': [{ args: ['--kafka-port', 'abc'], message: /--kafka-port/ }],
  // Refused before it acts: the shared stack stays up.
  'stack down': [{ args: ['--services', 'kafka', '--bogus'], message: /unknown option '--bogus'/ }],
  'stack status': [{ args: ['--registry-port', '0'], message: /--registry-port/ }],
  'stack env': [{ args: ['--s3-port', '70000'], message: /--s3-port/ }],
  'stack install': [{ args: ['--bogus'], message: /unknown option '--bogus'/ }],
  sandbox: [{ args: ['--port', 'abc'], message: /--port/ }],
  run: [
    { args: [], env: BAD_ENV, message: BAD_ENV_MESSAGE },
    { args: ['--config', '/nonexistent/docstream.json'], message: /\/nonexistent\/docstream\.json/ },
  ],
  webhooks: [{ args: [], env: BAD_ENV, message: BAD_ENV_MESSAGE }],
  send: [{ args: ['/nonexistent/invoice.pdf'], message: /no such file/ }],
  demo: [{ args: ['--timeout', 'soon'], message: /--timeout/ }],
  replay: [
    { args: [], message: /give exactly one of --to-datetime/ },
    { args: ['--to-earliest', '--to-latest'], message: /give exactly one of --to-datetime/ },
    { args: ['--to-datetime', 'yesterday'], message: /--to-datetime/ },
    { args: ['--to-earliest'], env: BAD_ENV, message: BAD_ENV_MESSAGE },
  ],
  'dlq list': [{ args: [], env: BAD_ENV, message: BAD_ENV_MESSAGE }],
  'dlq redrive': [{ args: ['--all'], env: BAD_ENV, message: BAD_ENV_MESSAGE }],
  inspect: [{ args: ['evt-1'], env: BAD_ENV, message: BAD_ENV_MESSAGE }],
  status: [{ args: [], env: BAD_ENV, message: BAD_ENV_MESSAGE }],
  analyze: [{ args: ['/nonexistent/invoice.pdf'], message: /no such file/ }],
  feedback: [{ args: ['sub_0123456789abcdefghijkl', '--outcome', 'MAYBE'], message: /--outcome/ }],
  delete: [{ args: ['x'], message: /submission_id must be a string of 24\.\.36 characters/ }],
  report: [{ args: ['x'], message: /submission_id must be a string of 24\.\.36 characters/ }],
  'tenants create': [{ args: ['--name', 'acme', '--cell', 'mars-1'], message: /--cell/ }],
  'tenants apps': [{ args: ['tenant-1'], message: /--client-id/ }],
};

/** The paths of the commands that do something (not the groups that only hold others). */
function leafCommands(command: Command, prefix: string[] = []): string[] {
  return command.commands.flatMap((c) => {
    const at = [...prefix, c.name()];
    return c.commands.length > 0 ? leafCommands(c, at) : [at.join(' ')];
  });
}

/** The environment of a user without docstream settings, plus the case's. */
function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  return { ...env, ...extra };
}

describe('the CLI exits 2 on invalid input to any command', () => {
  it('has a case for every command of the program', () => {
    expect(leafCommands(buildProgram()).sort()).toEqual(Object.keys(CASES).sort());
  });

  const cases = Object.entries(CASES).flatMap(([command, list]) =>
    list.map(
      (c) =>
        [`${command} ${c.args.join(' ')}${c.env ? ' (bad DOCSTREAM_* value)' : ''}`, command, c] as const,
    ),
  );
  it.each(cases)('docstream %s', (_name, command, c) => {
    const out = spawnSync(process.execPath, [CLI, ...command.split(' '), ...c.args], {
      encoding: 'utf8',
      env: environment(c.env),
      timeout: 30_000,
    });
    expect({ status: out.status, stderr: out.stderr }).toEqual({
      status: 2,
      stderr: expect.stringMatching(c.message),
    });
  });
});
