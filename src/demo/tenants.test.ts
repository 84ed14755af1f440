import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSandbox, type Sandbox } from '../sandbox/index.js';
import { readDirectory } from '../tenants/directory.js';
import {
  makeOrganisation,
  sandboxSubmissions,
  tenantOutcome,
  tenantTable,
  writeDirectory,
  type DemoOrganisation,
  type DemoTenant,
  type SandboxSubmission,
} from './tenants.js';

describe("the demo's organisation", () => {
  let folder: string;
  let org: DemoOrganisation;
  let sandbox: Sandbox;

  beforeAll(async () => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-demo-tenants-test-'));
    org = await makeOrganisation(folder);
    sandbox = await startSandbox({ port: 0, ...org.sandbox });
  });
  afterAll(async () => {
    await sandbox?.close();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('is two tenants in two cells, each application with its own key, kept to the owner', () => {
    expect(org.tenants.map((t) => [t.name, t.cell, t.clientId])).toEqual([
      ['acme', 'eu-1', 'acme-app'],
      ['globex', 'us-1', 'globex-app'],
    ]);
    expect(Object.keys(sandbox.cells).sort()).toEqual(['eu-1', 'us-1']);
    expect(sandbox.tenants().map((t) => [t.name, t.cell, t.applications[0]?.credentials])).toEqual([
      ['acme', 'eu-1', 'private_key_jwt'],
      ['globex', 'us-1', 'private_key_jwt'],
    ]);
    const keys = org.tenants.map((t) => fs.readFileSync(path.join(folder, `${t.name}.pem`), 'utf8'));
    expect(new Set(keys).size).toBe(2);
    for (const t of org.tenants)
      expect(fs.statSync(path.join(folder, `${t.name}.pem`)).mode & 0o777).toBe(0o600);
  });

  it('writes a tenant directory the connector reads: each tenant in its cell of the sandbox', async () => {
    const file = await writeDirectory(org, sandbox.cells);
    const directory = await readDirectory(file, {});
    expect(
      [...directory.tenants.values()].map((t) => [
        t.name,
        t.cell,
        t.baseUrl,
        t.tokenUrl,
        t.clientId,
        t.credentials.kind,
        t.tenantId,
      ]),
    ).toEqual(
      org.tenants.map((t) => [
        t.name,
        t.cell,
        sandbox.cells[t.cell]!.baseUrl,
        sandbox.cells[t.cell]!.tokenUrl,
        t.clientId,
        'private-key-jwt',
        t.name,
      ]),
    );
  });

  it("reads the sandbox's record of submissions", async () => {
    expect(await sandboxSubmissions(sandbox.baseUrl)).toEqual([]);
  });
});

describe('an event of a tenant, against the sandbox record', () => {
  const acme: DemoTenant = { name: 'acme', cell: 'eu-1', clientId: 'acme-app', kid: 'acme-demo-key' };
  const created = (over: Partial<SandboxSubmission> = {}): SandboxSubmission => ({
    query_id: 'acme-payslip',
    cell: 'eu-1',
    tenant_id: 'acme',
    client_id: 'acme-app',
    ...over,
  });
  const carried = ['acme', 'acme', 'acme'];

  it("is right when created once, in its tenant's cell by its application, and results carry the tenant", () => {
    const other = created({ query_id: 'payslip-clean', cell: 'testing', tenant_id: null });
    expect(tenantOutcome('acme-payslip', acme, carried, [other, created()])).toEqual({
      event: 'acme-payslip',
      tenant: 'acme',
      cell: 'eu-1',
      application: 'acme-app',
      resultsTenant: 'acme',
      ok: true,
    });
  });

  it.each<[string, Array<string | null>, SandboxSubmission[]]>([
    ['another cell', carried, [created({ cell: 'us-1' })]],
    ['another application', carried, [created({ client_id: 'sandbox-client' })]],
    ['another tenant id', carried, [created({ tenant_id: null })]],
    ['no submission', carried, []],
    ['two submissions', carried, [created(), created()]],
    ['a result without its tenant', ['acme', null, 'acme'], [created()]],
  ])('is wrong with %s', (_what, tenants, submissions) => {
    expect(tenantOutcome('acme-payslip', acme, tenants, submissions).ok).toBe(false);
  });

  it('shows what it found: no submission, several cells, results of no tenant', () => {
    expect(tenantOutcome('acme-payslip', acme, [null], [])).toMatchObject({
      cell: '-',
      application: '-',
      resultsTenant: '-',
    });
    const two = [created(), created({ cell: 'us-1', client_id: 'globex-app' })];
    expect(tenantOutcome('acme-payslip', acme, carried, two)).toMatchObject({
      cell: 'eu-1,us-1',
      application: 'acme-app,globex-app',
    });
  });

  it('is shown in a table of its own: event, tenant, cell, application, the tenant its results carry', () => {
    const lines = tenantTable([tenantOutcome('acme-payslip', acme, carried, [created()])], 100);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^event\s+tenant\s+cell\s+application\s+results' tenant$/);
    expect(lines[1]).toMatch(/^acme-payslip\s+acme\s+eu-1\s+acme-app\s+acme$/);
  });
});
