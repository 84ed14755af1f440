/**
 * The tenant directory: which tenants this deployment serves, each one's cell and the credentials of
 * its application (an OAuth client of the tenant: a private-key JWT, RS256 with a `kid`, or a client
 * secret). One JSON file, with the secrets in files of their own beside it (a Kubernetes Secret
 * mounts both); `parseDirectory` reads it all and refuses the whole file on any problem, naming the
 * tenant and the field, never a secret. Each tenant gets a fingerprint of everything that makes its
 * client (secrets included, hashed) so that a reload can say what was added, changed or removed.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { importPKCS8 } from 'jose';
import { z } from 'zod';
import { describeZodError } from '../api/schemas.js';
import { resolveAddress, type CellAddress } from '../client/cells.js';
import { insecureHttpProblem } from '../config/transport.js';
import { rememberSecrets } from '../observability/redact.js';
import { TENANT_NAME } from '../serde/input.js';

/** A tenant's application credentials, read from their files. */
export type TenantCredentials =
  | { kind: 'private-key-jwt'; privateKey: string; kid: string }
  | { kind: 'client-secret'; clientSecret: string };

export interface TenantEntry {
  name: string;
  cell: string;
  baseUrl: string;
  tokenUrl: string;
  clientId: string;
  credentials: TenantCredentials;
  /** The API's id of the tenant (webhook deliveries name it as `tenant_id`), when given. */
  tenantId: string | null;
  /** This tenant application's ceiling of calls per second (default: `api.ratePerSecond`). */
  ratePerSecond: number | null;
  /** Hash of everything above (secrets included): a change of any of it is a changed tenant. */
  fingerprint: string;
}

export interface TenantDirectory {
  tenants: ReadonlyMap<string, TenantEntry>;
}

export interface DirectoryDiff {
  added: string[];
  changed: string[];
  removed: string[];
}

/** The directory file could not be used; the message names the file, tenant and field, never a secret. */
export class TenantDirectoryError extends Error {
  override name = 'TenantDirectoryError';
}

const Entry = z.strictObject({
  cell: z.string().min(1),
  clientId: z.string().min(1),
  privateKeyFile: z.string().min(1).optional(),
  kid: z.string().min(1).optional(),
  clientSecretFile: z.string().min(1).optional(),
  tenantId: z.string().min(1).optional(),
  ratePerSecond: z.number().positive().optional(),
});

const DirectoryFile = z.strictObject({
  cells: z
    .record(z.string(), z.strictObject({ baseUrl: z.string(), tokenUrl: z.string().optional() }))
    .optional(),
  tenants: z.record(z.string(), Entry),
});

/** One tenant's entry as the file has it (`tenants.<name>`), as `docstream tenants create` prints it. */
export type DirectoryEntryFragment = Record<string, z.infer<typeof Entry>>;

/**
 * The directory entry of a tenant's application (the tenant API's listing), with placeholder file
 * names (`<name>.pem`, `<name>.secret`) for the key or secret to be put beside the directory file.
 */
export function directoryEntryOf(
  name: string,
  tenantId: string,
  app: { client_id: string; cell: string; credentials: { type: string; kid: string } },
): DirectoryEntryFragment {
  const credentials =
    app.credentials.type === 'client_secret'
      ? { clientSecretFile: `${name}.secret` }
      : { privateKeyFile: `${name}.pem`, kid: app.credentials.kid };
  return { [name]: { cell: app.cell, clientId: app.client_id, ...credentials, tenantId } };
}

export const EMPTY_DIRECTORY: TenantDirectory = { tenants: new Map() };

