/**
 * `docstream tenants create|apps`: the tenant-management API, authenticated with a private-key
 * JWT (tenant.clientId, tenant.privateKey, tenant.kid). The API's address is the configuration's,
 * as for every API command (`--base-url`, `--cell`); the new tenant's cell is `--tenant-cell`.
 * `create` also prints the new tenant's entry for the tenant directory (its application's client id
 * and kid, placeholders for the key or secret file: never a secret).
 */
import { egressOf } from '../../config/egress.js';
import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import { type ApplicationList, CELLS, type Cell, SCOPES, type Tenant } from '../../api/schemas.js';
import { TenantClient } from '../../client/tenant-client.js';
import { directoryEntryOf, type DirectoryEntryFragment } from '../../tenants/directory.js';
import { configOf } from '../config-option.js';
import { deprecatedOption } from '../deprecated.js';
import { examples } from '../help.js';
import {
  addAddressOptions,
  addressOverrides,
  apiAddress,
  type AddressFlags,
  printResult,
  UsageError,
} from './api-options.js';

interface TenantFlags extends AddressFlags {
  clientId?: string;
  privateKeyFile?: string;
  kid?: string;
  json?: boolean;
}

function addTenantOptions(command: Command): Command {
  return addAddressOptions(command)
    .addOption(new Option('--client-id <id>', 'tenant-admin OAuth client id (tenant.clientId)'))
    .addOption(
      new Option(
        '--private-key-file <file>',
        'PKCS#8 PEM private key file of the client (tenant.privateKey, or DOCSTREAM_TENANT_PRIVATE_KEY_FILE)',
      ),
    )
    .addOption(deprecatedOption('--private-key <file>', '--private-key-file'))
    .addOption(new Option('--kid <kid>', 'key id registered for the key (tenant.kid)'))
    .addOption(deprecatedOption('--api-cell <cell>', '--cell').conflicts('baseUrl'))
    .option('--json', 'print the result as JSON (for scripts)');
}

async function tenantClient(flags: TenantFlags, scopes: string[]): Promise<TenantClient> {
  let privateKey: string | undefined;
  if (flags.privateKeyFile !== undefined) {
    try {
      privateKey = await readFile(flags.privateKeyFile, 'utf8');
    } catch (error) {
      throw new UsageError(
        `--private-key-file ${flags.privateKeyFile}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  const config = configOf(flags, {
    api: addressOverrides(flags),
    tenant: { clientId: flags.clientId, privateKey, kid: flags.kid },
  });
  const missing = [
    ['tenant.clientId', '--client-id', config.tenant.clientId],
    [
      'tenant.privateKey',
      '--private-key-file <file> or DOCSTREAM_TENANT_PRIVATE_KEY_FILE',
      config.tenant.privateKey,
    ],
    ['tenant.kid', '--kid', config.tenant.kid],
  ].filter(([, , value]) => value === '');
  if (missing.length > 0) {
    throw new UsageError(
      `the tenant API needs a private-key JWT client: set ${missing.map(([key, flag]) => `${key} (${flag})`).join(', ')}`,
    );
  }
  const address = apiAddress(config.api);
  try {
    return new TenantClient({
      ...address,
      clientId: config.tenant.clientId,
      privateKey: config.tenant.privateKey,
      kid: config.tenant.kid,
      scopes,
      timeoutMs: config.api.timeoutMs,
      egress: egressOf(config.api),
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function humanTenant(tenant: Tenant, entry: DirectoryEntryFragment | null): string {
  const created = `created tenant ${tenant.id} (${tenant.name}) in ${tenant.cells.join(', ')}\n`;
  if (entry === null)
    return `${created}no application in ${tenant.cells.join(', ')} yet: list it with docstream tenants apps ${tenant.id}\n`;
  const fragment = JSON.stringify(entry, null, 2).slice(1, -1).trim();
  const file = Object.values(entry)[0]!;
  const secretFile = file.privateKeyFile ?? file.clientSecretFile;
  return (
    `${created}add under "tenants" in the tenant directory (tenants.directoryFile), ` +
    `with ${secretFile} beside it (${file.privateKeyFile === undefined ? "the application's client secret" : "the application's PKCS#8 private key for its kid"}):\n` +
    `${fragment}\n`
  );
}

function humanApplications(list: ApplicationList): string {
  if (list.items.length === 0) return 'no applications\n';
  const rows = [
    ['client id', 'cell', 'scopes', 'kid'],
    ...list.items.map((a) => [a.client_id, a.cell, a.scopes.join(' '), a.credentials.kid]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

export function registerTenants(program: Command): void {
  const tenants = program
    .command('tenants')
    .description('Manage the tenants of the organisation (tenant API).');
  examples(
    tenants,
    'docstream tenants create -c prod.json --name acme --tenant-cell eu-1',
    'docstream tenants apps -c prod.json --json tenant-1',
  );

  const create = tenants
    .command('create')
    .description('Create a tenant in one cell.')
    .requiredOption('--name <name>', 'unique name: 1..61 of a-z and 0-9')
    .addOption(
      new Option('--tenant-cell <cell>', 'the cell of the new tenant').choices(CELLS).makeOptionMandatory(),
    );
  addTenantOptions(create).action(async (flags: TenantFlags & { name: string; tenantCell: Cell }) => {
    const client = await tenantClient(flags, [SCOPES.tenantsWrite, SCOPES.tenantApplicationsRead]);
    const tenant = await client.createTenant({ name: flags.name, cells: [flags.tenantCell] });
    const apps = await client.listApplications(tenant.id);
    const app = apps.items.find((a) => a.cell === flags.tenantCell) ?? apps.items[0];
    const entry = app === undefined ? null : directoryEntryOf(tenant.name, tenant.id, app);
    printResult(flags.json, { ...tenant, directoryEntry: entry }, () => humanTenant(tenant, entry));
  });
  examples(
    create,
    'docstream tenants create -c prod.json --name acme --tenant-cell eu-1',
    'DOCSTREAM_TENANT_PRIVATE_KEY_FILE=admin.pem docstream tenants create --client-id admin --kid key-1 --name acme --tenant-cell us-1 --json',
  );

  const apps = tenants
    .command('apps')
    .description("List a tenant's applications (OAuth clients).")
    .argument('<tenant-id>');
  addTenantOptions(apps).action(async (tenantId: string, flags: TenantFlags) => {
    const client = await tenantClient(flags, [SCOPES.tenantApplicationsRead]);
    const list = await client.listApplications(tenantId);
    printResult(flags.json, list, () => humanApplications(list));
  });
  examples(
    apps,
    'docstream tenants apps -c prod.json tenant-1',
    'docstream tenants apps -c prod.json --json tenant-1',
  );
}
