/**
 * The sandbox's knobs: one declared schema is the source of truth for defaults, validation of
 * the CLI, of config files and of `POST /_sandbox/config`, and for the docs. Unknown keys are
 * rejected loudly so a typo never silently falls back to a default.
 */
import { z } from 'zod';
import {
  CreateTenantRequest,
  describeZodError,
  FRAUD_SCORES,
  PipelineConfiguration,
} from '../api/schemas.js';

export type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

const RateLimit = z.strictObject({
  ratePerSecond: z.number().positive(),
  burst: z.number().int().positive(),
});

const PublicKeyPem = z.string().includes('PUBLIC KEY', { message: 'must be a PEM-encoded SPKI public key' });

const Client = z.strictObject({
  clientId: z.string().min(1),
  clientSecret: z.string().min(1).optional(),
  scopes: z.array(z.string().min(1)),
  publicKeyPem: PublicKeyPem.optional(),
  kid: z.string().min(1).optional(),
  /** This client's own token bucket; null = not limited; absent = the sandbox's `rateLimit`. */
  rateLimit: RateLimit.nullable().optional(),
});

/** The credentials (and rate limit) of an application, as the sandbox-only endpoint sets them. */
export const ApplicationPatch = z
  .strictObject({
    clientSecret: z.string().min(1).optional(),
    publicKeyPem: PublicKeyPem.optional(),
    kid: z.string().min(1).optional(),
    rateLimit: RateLimit.nullable().optional(),
  })
  .refine((p) => Object.values(p).some((v) => v !== undefined), {
    message: 'give clientSecret, publicKeyPem (with kid) or rateLimit',
  });
export type ApplicationPatch = z.infer<typeof ApplicationPatch>;

/** Default scopes of a tenant's application: the spec's names for the submission API's two. */
export const APPLICATION_SCOPES = ['documents.submissions.read', 'documents.submissions.write'];

/** A tenant declared in the config: its one cell and its applications (OAuth clients). */
const DeclaredTenant = z.strictObject({
  /** The tenant's id (webhooks' `tenant_id`); defaults to its name. */
  id: z.string().min(1).optional(),
  name: CreateTenantRequest.shape.name,
  cells: CreateTenantRequest.shape.cells,
  applications: z.array(Client.extend({ scopes: z.array(z.string().min(1)).optional() })),
});
export type DeclaredTenant = z.infer<typeof DeclaredTenant>;

/** A cell served on a listener of its own, beside the sandbox's own (`host`, `port`). */
const ServedCell = z.strictObject({
  /** Default: the sandbox's `host`. */
  host: z.string().min(1).optional(),
  /** Default 0: a free port. */
  port: z.number().int().min(0).max(65535).optional(),
  /** As the top-level `tokenUrls`, for this cell's token endpoint. */
  tokenUrls: z.array(z.url({ protocol: /^https?$/ })).optional(),
});

const rate = z.number().min(0).max(1);

/** How long a result takes from the start of analysis. */
const Processing = z.strictObject({
  distribution: z.enum(['fixed', 'uniform', 'exponential']),
  meanMs: z.number().min(0),
  minMs: z.number().min(0).optional(),
  maxMs: z.number().min(0).optional(),
});

