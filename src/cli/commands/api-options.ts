/**
 * What the API commands share: the connection options, building a client from them, and one
 * way to end a command (invalid input: exit 2; the API or the network failed: exit 1).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DocumentAnalysisClient } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import { SANDBOX_BASE_URL } from '../../client/cells.js';
import { errorText } from '../../observability/redact.js';
import { exitCodeOf, UsageError } from '../exit-codes.js';

export { UsageError };

const SANDBOX_CLIENT_ID = 'sandbox-client';
const SANDBOX_CLIENT_SECRET = 'sandbox-secret';

export interface AddressFlags {
  baseUrl?: string;
  cell?: string;
  tokenUrl?: string;
}

export interface ApiFlags extends AddressFlags {
  clientId: string;
  clientSecret: string;
  requestTimeout?: number;
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

export function addAddressOptions(command: Command, cellFlag = '--cell <cell>'): Command {
  return command
    .addOption(
      new Option('--base-url <url>', `API base URL (default ${SANDBOX_BASE_URL}, the local sandbox)`).env(
        'DOCSTREAM_API_BASE_URL',
      ),
    )
    .addOption(
      new Option(
        cellFlag,
        'API cell (eu-1, us-1, ca-1, ap-2, ap-3, testing) instead of --base-url',
      ).conflicts('baseUrl'),
    )
    .addOption(
      new Option('--token-url <url>', 'token endpoint (default <base-url>/oauth2/token)').env(
        'DOCSTREAM_API_TOKEN_URL',
      ),
    );
}

export function addApiOptions(command: Command): Command {
  return addAddressOptions(command)
    .addOption(
      new Option('--client-id <id>', 'OAuth client id')
        .env('DOCSTREAM_API_CLIENT_ID')
        .default(SANDBOX_CLIENT_ID),
    )
    .addOption(
      new Option('--client-secret <secret>', 'OAuth client secret')
        .env('DOCSTREAM_API_CLIENT_SECRET')
        .default(SANDBOX_CLIENT_SECRET, 'the sandbox secret'),
    )
    .addOption(
      new Option('--request-timeout <seconds>', 'timeout of each HTTP request').argParser(positiveNumber),
    );
}

export function address(flags: AddressFlags): { baseUrl?: string; cell?: string; tokenUrl?: string } {
  if (flags.cell !== undefined) return { cell: flags.cell, tokenUrl: flags.tokenUrl };
  return { baseUrl: flags.baseUrl ?? SANDBOX_BASE_URL, tokenUrl: flags.tokenUrl };
}

export function clientFromFlags(flags: ApiFlags): DocumentAnalysisClient {
  try {
    return new DocumentAnalysisClient({
      ...address(flags),
      clientId: flags.clientId,
      clientSecret: flags.clientSecret,
      timeoutMs: flags.requestTimeout === undefined ? undefined : Math.round(flags.requestTimeout * 1000),
    });
  } catch (error) {
    // Option errors (unknown cell, malformed URL) are the user's input.
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** Runs a command body; maps failures to a one-line message and the exit code. */
export async function run(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    const message = errorText(error);
    const hint = error instanceof ApiError && error.submissionId ? ` (submission ${error.submissionId})` : '';
    process.stderr.write(`docstream: ${message}${hint}\n`);
    process.exitCode = exitCodeOf(error);
  }
}
