/**
 * What the API commands share: the configuration (`-c`, `DOCSTREAM_API_*`, then these flags, over
 * the `api.*` keys `docstream run` uses), and building a client from it. An error ends the command
 * in `main` (program.ts): invalid input exits 2, the API or the network failing exits 1.
 */
import { egressOf } from '../../config/egress.js';
import { type Command, Option } from 'commander';
import { DocumentAnalysisClient } from '../../client/client.js';
import { type CellAddress, DEFAULT_CELLS, resolveAddress, type AddressOptions } from '../../client/cells.js';
import type { Config } from '../../config/index.js';
import {
  addConfigOption,
  configOf,
  type ConfigFlags,
  readSecret,
  refusedSecretFlag,
} from '../config-option.js';
import { secondsOption } from '../durations.js';
import { UsageError } from '../exit-codes.js';

export { UsageError };

export interface AddressFlags extends ConfigFlags {
  baseUrl?: string;
  cell?: string;
  tokenUrl?: string;
  requestTimeout?: number;
}

export interface ApiFlags extends AddressFlags {
  clientId?: string;
  clientSecretFile?: string;
  clientSecretStdin?: boolean;
}

export const CLIENT_SECRET_WAYS =
  'with --client-secret-file <file>, on standard input with --client-secret-stdin ' +
  '(e.g. `pass show docstream | docstream analyze --client-secret-stdin doc.pdf`), ' +
  'as DOCSTREAM_API_CLIENT_SECRET_FILE=<file> in the environment or a -c .env file, ' +
  'or as api.clientSecret in a -c configuration file';

/** `-c`, and where the API is: `--base-url` or `--cell` (api.baseUrl, api.cell, api.cells), `--token-url`. */
export function addAddressOptions(command: Command): Command {
  return addConfigOption(command)
    .addOption(new Option('--base-url <url>', 'API base URL (api.baseUrl; default: the local sandbox)'))
    .addOption(
      new Option(
        '--cell <cell>',
        'API cell (api.cell), whose address comes from api.cells of the configuration; instead of --base-url',
      ).conflicts('baseUrl'),
    )
    .addOption(
      new Option('--token-url <url>', 'token endpoint (api.tokenUrl; default <base-url>/oauth2/token)'),
    )
    .addOption(secondsOption('--request-timeout', 'timeout of each HTTP request (api.timeoutMs)'));
}

/** The address flags, the client id and the ways to give the client secret (never as a value). */
export function addApiOptions(command: Command): Command {
  return addAddressOptions(command)
    .addOption(new Option('--client-id <id>', 'OAuth client id (api.clientId; default: the sandbox client)'))
    .addOption(new Option('--client-secret-file <file>', 'read the OAuth client secret from this file'))
    .addOption(
      new Option('--client-secret-stdin', 'read the OAuth client secret from standard input').conflicts(
        'clientSecretFile',
      ),
    )
    .addOption(refusedSecretFlag('--client-secret', CLIENT_SECRET_WAYS));
}

/** The `api` overrides the address flags give (a base URL given on the command line clears a configured cell). */
export function addressOverrides(flags: AddressFlags): Record<string, unknown> {
  return {
    ...(flags.baseUrl !== undefined ? { baseUrl: flags.baseUrl, cell: '' } : {}),
    ...(flags.cell !== undefined ? { cell: flags.cell } : {}),
    ...(flags.tokenUrl !== undefined ? { tokenUrl: flags.tokenUrl } : {}),
    ...(flags.requestTimeout !== undefined ? { timeoutMs: Math.round(flags.requestTimeout * 1000) } : {}),
  };
}

/** The configuration of an API command, its secret read from a file or standard input if asked. */
export async function apiConfig(flags: ApiFlags): Promise<Config> {
  const secret = await readSecret(
    { file: flags.clientSecretFile, stdin: flags.clientSecretStdin },
    '--client-secret',
  );
  return configOf(flags, {
    api: {
      ...addressOverrides(flags),
      clientId: flags.clientId,
      clientSecret: secret,
    },
  });
}

/**
 * Where the configuration says the API is: a cell looked up in api.cells (then the built-in
 * `testing`), or api.baseUrl. A cell without an address says what to set, in the configuration's words.
 */
export function apiAddress(api: Config['api']): AddressOptions {
  const cells = api.cells as Record<string, CellAddress>;
  const tokenUrl = api.tokenUrl === '' ? {} : { tokenUrl: api.tokenUrl };
  if (api.cell === '') return { baseUrl: api.baseUrl, ...tokenUrl };
  const known = { ...DEFAULT_CELLS, ...cells };
  if (!Object.hasOwn(known, api.cell) || known[api.cell] === undefined) {
    throw new UsageError(
      `cell "${api.cell}" has no address here (the spec does not publish the cells' addresses; ` +
        `configured: ${Object.keys(known)
          .filter((c) => known[c] !== undefined)
          .join(', ')}). ` +
        `Map it in api.cells of a -c configuration file, e.g. {"api": {"cells": {"${api.cell}": ` +
        `{"baseUrl": "https://…", "tokenUrl": "https://…/oauth2/token"}}}}, or in DOCSTREAM_API_CELLS; ` +
        'or give --base-url instead',
    );
  }
  const address = { cell: api.cell, cells, ...tokenUrl };
  try {
    resolveAddress(address);
  } catch (error) {
    throw new UsageError(`api.cells.${api.cell}: ${(error as Error).message}`);
  }
  return address;
}

export function clientOf(config: Config): DocumentAnalysisClient {
  const address = apiAddress(config.api);
  try {
    return new DocumentAnalysisClient({
      ...address,
      clientId: config.api.clientId,
      clientSecret: config.api.clientSecret,
      timeoutMs: config.api.timeoutMs,
      egress: egressOf(config.api),
    });
  } catch (error) {
    // Option errors (a malformed URL, an empty client id) are the user's input.
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** Prints a result: JSON with --json (for scripts), else the human form. */
export function printResult(json: boolean | undefined, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : human());
}