export const SandboxConfigSchema = z
  .strictObject({
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    clients: z.array(Client),
    tokenTtlSeconds: z.number().int().positive(),
    /**
     * Token endpoint URLs a client assertion may name as its audience, besides the URL the
     * sandbox listens on (and its `localhost` spelling on loopback): add the address clients
     * use when that is another name (a container's service name, a proxy).
     */
    tokenUrls: z.array(z.url({ protocol: /^https?$/ })),
    /**
     * The spec says nothing of processing times: these are test knobs. `byPipeline` gives a pipeline
     * its own distribution (its results and its decision); `msPerMiB` adds that many ms per MiB of the
     * uploaded file to each analysis result's time. Unset, every result takes the one distribution.
     */
    processing: Processing.extend({
      byPipeline: z.partialRecord(PipelineConfiguration, Processing).nullable().optional(),
      msPerMiB: z.number().min(0).nullable().optional(),
    }),
    /** Seed for every random draw (processing times, faults, webhook duplicates); null = unseeded. */
    seed: z.number().int().nullable(),
    rateLimit: RateLimit.nullable(),
    retryAfterFormat: z.enum(['seconds', 'http-date']),
    faults: z.strictObject({
      errorRate: rate,
      extraLatencyMs: z.number().min(0),
      dropRate: rate,
      storm429: z.strictObject({ durationMs: z.number().positive() }).nullable(),
      /** Probability that an analysis result is the PIPELINE_FAILED variant. */
      pipelineFailRate: rate,
    }),
    webhook: z.strictObject({
      url: z.url({ protocol: /^https?$/ }).nullable(),
      secret: z.string().regex(/^whsec_[A-Za-z0-9+/=]{8,}$/, 'must be whsec_ followed by a base64 key'),
      duplicateRate: rate,
      outOfOrder: z.boolean(),
      /** With outOfOrder, events are held this long and then sent newest first. */
      outOfOrderWindowMs: z.number().int().positive(),
      maxAttempts: z.number().int().positive(),
      /** First retry delay; doubles per attempt (capped at 60 s). */
      retryBaseMs: z.number().int().positive(),
      tenantId: z.string().min(1),
    }),
    decisionRules: z.strictObject(
      Object.fromEntries(FRAUD_SCORES.map((s) => [s, z.string().min(1)])) as Record<
        (typeof FRAUD_SCORES)[number],
        z.ZodString
      >,
    ),
    maxUploadBytes: z.number().int().positive(),
    maxSubmissions: z.number().int().positive(),
    storageDir: z.string().min(1).nullable(),
    /**
     * Uploads of at most maxFileBytes are kept in memory instead of storageDir, while all of them
     * together hold at most maxTotalBytes (beyond, they go to storageDir too); 0 turns it off.
     */
    inMemoryUploads: z.strictObject({
      maxFileBytes: z.number().int().min(0),
      maxTotalBytes: z.number().int().min(0),
    }),
    uploadUrlTtlSeconds: z.number().int().positive(),
    reportUrlTtlSeconds: z.number().int().positive(),
    /**
     * Cells served each on a listener of its own (its base URL and token endpoint); empty, the one
     * listener serves every cell, as a single-cell sandbox always did.
     */
    cells: z.partialRecord(CreateTenantRequest.shape.cells.element, ServedCell),
    tenants: z.array(DeclaredTenant),
    /** API calls kept by the call record (`GET /_sandbox/calls`), newest last; 0 keeps none. */
    maxCallRecords: z.number().int().min(0),
  })
  .superRefine((c, ctx) => {
    const clients: Array<
      [Array<string | number>, z.infer<typeof Client> | DeclaredTenant['applications'][number]]
    > = c.clients.map((client, i) => [['clients', i], client]);
    for (const [t, tenant] of c.tenants.entries())
      for (const [a, app] of tenant.applications.entries())
        clients.push([['tenants', t, 'applications', a], app]);
    const ids = new Set<string>();
    for (const [path, client] of clients) {
      if (!client.clientSecret && !client.publicKeyPem) {
        ctx.addIssue({ code: 'custom', path, message: 'needs clientSecret or publicKeyPem' });
      }
      if (client.publicKeyPem && !client.kid) {
        ctx.addIssue({ code: 'custom', path: [...path, 'kid'], message: 'is required with publicKeyPem' });
      }
      if (ids.has(client.clientId)) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'clientId'],
          message: `${client.clientId} is already the id of another client or application`,
        });
      }
      ids.add(client.clientId);
    }
    const served = Object.keys(c.cells);
    const names = new Set<string>();
    const tenantIds = new Set<string>();
    for (const [t, tenant] of c.tenants.entries()) {
      const cell = tenant.cells[0] as string;
      if (served.length > 0 && !served.includes(cell)) {
        ctx.addIssue({
          code: 'custom',
          path: ['tenants', t, 'cells'],
          message: `cell ${cell} is not served (cells: ${served.join(', ')})`,
        });
      }
      if (names.has(tenant.name))
        ctx.addIssue({
          code: 'custom',
          path: ['tenants', t, 'name'],
          message: `${tenant.name} is declared twice`,
        });
      names.add(tenant.name);
      const id = tenant.id ?? tenant.name;
      if (tenantIds.has(id))
        ctx.addIssue({ code: 'custom', path: ['tenants', t, 'id'], message: `${id} is declared twice` });
      tenantIds.add(id);
    }
    const ports = new Map<string, string>();
    if (c.port !== 0) ports.set(`${c.host}:${c.port}`, 'the sandbox (port)');
    for (const [name, cell] of Object.entries(c.cells)) {
      if (!cell?.port) continue;
      const key = `${cell.host ?? c.host}:${cell.port}`;
      const other = ports.get(key);
      if (other)
        ctx.addIssue({
          code: 'custom',
          path: ['cells', name, 'port'],
          message: `${cell.port} is already the port of ${other}`,
        });
      ports.set(key, `cells.${name}`);
    }
    const distributions: Array<[Array<string>, z.infer<typeof Processing>]> = [
      [['processing'], c.processing],
    ];
    for (const [pipeline, d] of Object.entries(c.processing.byPipeline ?? {}))
      if (d) distributions.push([['processing', 'byPipeline', pipeline], d]);
    for (const [path, { minMs, maxMs }] of distributions) {
      if (minMs !== undefined && maxMs !== undefined && minMs > maxMs) {
        ctx.addIssue({ code: 'custom', path: [...path, 'minMs'], message: 'must not exceed maxMs' });
      }
    }
  });

