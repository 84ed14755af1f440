/** Tenants of the managed organisation and the one application (OAuth client) each gets. */
import { randomUUID } from 'node:crypto';
import type { Application, Cell, Tenant } from '../api/schemas.js';

const APPLICATION_SCOPES = ['documents.submissions.read', 'documents.submissions.write'];

export class TenantStore {
  private readonly tenants = new Map<string, { tenant: Tenant; applications: Application[] }>();
  private readonly names = new Set<string>();

  has(name: string): boolean {
    return this.names.has(name);
  }

  create(name: string, cell: Cell, baseUrl: string, tokenUrl: string): Tenant {
    const now = new Date().toISOString();
    const tenant: Tenant = {
      id: randomUUID(),
      name,
      created: now,
      updated: now,
      cells: [cell],
      _links: { 'documents-ui': [{ href: `${baseUrl}/_ui/${cell}/${name}`, rel: cell }] },
    };
    const application: Application = {
      id: randomUUID(),
      client_id: `${name}-${cell}`,
      auth_server: baseUrl,
      cell,
      scopes: [...APPLICATION_SCOPES],
      credentials: { type: 'private_key_jwt', alg: 'RS256', kid: `${name}-${cell}-key-1` },
      _links: { token_url: tokenUrl },
    };
    this.tenants.set(tenant.id, { tenant, applications: [application] });
    this.names.add(name);
    return tenant;
  }

  applications(tenantId: string): Application[] | undefined {
    return this.tenants.get(tenantId)?.applications;
  }
}
