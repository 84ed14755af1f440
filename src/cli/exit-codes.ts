/**
 * The exit codes the README promises for every command: 2 for invalid input (a bad flag, argument,
 * configuration file or `DOCSTREAM_*` value), 1 for a failure at run time (Kafka, the registry, the
 * API). One mapping from error to code, so that no command decides it on its own.
 */
import { InvalidArgumentError } from 'commander';
import { ValidationError } from '../client/errors.js';
import { ConfigError } from '../config/load.js';

export const EXIT_FAILURE = 1;
export const EXIT_INVALID_INPUT = 2;

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
