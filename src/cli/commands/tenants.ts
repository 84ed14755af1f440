/**
 * `docstream tenants create|apps`: the tenant-management API, authenticated with a private-key
 * JWT. `--cell` here is the new tenant's cell; the API address is `--base-url` or `--api-cell`.
 */
import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import { CELLS, type Cell, SCOPES } from '../../api/schemas.js';
import { TenantClient } from '../../client/tenant-client.js';
import { addAddressOptions, address, type AddressFlags, run, UsageError } from './api-options.js';

interface TenantFlags extends AddressFlags {
  apiCell?: string;
  clientId: string;
  privateKey: string;
  kid: string;
}

function addTenantAuthOptions(command: Command): Command {
  return addAddressOptions(command, '--api-cell <cell>')
    .addOption(
      new Option('--client-id <id>', 'tenant-admin OAuth client id')
        .env('DOCSTREAM_TENANT_CLIENT_ID')
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--private-key <file>', 'PKCS#8 PEM private key of the client')
        .env('DOCSTREAM_TENANT_PRIVATE_KEY_FILE')
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--kid <kid>', 'key id registered for the key')
        .env('DOCSTREAM_TENANT_KID')
        .makeOptionMandatory(),
    );
}

async function tenantClient(flags: TenantFlags, scopes: string[]): Promise<TenantClient> {
  let privateKey: string;
  try {
    privateKey = await readFile(flags.privateKey, 'utf8');
  } catch (error) {
    throw new UsageError(
      `--private-key ${flags.privateKey}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  try {
    return new TenantClient({
      ...address({ baseUrl: flags.baseUrl, cell: flags.apiCell, tokenUrl: flags.tokenUrl }),
      clientId: flags.clientId,
      privateKey,
      kid: flags.kid,
      scopes,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export function registerTenants(program: Command): void {
  const tenants = program
    .command('tenants')
    .description('Manage the tenants of the organisation (tenant API).');

  const create = tenants
    .command('create')
    .description('Create a tenant in one cell.')
    .requiredOption('--name <name>', 'unique name: 1..61 of a-z and 0-9')
    .addOption(new Option('--cell <cell>', 'the cell of the tenant').choices(CELLS).makeOptionMandatory());
  addTenantAuthOptions(create).action((flags: TenantFlags & { name: string; cell: Cell }) =>
    run(async () => {
      const client = await tenantClient(flags, [SCOPES.tenantsWrite]);
      const tenant = await client.createTenant({ name: flags.name, cells: [flags.cell] });
      process.stdout.write(`${JSON.stringify(tenant, null, 2)}\n`);
    }),
  );

  const apps = tenants
    .command('apps')
    .description("List a tenant's applications (OAuth clients).")
    .argument('<tenant-id>');
  addTenantAuthOptions(apps).action((tenantId: string, flags: TenantFlags) =>
    run(async () => {
      const client = await tenantClient(flags, [SCOPES.tenantApplicationsRead]);
      const list = await client.listApplications(tenantId);
      process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    }),
  );
}
