/**
 * The tenant-management API (`/v0`): create a tenant, list its applications. The client
 * authenticates with a private-key JWT assertion (RS256, registered `kid`).
 */
import type { CryptoKey, KeyObject } from 'jose';
import { z } from 'zod';
import { ApplicationList, CreateTenantRequest, PATHS, Tenant } from '../api/schemas.js';
import { privateKeyJwt } from './auth.js';
import type { AdaptiveRateLimiter } from './limiter.js';
import {
  type CommonOptions,
  CommonOptionsShape,
  createTransport,
  parseOptions,
  type Transport,
} from './transport.js';
import { fail, validateBody } from './validate.js';

export interface TenantClientOptions extends CommonOptions {
  clientId: string;
  /** PKCS#8 PEM or an imported key. */
  privateKey: string | CryptoKey | KeyObject;
  kid: string;
}

const TenantClientOptionsSchema = z.strictObject({
  ...CommonOptionsShape,
  clientId: z.string().min(1),
  privateKey: z.custom<string | CryptoKey | KeyObject>(
    (v) => (typeof v === 'string' && v.includes('PRIVATE KEY')) || (typeof v === 'object' && v !== null),
    'must be a PKCS#8 PEM private key or a key object',
  ),
  kid: z.string().min(1),
});

const ROUTES = { tenants: '/v0/tenants', applications: '/v0/tenants/{tenant_id}/applications' } as const;

export class TenantClient {
  private readonly transport: Transport;

  constructor(options: TenantClientOptions) {
    const parsed = parseOptions(TenantClientOptionsSchema, options, 'TenantClient options');
    this.transport = createTransport(parsed, (tokenUrl) =>
      privateKeyJwt({
        clientId: parsed.clientId,
        privateKey: parsed.privateKey,
        kid: parsed.kid,
        tokenUrl,
        scopes: parsed.scopes,
      }),
    );
  }

  get limiter(): AdaptiveRateLimiter {
    return this.transport.limiter;
  }

  /** A token from the token endpoint for the private-key JWT client (no tenant API call). */
  async checkAccess(): Promise<void> {
    await this.transport.tokens.getToken();
  }

  /** POST /v0/tenants: not idempotent (names are unique), so it follows the create retry rule. */
  async createTenant(request: CreateTenantRequest): Promise<Tenant> {
    const context = { method: 'POST', endpoint: `POST ${ROUTES.tenants}` };
    const body = validateBody(CreateTenantRequest, request, context);
    return this.transport.sender.send({
      method: 'POST',
      route: ROUTES.tenants,
      url: `${this.transport.baseUrl}${PATHS.tenants}`,
      json: body,
      auth: true,
      retry: 'create',
      limited: true,
      schema: Tenant,
    });
  }

  async listApplications(tenantId: string): Promise<ApplicationList> {
    const context = { method: 'GET', endpoint: `GET ${ROUTES.applications}` };
    if (typeof tenantId !== 'string' || tenantId.length === 0)
      fail(`${context.endpoint}: tenant_id is required`, 'tenant_id', context);
    return this.transport.sender.send({
      method: 'GET',
      route: ROUTES.applications,
      url: `${this.transport.baseUrl}${PATHS.applications(tenantId)}`,
      auth: true,
      retry: 'idempotent',
      limited: true,
      schema: ApplicationList,
    });
  }
}