/** Reads and checks the directory file and every secret file it names. */
export async function readDirectory(
  file: string,
  cells: Record<string, CellAddress>,
  allowInsecureHttp = false,
): Promise<TenantDirectory> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new TenantDirectoryError(
      `${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  return parseDirectory(text, file, cells, (path) => readFile(path, 'utf8'), allowInsecureHttp);
}

/**
 * Parses a directory's text; `readSecret` reads a file it names (paths relative to the directory
 * file's folder, as a mounted Secret has them side by side).
 */
export async function parseDirectory(
  text: string,
  file: string,
  cells: Record<string, CellAddress>,
  readSecret: (path: string) => Promise<string>,
  /** `api.allowInsecureHttp`: plain http to a host other than loopback is refused unless set. */
  allowInsecureHttp = false,
): Promise<TenantDirectory> {
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch (err) {
    // V8's message quotes the text around the error: only where it is, never what.
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new TenantDirectoryError(
      `${file}: not valid JSON${at === undefined ? '' : ` (at position ${at})`}`,
    );
  }
  const parsed = DirectoryFile.safeParse(json);
  if (!parsed.success) throw new TenantDirectoryError(`${file}: ${describeZodError(parsed.error)}`);
  const allCells = { ...cells, ...parsed.data.cells };
  const folder = dirname(file);
  const tenants = new Map<string, TenantEntry>();
  for (const [name, entry] of Object.entries(parsed.data.tenants)) {
    const where = `${file}: tenants.${name}`;
    if (!TENANT_NAME.test(name))
      throw new TenantDirectoryError(`${where}: a tenant name is 1..61 characters a-z and 0-9`);
    let address: { baseUrl: string; tokenUrl: string };
    try {
      address = resolveAddress({ cell: entry.cell, cells: allCells });
    } catch (err) {
      throw new TenantDirectoryError(`${where}.cell: ${(err as Error).message}`);
    }
    for (const url of [address.baseUrl, address.tokenUrl]) {
      const problem = insecureHttpProblem(url, allowInsecureHttp);
      if (problem) throw new TenantDirectoryError(`${where}.cell: ${problem}`);
    }
    const secret = async (field: string, path: string): Promise<string> => {
      const full = isAbsolute(path) ? path : resolve(folder, path);
      try {
        const value = (await readSecret(full)).trim();
        // Whatever leaves the process is scrubbed of it, as of the configuration's secrets.
        rememberSecrets([value]);
        return value;
      } catch (err) {
        throw new TenantDirectoryError(
          `${where}.${field}: ${full} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    };
    let credentials: TenantCredentials;
    if (entry.privateKeyFile !== undefined) {
      if (entry.clientSecretFile !== undefined)
        throw new TenantDirectoryError(
          `${where}: give privateKeyFile (with kid) or clientSecretFile, not both`,
        );
      if (entry.kid === undefined)
        throw new TenantDirectoryError(
          `${where}.kid: required with privateKeyFile (the key id registered with the API)`,
        );
      const privateKey = await secret('privateKeyFile', entry.privateKeyFile);
      try {
        await importPKCS8(privateKey, 'RS256');
      } catch {
        throw new TenantDirectoryError(`${where}.privateKeyFile: not a PKCS#8 PEM RSA private key`);
      }
      credentials = { kind: 'private-key-jwt', privateKey, kid: entry.kid };
    } else if (entry.clientSecretFile !== undefined) {
      const clientSecret = await secret('clientSecretFile', entry.clientSecretFile);
      if (clientSecret === '') throw new TenantDirectoryError(`${where}.clientSecretFile: the file is empty`);
      credentials = { kind: 'client-secret', clientSecret };
    } else {
      throw new TenantDirectoryError(`${where}: give privateKeyFile (with kid) or clientSecretFile`);
    }
    const made = {
      name,
      cell: entry.cell,
      ...address,
      clientId: entry.clientId,
      credentials,
      tenantId: entry.tenantId ?? null,
      ratePerSecond: entry.ratePerSecond ?? null,
    };
    const fingerprint = createHash('sha256').update(JSON.stringify(made)).digest('hex');
    tenants.set(name, { ...made, fingerprint });
  }
  return { tenants };
}

/** What changed from `before` to `after`, by tenant name (sorted). */
export function diffDirectories(before: TenantDirectory, after: TenantDirectory): DirectoryDiff {
  const added: string[] = [];
  const changed: string[] = [];
  const removed: string[] = [];
  for (const [name, entry] of after.tenants) {
    const old = before.tenants.get(name);
    if (!old) added.push(name);
    else if (old.fingerprint !== entry.fingerprint) changed.push(name);
  }
  for (const name of before.tenants.keys()) if (!after.tenants.has(name)) removed.push(name);
  return { added: added.sort(), changed: changed.sort(), removed: removed.sort() };
}

export function isEmptyDiff(diff: DirectoryDiff): boolean {
  return diff.added.length + diff.changed.length + diff.removed.length === 0;
}
