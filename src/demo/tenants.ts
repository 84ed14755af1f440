/**
 * The demo's organisation: two tenants, each in a cell of its own (acme in eu-1, globex in us-1), each
 * with one application whose RS256 key pair the demo makes at start. The private keys are written
 * only to a folder of the demo's own (outside the connector's blob roots, removed at the end) and are
 * never printed; the sandbox knows the applications by their public keys. The tenant directory file
 * is written there for the connector, and after the run the sandbox's record of submissions says in
 * which cell and by which application each tenant's document was created.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import type { Cell } from '../api/schemas.js';
import type { CellUrls, DeepPartial, SandboxConfig } from '../sandbox/index.js';
import { fitTable } from './table.js';

export interface DemoTenant {
  name: string;
  cell: Cell;
  /** Its application's client id, and the id of the key registered for it. */
  clientId: string;
  kid: string;
}

export interface DemoOrganisation {
  tenants: DemoTenant[];
  /** What the sandbox serves for them: each cell on a listener of its own, each tenant's application. */
  sandbox: Pick<DeepPartial<SandboxConfig>, 'cells' | 'tenants'>;
  /** The folder of the keys and of the directory file. */
  folder: string;
}

/** The demo's tenants and their cells. */
export const DEMO_TENANTS: ReadonlyArray<{ name: string; cell: Cell }> = [
  { name: 'acme', cell: 'eu-1' },
  { name: 'globex', cell: 'us-1' },
];

/** Makes each tenant's key pair and writes its private key (PKCS#8 PEM) into `folder`. */
export async function makeOrganisation(folder: string): Promise<DemoOrganisation> {
  const made = await Promise.all(
    DEMO_TENANTS.map(async ({ name, cell }) => {
      const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
      await fs.writeFile(path.join(folder, `${name}.pem`), await exportPKCS8(privateKey), { mode: 0o600 });
      const tenant: DemoTenant = { name, cell, clientId: `${name}-app`, kid: `${name}-demo-key` };
      return { tenant, publicKeyPem: await exportSPKI(publicKey) };
    }),
  );
  return {
    folder,
    tenants: made.map((m) => m.tenant),
    sandbox: {
      // Port 0: each cell on a free loopback port, beside the sandbox's own address.
      cells: Object.fromEntries(made.map((m) => [m.tenant.cell, { port: 0 }])),
      tenants: made.map(({ tenant, publicKeyPem }) => ({
        name: tenant.name,
        cells: [tenant.cell],
        applications: [{ clientId: tenant.clientId, publicKeyPem, kid: tenant.kid }],
      })),
    },
  };
}

/** Writes the tenant directory file (docs/tenants.md) for the cells the sandbox serves; returns its path. */
export async function writeDirectory(
  org: DemoOrganisation,
  cells: Record<string, CellUrls>,
): Promise<string> {
  const addresses: Record<string, CellUrls> = {};
  for (const t of org.tenants) {
    const urls = cells[t.cell];
    if (!urls) throw new Error(`the sandbox does not serve cell ${t.cell}`);
    addresses[t.cell] = urls;
  }
  const tenants = Object.fromEntries(
    org.tenants.map((t) => [
      t.name,
      // The sandbox's id of a declared tenant is its name.
      { cell: t.cell, clientId: t.clientId, privateKeyFile: `${t.name}.pem`, kid: t.kid, tenantId: t.name },
    ]),
  );
  const file = path.join(org.folder, 'directory.json');
  await fs.writeFile(file, `${JSON.stringify({ cells: addresses, tenants }, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** A submission as the sandbox records it (`GET /_sandbox/submissions`). */
export interface SandboxSubmission {
  query_id: string | null;
  cell: string;
  tenant_id: string | null;
  client_id: string;
}

/** Every submission the sandbox at `baseUrl` holds, whichever cell it was created in. */
export async function sandboxSubmissions(baseUrl: string): Promise<SandboxSubmission[]> {
  const res = await fetch(`${baseUrl}/_sandbox/submissions`);
  if (!res.ok) throw new Error(`GET /_sandbox/submissions answered ${res.status}`);
  return ((await res.json()) as { items: SandboxSubmission[] }).items;
}

/** What became of an event that names a tenant. */
export interface TenantOutcome {
  event: string;
  tenant: string;
  /** Where its submission was created and by which application ('-': no submission; joined: several). */
  cell: string;
  application: string;
  /** The tenant its results carry ('-' for none). */
  resultsTenant: string;
  /** One submission, in the tenant's cell, by its application, for its tenant id; results carry it. */
  ok: boolean;
}

/** Checks an event of `tenant` (its query id is its event id) against the sandbox's record. */
export function tenantOutcome(
  event: string,
  tenant: DemoTenant,
  carried: Array<string | null>,
  submissions: SandboxSubmission[],
): TenantOutcome {
  const mine = submissions.filter((s) => s.query_id === event);
  const list = (values: string[]) => (values.length === 0 ? '-' : [...new Set(values)].join(','));
  const tenants = [...new Set(carried)];
  const only = mine.length === 1 ? mine[0] : undefined;
  return {
    event,
    tenant: tenant.name,
    cell: list(mine.map((s) => s.cell)),
    application: list(mine.map((s) => s.client_id)),
    resultsTenant: list(tenants.map((t) => t ?? '-')),
    ok:
      only !== undefined &&
      only.cell === tenant.cell &&
      only.client_id === tenant.clientId &&
      only.tenant_id === tenant.name &&
      tenants.length === 1 &&
      tenants[0] === tenant.name,
  };
}

/** The table of the events that name a tenant: where each was created, by which application. */
export function tenantTable(outcomes: TenantOutcome[], width: number): string[] {
  const header = ['event', 'tenant', 'cell', 'application', "results' tenant"];
  const body = outcomes.map((o) => [o.event, o.tenant, o.cell, o.application, o.resultsTenant]);
  return fitTable(
    [header, ...body].map((r) => r.map((text) => ({ text }))),
    { width, keep: [0] },
  );
}
