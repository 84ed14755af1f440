/**
 * Tenants of the managed organisation: each lives in one cell and owns its applications (OAuth
 * clients) there. Tenants come from the config (with their applications' credentials) or from
 * `POST /v0/tenants` (one application, whose credentials the sandbox-only endpoint registers).
 * Addresses are not stored: a cell's base and token URL are known only once its listener listens.
 */
import { randomUUID } from 'node:crypto';
import type { Application, Cell, Tenant } from '../api/schemas.js';
import { APPLICATION_SCOPES, type ApplicationPatch, type DeclaredTenant } from './config.js';

export interface CellUrls {
  baseUrl: string;
  tokenUrl: string;
}

interface RateLimit {
  ratePerSecond: number;
  burst: number;
}

/** A tenant's application: what the token endpoint authenticates, and whose budget a call spends. */
export interface TenantApplication {
  id: string;
  tenantId: string;
  cell: Cell;
  clientId: string;
  scopes: string[];
  clientSecret?: string;
  publicKeyPem?: string;
  /** The registered key's id; before a key is registered, the one the listing announces. */
  kid: string;
  /** Own token bucket; null = not limited; undefined = the sandbox's `rateLimit`. */
  rateLimit?: RateLimit | null;
}

interface StoredTenant {
  id: string;
  name: string;
  cell: Cell;
  created: string;
  updated: string;
  applications: TenantApplication[];
}

export class TenantStore {
  private readonly byId = new Map<string, StoredTenant>();
  private readonly byName = new Map<string, StoredTenant>();
  private readonly byClientId = new Map<string, TenantApplication>();

  constructor(declared: readonly DeclaredTenant[] = []) {
    const now = new Date().toISOString();
    for (const d of declared) {
      const id = d.id ?? d.name;
      const cell = d.cells[0] as Cell;
      this.add({
        id,
        name: d.name,
        cell,
        created: now,
        updated: now,
        applications: d.applications.map((a) => ({
          id: `${id}-${a.clientId}`,
          tenantId: id,
          cell,
          clientId: a.clientId,
          scopes: a.scopes ?? [...APPLICATION_SCOPES],
          ...(a.clientSecret === undefined ? {} : { clientSecret: a.clientSecret }),
          ...(a.publicKeyPem === undefined ? {} : { publicKeyPem: a.publicKeyPem }),
          kid: a.kid ?? `${a.clientId}-key-1`,
          ...(a.rateLimit === undefined ? {} : { rateLimit: a.rateLimit }),
        })),
      });
    }
  }

  private add(tenant: StoredTenant): void {
    this.byId.set(tenant.id, tenant);
    this.byName.set(tenant.name, tenant);
    for (const app of tenant.applications) this.byClientId.set(app.clientId, app);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** Creates a tenant with one application `<name>-<cell>`, which has no credentials yet. */
  create(name: string, cell: Cell): StoredTenant {
    const now = new Date().toISOString();
    const id = randomUUID();
    const clientId = `${name}-${cell}`;
    const tenant: StoredTenant = {
      id,
      name,
      cell,
      created: now,
      updated: now,
      applications: [
        {
          id: randomUUID(),
          tenantId: id,
          cell,
          clientId,
          scopes: [...APPLICATION_SCOPES],
          kid: `${clientId}-key-1`,
        },
      ],
    };
    this.add(tenant);
    return tenant;
  }

  get(id: string): StoredTenant | undefined {
    return this.byId.get(id);
  }

  all(): StoredTenant[] {
    return [...this.byId.values()];
  }

  application(clientId: string): TenantApplication | undefined {
    return this.byClientId.get(clientId);
  }

  /** Registers credentials or a rate limit, as an organisation does in its console. */
  update(clientId: string, patch: ApplicationPatch): TenantApplication | undefined {
    const app = this.byClientId.get(clientId);
    if (!app) return undefined;
    if (patch.clientSecret !== undefined) app.clientSecret = patch.clientSecret;
    if (patch.publicKeyPem !== undefined) app.publicKeyPem = patch.publicKeyPem;
    if (patch.kid !== undefined) app.kid = patch.kid;
    if (patch.rateLimit !== undefined) app.rateLimit = patch.rateLimit;
    const tenant = this.byId.get(app.tenantId);
    if (tenant) tenant.updated = new Date().toISOString();
    return app;
  }
}

/** The spec's Tenant of a stored one, at its cell's addresses. */
export function tenantView(t: StoredTenant, urls: CellUrls): Tenant {
  return {
    id: t.id,
    name: t.name,
    created: t.created,
    updated: t.updated,
    cells: [t.cell],
    _links: { 'documents-ui': [{ href: `${urls.baseUrl}/_ui/${t.cell}/${t.name}`, rel: t.cell }] },
  };
}

/** The spec's Application; a client-secret application names no key (`alg` `none`, `kid` ""). */
export function applicationView(a: TenantApplication, urls: CellUrls): Application {
  const secretOnly = a.clientSecret !== undefined && a.publicKeyPem === undefined;
  return {
    id: a.id,
    client_id: a.clientId,
    auth_server: urls.baseUrl,
    cell: a.cell,
    scopes: [...a.scopes],
    credentials: secretOnly
      ? { type: 'client_secret', alg: 'none', kid: '' }
      : { type: 'private_key_jwt', alg: 'RS256', kid: a.kid },
    _links: { token_url: urls.tokenUrl },
  };
}
