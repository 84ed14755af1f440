/**
 * One API client per tenant application, made from the tenant directory: each has its own base URL
 * and token URL (its cell), its own token cache refreshed on its own, its own adaptive limiter and
 * health, so one tenant's 429s, outage or limiter wait never delays another's calls. A tenant whose
 * entry changed (a rotated key, another cell) gets a new client: the next token is fetched with the
 * new credentials. The group's share of the limit (`setShare`) applies to every tenant's limiter.
 * A token endpoint that refuses a tenant's credentials (401/403) is logged once per client, by
 * tenant name, never with the secret.
 */
import { PATHS } from '../api/schemas.js';
import type { DocumentAnalysisClient } from '../client/client.js';
import type { CallEvent } from '../client/http.js';
import type { AdaptiveRateLimiter } from '../client/limiter.js';
import type { Logger } from '../observability/logger.js';
import type { DirectoryDiff, TenantDirectory, TenantEntry } from './directory.js';

/** Makes a tenant's client; `onCall` must be given every call's event (for the refusal log). */
export type TenantClientFactory = (
  entry: TenantEntry,
  onCall: (call: CallEvent) => void,
) => DocumentAnalysisClient;

interface Held {
  entry: TenantEntry;
  client: DocumentAnalysisClient;
}

const TOKEN_ROUTE = PATHS.token;

export class TenantClients {
  private readonly held = new Map<string, Held>();
  private share: { owned: number; total: number } = { owned: 1, total: 1 };

  constructor(
    private readonly make: TenantClientFactory,
    private readonly logger: Logger,
    directory: TenantDirectory,
  ) {
    for (const entry of directory.tenants.values()) this.add(entry);
  }

  /** The client of this tenant's application; undefined when the directory does not know it. */
  client(tenant: string): DocumentAnalysisClient | undefined {
    return this.held.get(tenant)?.client;
  }

  /** The API's id of this tenant (its entry's `tenantId`); null when not given or not known. */
  tenantId(tenant: string): string | null {
    return this.held.get(tenant)?.entry.tenantId ?? null;
  }

  has(tenant: string): boolean {
    return this.held.has(tenant);
  }

  /** The tenants known now, for metrics and status (bounded by the directory). */
  names(): string[] {
    return [...this.held.keys()];
  }

  limiter(tenant: string): AdaptiveRateLimiter | undefined {
    return this.held.get(tenant)?.client.limiter;
  }

  /** The directory changed: clients made for the added and changed tenants, dropped for the removed. */
  apply(directory: TenantDirectory, diff: DirectoryDiff): void {
    for (const name of diff.removed) this.held.delete(name);
    for (const name of [...diff.added, ...diff.changed]) {
      const entry = directory.tenants.get(name);
      if (entry) this.add(entry);
    }
  }

  /** This member's share of the group's limit, for every tenant application (each finds its own limit). */
  setShare(owned: number, total: number): void {
    this.share = { owned, total };
    for (const { client } of this.held.values()) client.limiter.setShare(owned, total);
  }

  private add(entry: TenantEntry): void {
    let refusalLogged = false;
    const client = this.make(entry, (call) => {
      if (call.endpoint !== TOKEN_ROUTE || (call.status !== 401 && call.status !== 403) || refusalLogged)
        return;
      refusalLogged = true;
      this.logger.error(
        { tenant: entry.name, cell: entry.cell, status: call.status },
        `the token endpoint refused the credentials of tenant ${entry.name} (${call.status}): its documents are dead-lettered until its entry in the tenant directory is fixed`,
      );
    });
    client.limiter.setShare(this.share.owned, this.share.total);
    this.held.set(entry.name, { entry, client });
  }
}
