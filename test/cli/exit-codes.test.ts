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
  topology: [
    { args: ['--format', 'yaml'], message: /--format/ },
    { args: ['--connector-principal', 'docstream'], message: /must be a Kafka principal/ },
    { args: ['--operator-principal', 'User:docstream'], message: /both User:docstream: give two principals/ },
    {
      args: ['--format', 'strimzi', '--connector-principal', 'User:CN=x'],
      message: /a Strimzi KafkaUser is User:<name>/,
    },
    { args: [], env: BAD_ENV, message: BAD_ENV_MESSAGE },
  ],
  analyze: [{ args: ['/nonexistent/invoice.pdf'], message: /no such file/ }],
  feedback: [{ args: ['sub_0123456789abcdefghijkl', '--outcome', 'MAYBE'], message: /--outcome/ }],
  delete: [{ args: ['x'], message: /submission_id must be a string of 24\.\.36 characters/ }],
  report: [{ args: ['x'], message: /submission_id must be a string of 24\.\.36 characters/ }],
  'tenants create': [{ args: ['--name', 'acme', '--tenant-cell', 'mars-1'], message: /--tenant-cell/ }],
  'tenants apps': [
    { args: ['tenant-1'], message: /tenant\.clientId \(--client-id\)/ },
    { args: ['tenant-1', '--cell', 'eu-1', '--client-id', 'a', '--kid', 'k'], message: /tenant\.privateKey/ },
  ],
};

/**
 * Every command that takes a secret, given one as a flag value: refused before anything runs, with
 * the ways to pass it, and the value never echoed.
 */
const SECRET_FLAGS: Record<string, { args: string[]; flag: string; ways: RegExp }> = {
  analyze: {
    args: ['invoice.pdf'],
    flag: '--client-secret',
    ways: /--client-secret-file.*--client-secret-stdin.*DOCSTREAM_API_CLIENT_SECRET_FILE/,
  },
  feedback: {
    args: ['sub_0123456789abcdefghijkl'],
    flag: '--client-secret',
    ways: /--client-secret-file.*--client-secret-stdin.*DOCSTREAM_API_CLIENT_SECRET_FILE/,
  },
  delete: {
    args: ['sub_0123456789abcdefghijkl'],
    flag: '--client-secret',
    ways: /--client-secret-file.*--client-secret-stdin.*DOCSTREAM_API_CLIENT_SECRET_FILE/,
  },
  report: {
    args: ['sub_0123456789abcdefghijkl'],
    flag: '--client-secret',
    ways: /--client-secret-file.*--client-secret-stdin.*DOCSTREAM_API_CLIENT_SECRET_FILE/,
  },
  sandbox: { args: ['--port', '0'], flag: '--webhook-secret', ways: /--webhook-secret-file/ },
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

/** Paths of the commands with an option that refuses a secret as its value (hidden from the help). */
function commandsTakingSecrets(command: Command, prefix: string[] = []): string[] {
  return command.commands.flatMap((c) => {
    const at = [...prefix, c.name()];
    const takes = c.options.some((o) => o.hidden && o.description.startsWith('refused: a secret'));
    return [...(takes ? [at.join(' ')] : []), ...commandsTakingSecrets(c, at)];
  });
}

describe('a secret given as a flag value', () => {
  it('has a case for every command that takes a secret', () => {
    expect(commandsTakingSecrets(buildProgram()).sort()).toEqual(Object.keys(SECRET_FLAGS).sort());
  });

  const secret = 'whsec_c2VjcmV0LW9uLXRoZS1jb21tYW5kLWxpbmU=';
  it.each(Object.entries(SECRET_FLAGS))(
    'docstream %s: exit 2 naming the ways to pass it, the value not echoed',
    (command, c) => {
      for (const form of [[c.flag, secret], [`${c.flag}=${secret}`]]) {
        const out = spawnSync(process.execPath, [CLI, command, ...c.args, ...form], {
          encoding: 'utf8',
          env: environment(),
          timeout: 30_000,
        });
        expect({ status: out.status, stdout: out.stdout }).toEqual({ status: 2, stdout: '' });
        expect(out.stderr).toContain(`${c.flag} takes no value on the command line`);
        expect(out.stderr.replace(/\n/g, ' ')).toMatch(c.ways);
        expect(out.stderr).not.toContain(secret);
      }
    },
  );
});

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
    // One prefix for every message: the command's path.
    const lines = out.stderr.split('\n').filter((l) => l !== '');
    expect(lines.filter((l) => !l.startsWith(`docstream ${command}: `))).toEqual([]);
  });
});
