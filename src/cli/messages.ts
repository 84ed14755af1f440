/**
 * What the CLI writes to standard error, one way for every command: each error or warning is one
 * line that starts with the command's path (`docstream dlq list: …`, `docstream dlq list: warning:
 * …`), and a usage error commander finds (an unknown flag, a bad value, a missing argument) ends
 * with where to read more (`; see docstream run --help`) instead of the whole help.
 */
import type { Command } from 'commander';
import { ApiError } from '../client/errors.js';
import { errorText } from '../observability/redact.js';

/** `docstream dlq list` for the command `list` under `dlq`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The one line that reports an error that ended `command` (secrets redacted). */
export function errorLine(command: Command, error: unknown): string {
  const hint = error instanceof ApiError && error.submissionId ? ` (submission ${error.submissionId})` : '';
  return `${commandPath(command)}: ${errorText(error).replace(/\s*\n\s*/g, ' ')}${hint}`;
}

/** Writes the error line of `error` to standard error. */
export function printError(command: Command, error: unknown): void {
  process.stderr.write(`${errorLine(command, error)}\n`);
}

/** Writes `docstream <command>: warning: <message>` to standard error. */
export function printWarning(command: Command, message: string): void {
  process.stderr.write(`${commandPath(command)}: warning: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
}

const warned = new Set<string>();

/** The same warning, written once per process (a deprecated flag named twice warns once). */
export function warnOnce(command: Command, message: string): void {
  const key = `${commandPath(command)}\0${message}`;
  if (warned.has(key)) return;
  warned.add(key);
  printWarning(command, message);
}

/**
 * Commander's message for a usage error as one line: `error: unknown option '--bogus'\n(Did you mean
 * --config?)` becomes `docstream run: unknown option '--bogus' (did you mean --config?); see
 * docstream run --help`.
 */
export function usageErrorLine(command: Command, message: string): string {
  const text = message
    .trim()
    .replace(/^error:\s*/, '')
    .replace(/\s*\n\s*\(Did you mean (.+?)\?\)/, ' (did you mean $1?)')
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\.$/, '');
  return `${commandPath(command)}: ${text}; see ${commandPath(command)} --help`;
}