export type SandboxConfig = z.infer<typeof SandboxConfigSchema>;

export const DEFAULT_CLIENT = {
  clientId: 'sandbox-client',
  clientSecret: 'sandbox-secret',
  scopes: ['submissions.read', 'submissions.write'],
};

export function defaultConfig(): SandboxConfig {
  return {
    host: '127.0.0.1',
    port: 8080,
    clients: [{ ...DEFAULT_CLIENT, scopes: [...DEFAULT_CLIENT.scopes] }],
    tokenTtlSeconds: 3600,
    tokenUrls: [],
    processing: { distribution: 'uniform', meanMs: 1500, minMs: 500, maxMs: 2500 },
    seed: null,
    rateLimit: null,
    retryAfterFormat: 'seconds',
    faults: { errorRate: 0, extraLatencyMs: 0, dropRate: 0, storm429: null, pipelineFailRate: 0 },
    webhook: {
      url: null,
      secret: 'whsec_c2FuZGJveC13ZWJob29rLXNlY3JldA==',
      duplicateRate: 0,
      outOfOrder: false,
      outOfOrderWindowMs: 250,
      maxAttempts: 8,
      retryBaseMs: 1000,
      tenantId: 'sandbox-tenant',
    },
    decisionRules: {
      TRUSTED: 'APPROVED',
      NORMAL: 'APPROVED',
      WARNING: 'MANUAL_REVIEW',
      HIGH_RISK: 'DECLINED',
    },
    maxUploadBytes: 100 * 1024 * 1024,
    maxSubmissions: 10000,
    storageDir: null,
    inMemoryUploads: { maxFileBytes: 1024 * 1024, maxTotalBytes: 256 * 1024 * 1024 },
    uploadUrlTtlSeconds: 900,
    reportUrlTtlSeconds: 900,
    cells: {},
    tenants: [],
    maxCallRecords: 10000,
  };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Merges a patch into a base: objects merge key by key, arrays and scalars (and null) replace. */
export function mergeDeep<T>(base: T, patch: unknown): T {
  if (!isPlainObject(patch) || !isPlainObject(base)) return (patch === undefined ? base : patch) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeDeep(current, value) : value;
  }
  return out as T;
}

export class SandboxConfigError extends Error {
  override readonly name = 'SandboxConfigError';
}

/** Applies a patch and validates the result; throws SandboxConfigError naming each bad field. */
export function applyConfigPatch(base: SandboxConfig, patch: unknown): SandboxConfig {
  if (patch !== undefined && !isPlainObject(patch)) {
    throw new SandboxConfigError('config: must be a JSON object');
  }
  const parsed = SandboxConfigSchema.safeParse(mergeDeep(base, patch));
  if (!parsed.success) throw new SandboxConfigError(describeZodError(parsed.error));
  return parsed.data;
}

function redactClient<T extends { clientSecret?: string | undefined }>(c: T): T {
  return { ...c, clientSecret: c.clientSecret ? '[redacted]' : undefined };
}

/** The config as shown to callers of the inspection API: secrets masked. */
export function redactConfig(config: SandboxConfig): unknown {
  return {
    ...config,
    clients: config.clients.map(redactClient),
    tenants: config.tenants.map((t) => ({ ...t, applications: t.applications.map(redactClient) })),
    webhook: { ...config.webhook, secret: '[redacted]' },
  };
}
