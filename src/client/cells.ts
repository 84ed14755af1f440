/**
 * Where the service lives: a base URL given directly, or a cell name resolved through a map.
 *
 * The spec names the cells but not their addresses, so only `testing` (the local sandbox) has
 * a built-in address; a real cell must be configured (`ClientOptions.cells`) before use.
 */
import { PATHS } from '../api/schemas.js';

export const CELL_NAMES = ['eu-1', 'us-1', 'ca-1', 'ap-2', 'ap-3', 'testing'] as const;
export type CellName = (typeof CELL_NAMES)[number];

export interface CellAddress {
  baseUrl: string;
  tokenUrl?: string;
}

export const SANDBOX_BASE_URL = 'http://localhost:8080';

export const DEFAULT_CELLS: Readonly<Record<string, CellAddress | undefined>> = {
  testing: { baseUrl: SANDBOX_BASE_URL, tokenUrl: `${SANDBOX_BASE_URL}${PATHS.token}` },
  'eu-1': undefined,
  'us-1': undefined,
  'ca-1': undefined,
  'ap-2': undefined,
  'ap-3': undefined,
};

export interface AddressOptions {
  baseUrl?: string;
  cell?: string;
  tokenUrl?: string;
  cells?: Record<string, CellAddress>;
}

export interface ResolvedAddress {
  baseUrl: string;
  tokenUrl: string;
}

function absoluteHttpUrl(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${what} is not an absolute URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`${what} must be http or https: ${value}`);
  }
  return value.replace(/\/+$/, '');
}

/** Resolves base and token URL; throws a TypeError that says what to configure. */
export function resolveAddress(options: AddressOptions): ResolvedAddress {
  if (options.baseUrl !== undefined && options.cell !== undefined) {
    throw new TypeError('give either baseUrl or cell, not both');
  }
  let address: CellAddress;
  if (options.cell !== undefined) {
    const cells: Record<string, CellAddress | undefined> = { ...DEFAULT_CELLS, ...options.cells };
    if (!Object.hasOwn(cells, options.cell)) {
      throw new TypeError(`unknown cell "${options.cell}" (known: ${Object.keys(cells).join(', ')})`);
    }
    const configured = cells[options.cell];
    if (!configured) {
      throw new TypeError(
        `cell "${options.cell}" has no configured address: the spec does not publish it; ` +
          `set cells["${options.cell}"] = { baseUrl, tokenUrl } (or pass baseUrl)`,
      );
    }
    address = configured;
  } else {
    address = { baseUrl: options.baseUrl ?? SANDBOX_BASE_URL };
  }
  const baseUrl = absoluteHttpUrl(address.baseUrl, 'baseUrl');
  const tokenUrl = absoluteHttpUrl(
    options.tokenUrl ?? address.tokenUrl ?? `${baseUrl}${PATHS.token}`,
    'tokenUrl',
  );
  return { baseUrl, tokenUrl };
}
