/**
 * The exit codes of every command, declared once: the top-level help and the README list this
 * table, and one mapping from error to code decides, so that no command decides it on its own.
 */
import { InvalidArgumentError } from 'commander';
import { ValidationError } from '../client/errors.js';
import { ConfigError } from '../config/load.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_INVALID_INPUT = 2;
export const EXIT_NOT_FOUND = 3;

export const EXIT_CODES: ReadonlyArray<{ code: number; meaning: string }> = [
  { code: EXIT_OK, meaning: 'done' },
  {
    code: EXIT_FAILURE,
    meaning:
      'failed at run time: Kafka, the registry or the API failed or refused the request, or the command refused to act (e.g. replay while the group is active)',
  },
  {
    code: EXIT_INVALID_INPUT,
    meaning:
      'invalid input: a bad flag, argument, configuration file or DOCSTREAM_* value, or a secret given as a flag value; nothing was started or changed',
  },
  {
    code: EXIT_NOT_FOUND,
    meaning:
      'the command worked, and the answer is no: `inspect` found no document, `stack status` found a service not healthy',
  },
];

/** Invalid input found by the command itself: reported like a ValidationError, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The exit code for an error that ends a command. */
export function exitCodeOf(error: unknown): number {
  const invalidInput =
    error instanceof UsageError ||
    error instanceof ConfigError ||
    error instanceof InvalidArgumentError ||
    error instanceof ValidationError;
  return invalidInput ? EXIT_INVALID_INPUT : EXIT_FAILURE;
}
