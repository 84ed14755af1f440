/**
 * An organisation sandbox for tests: one sandbox serving several cells, each on its own loopback
 * listener and token endpoint, with tenants declared in it, each with one application whose
 * credentials this helper makes (an RS256 key pair with a kid, or a client secret). Returns each
 * cell's addresses (the shape of the client's `api.cells`) and each tenant's credentials.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, SignJWT } from 'jose';
import type { Cell } from '../../src/api/schemas.js';
import {
  startSandbox,
  type CellUrls,
  type DeepPartial,
  type Sandbox,
  type SandboxConfig,
} from '../../src/sandbox/index.js';

export interface TenantSpec {
  name: string;
  cell: Cell;
  /** Default private_key_jwt. */
  auth?: 'private_key_jwt' | 'client_secret';
  /** The application's own token bucket; absent: the sandbox's `rateLimit`. */
  rateLimit?: { ratePerSecond: number; burst: number } | null;
}

export interface OrgTenant {
  id: string;
  name: string;
  cell: Cell;
  /** The tenant's cell's addresses. */
  baseUrl: string;
  tokenUrl: string;
  clientId: string;
  auth: 'private_key_jwt' | 'client_secret';
  /** private_key_jwt: the key id and the PKCS#8 PEM private key. */
  kid?: string;
  privateKeyPem?: string;
  clientSecret?: string;
}

export interface Organisation {
  sandbox: Sandbox;
  cells: Record<string, CellUrls>;
  tenants: Record<string, OrgTenant>;
  close(): Promise<void>;
}

/** Starts a sandbox serving `cells`, with `tenants` declared in it (a tenant's id is its name). */
export async function startOrganisationSandbox(options: {
  cells: Cell[];
  tenants: TenantSpec[];
  config?: DeepPartial<SandboxConfig>;
}): Promise<Organisation> {
  const made: Array<Omit<OrgTenant, 'baseUrl' | 'tokenUrl'>> = [];
  const declared: SandboxConfig['tenants'] = [];
  for (const spec of options.tenants) {
    const auth = spec.auth ?? 'private_key_jwt';
    const clientId = `${spec.name}-app`;
    const limit = spec.rateLimit === undefined ? {} : { rateLimit: spec.rateLimit };
    if (auth === 'client_secret') {
      const clientSecret = randomBytes(18).toString('base64url');
      made.push({ id: spec.name, name: spec.name, cell: spec.cell, clientId, auth, clientSecret });
      declared.push({
        name: spec.name,
        cells: [spec.cell],
        applications: [{ clientId, clientSecret, ...limit }],
      });
    } else {
      const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
      const kid = `${clientId}-key-1`;
      made.push({
        id: spec.name,
        name: spec.name,
        cell: spec.cell,
        clientId,
        auth,
        kid,
        privateKeyPem: await exportPKCS8(privateKey),
      });
      declared.push({
        name: spec.name,
        cells: [spec.cell],
        applications: [{ clientId, publicKeyPem: await exportSPKI(publicKey), kid, ...limit }],
      });
    }
  }
  const sandbox = await startSandbox({
    port: 0,
    processing: { distribution: 'fixed', meanMs: 50 },
    ...options.config,
    cells: Object.fromEntries(options.cells.map((c) => [c, { port: 0 }])),
    tenants: declared,
  });
  const tenants: Record<string, OrgTenant> = {};
  for (const t of made) {
    const urls = sandbox.cells[t.cell];
    if (!urls) throw new Error(`tenant ${t.name}: cell ${t.cell} is not in cells`);
    tenants[t.name] = { ...t, ...urls };
  }
  return { sandbox, cells: sandbox.cells, tenants, close: () => sandbox.close() };
}

/** The token endpoint's answer for a tenant's application at `tokenUrl` (its own cell's by default). */
export async function requestToken(
  tenant: OrgTenant,
  tokenUrl = tenant.tokenUrl,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (tenant.auth === 'client_secret') {
    headers.authorization = `Basic ${Buffer.from(`${tenant.clientId}:${tenant.clientSecret}`).toString('base64')}`;
  } else {
    form.set('client_assertion', await assertion(tenant, tokenUrl));
    form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
  }
  const res = await fetch(tokenUrl, { method: 'POST', headers, body: form.toString() });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** An access token for the tenant's application from its own cell's token endpoint. */
export async function tenantToken(tenant: OrgTenant): Promise<string> {
  const res = await requestToken(tenant);
  if (res.status !== 200)
    throw new Error(`token for ${tenant.name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

/** An RS256 client assertion of the tenant's application for `audience`. */
export async function assertion(tenant: OrgTenant, audience: string): Promise<string> {
  if (!tenant.privateKeyPem || !tenant.kid) throw new Error(`tenant ${tenant.name} has no private key`);
  const key = await importPKCS8(tenant.privateKeyPem, 'RS256');
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: tenant.kid })
    .setIssuer(tenant.clientId)
    .setSubject(tenant.clientId)
    .setAudience(audience)
    .setJti(randomUUID())
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(key);
}

/**
 * Makes a key pair for an application of a tenant created over `POST /v0/tenants` and registers
 * its public key through the sandbox-only `PUT /_sandbox/applications/:clientId`, as an
 * organisation does in its console; returns the private key to sign assertions with.
 */
export async function registerApplicationKey(
  baseUrl: string,
  clientId: string,
  kid: string,
): Promise<{ privateKeyPem: string; status: number; body: unknown }> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const res = await fetch(`${baseUrl}/_sandbox/applications/${encodeURIComponent(clientId)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ publicKeyPem: await exportSPKI(publicKey), kid }),
  });
  return { privateKeyPem: await exportPKCS8(privateKey), status: res.status, body: await res.json() };
}
