/**
 * The client against the real sandbox: every endpoint, the error classes the sandbox can
 * produce, token expiry mid-run, 429 storms and rate limits (both Retry-After forms), 5xx and
 * dropped connections, and the `docstream analyze` command end to end.
 */
import { generateKeyPairSync } from 'node:crypto';
import { jest } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { buildProgram } from '../../src/cli/program.js';
import { DocumentAnalysisClient, type ClientOptions } from '../../src/client/client.js';
import {
  ApiError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  NotReadyError,
  PermissionError,
  RateLimitError,
  ServerError,
  ValidationError,
} from '../../src/client/errors.js';
import type { CallEvent } from '../../src/client/http.js';
import { pollUntilReady } from '../../src/client/poll.js';
import { TenantClient } from '../../src/client/tenant-client.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const TENANT_ADMIN = {
  clientId: 'tenant-admin',
  kid: 'admin-key-1',
  publicKeyPem: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  privateKeyPem: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};

/** The sandbox's client that `client()` signs in as. */
const WRITER = {
  clientId: 'sandbox-client',
  clientSecret: 'sandbox-secret',
  scopes: ['submissions.read', 'submissions.write'],
};

// The integration project's testTimeout is a global-only option jest ignores per project.
jest.setTimeout(60_000);

let sandbox: Sandbox;
let pdf: Buffer;
let dir: string;

async function makePdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([300, 200]);
  page.drawText('Invoice 42', {
    x: 20,
    y: 150,
    size: 18,
    font: await doc.embedFont(StandardFonts.Helvetica),
  });
  return Buffer.from(await doc.save());
}

function client(overrides: Partial<ClientOptions> = {}): DocumentAnalysisClient {
  return new DocumentAnalysisClient({
    baseUrl: sandbox.baseUrl,
    clientId: 'sandbox-client',
    clientSecret: 'sandbox-secret',
    retry: { minDelayMs: 20, maxDelayMs: 500 },
    ...overrides,
  });
}

async function caught(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

const ready = <T>(fetch: () => Promise<T>) =>
  pollUntilReady(fetch, { timeoutMs: 30_000, initialDelayMs: 50, maxDelayMs: 300 });

async function submitted(
  c: DocumentAnalysisClient,
  request: Parameters<DocumentAnalysisClient['createSubmission']>[0] = {},
) {
  const created = await c.createSubmission(request);
  await c.upload(created.upload_url, pdf);
  return created;
}

function statusCount(prefix: string): number {
  return Object.entries(sandbox.stats().requests)
    .filter(([key]) => key.startsWith(prefix))
    .reduce((sum, [, n]) => sum + n, 0);
}

beforeAll(async () => {
  pdf = await makePdf();
  dir = await mkdtemp(join(tmpdir(), 'client-it-'));
  sandbox = await startSandbox({
    processing: { distribution: 'fixed', meanMs: 150 },
    seed: 7,
    clients: [
      WRITER,
      { clientId: 'reader', clientSecret: 'reader-secret', scopes: ['submissions.read'] },
      {
        clientId: TENANT_ADMIN.clientId,
        kid: TENANT_ADMIN.kid,
        publicKeyPem: TENANT_ADMIN.publicKeyPem,
        scopes: ['tenants.write', 'tenants.applications.read'],
      },
    ],
  });
});

afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  sandbox.configure({
    tokenTtlSeconds: 3600,
    rateLimit: null,
    retryAfterFormat: 'seconds',
    faults: { errorRate: 0, extraLatencyMs: 0, dropRate: 0, storm429: null },
  });
});

describe('every endpoint', () => {
  it('create, upload, characteristics, all results, decision, report, feedback, delete', async () => {
    const c = client();
    const created = await c.createSubmission({
      query_id: 'it-every-endpoint',
      enable_decision: true,
      enable_submission_characteristics: true,
    });
    expect(created.submission_id.length).toBeGreaterThanOrEqual(24);
    expect(created.submission_characteristics_upload_url).toBe(
      `${sandbox.baseUrl}/v2/submission/${created.submission_id}/characteristics`,
    );
    const id = created.submission_id;
    const path = join(dir, 'invoice.pdf');
    await writeFile(path, pdf);
    await c.upload(created.upload_url, path);
    await c.putCharacteristics(created.submission_characteristics_upload_url ?? id, {
      document_characteristics: { document_type: 'invoice', source_channel: 'api' },
      transaction_characteristics: { amount_usd: 120.5 },
    });

    const fraud = await ready(() => c.getFraud(id, { withMetadata: true }));
    expect(fraud.status).toBe('SUCCESS');
    expect(fraud.query_id).toBe('it-every-endpoint');
    expect(fraud.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await ready(() => c.getQuality(id))).status).toBe('SUCCESS');
    expect((await ready(() => c.getClassification(id))).status).toBe('SUCCESS');
    expect((await ready(() => c.getContent(id))).status).toBe('SUCCESS');

    const decision = await ready(() => c.getDecision(id, { embed: ['fraud'] }));
    expect(decision.status).toBe('SUCCESS');
    expect((decision.decision_inputs as Record<string, { data: unknown }>).fraud?.data).toMatchObject({
      sha256: fraud.sha256,
    });

    const report = await c.getReport(id, { includeDecision: true });
    expect(report.report_url).toMatch(/^https?:\/\//);

    await expect(c.getFeedback(id)).rejects.toBeInstanceOf(NotFoundError);
    const stored = await c.putFeedback(id, { outcome: 'NOT_FRAUD', comment: 'checked', labels: ['ok'] });
    expect(stored).toMatchObject({ submission_id: id, outcome: 'NOT_FRAUD' });
    expect(await c.getFeedback(id)).toMatchObject({ outcome: 'NOT_FRAUD', labels: ['ok'] });

    await c.deleteSubmission(id);
    const gone = await caught(c.getFraud(id));
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(gone).toMatchObject({ status: 404, submissionId: id, endpoint: 'GET /v2/submission/{id}/fraud' });
    expect(sandbox.stats().uploads).toBeGreaterThanOrEqual(1);
  });

  it('tenant API with a private_key_jwt client', async () => {
    const tenants = new TenantClient({
      baseUrl: sandbox.baseUrl,
      clientId: TENANT_ADMIN.clientId,
      privateKey: TENANT_ADMIN.privateKeyPem,
      kid: TENANT_ADMIN.kid,
    });
    const tenant = await tenants.createTenant({ name: 'acme42', cells: ['eu-1'] });
    expect(tenant).toMatchObject({ name: 'acme42', cells: ['eu-1'] });
    const apps = await tenants.listApplications(tenant.id);
    expect(Array.isArray(apps.items)).toBe(true);
    const again = await caught(tenants.createTenant({ name: 'acme42', cells: ['eu-1'] }));
    expect(again).toBeInstanceOf(ConflictError);
    expect(statusCount('POST /v0/tenants 409')).toBe(1);
    const missing = await caught(tenants.listApplications('no-such-tenant'));
    expect(missing).toBeInstanceOf(NotFoundError);
  });
});

describe('errors from the sandbox', () => {
  it('maps 400, 401, 403, 404 (decision: not ready), 409 and validation', async () => {
    const c = client();
    const plain = await submitted(c);
    await ready(() => c.getFraud(plain.submission_id));
    const notEnabled = await caught(c.getDecision(plain.submission_id));
    expect(notEnabled).toBeInstanceOf(InvalidRequestError);
    expect(notEnabled.status).toBe(400);

    sandbox.configure({ processing: { distribution: 'fixed', meanMs: 3000 } });
    const slow = await submitted(c, { enable_decision: true });
    const notReady = await caught(c.getDecision(slow.submission_id));
    expect(notReady).toBeInstanceOf(NotReadyError);
    expect(notReady.retriable).toBe(true);
    const busy = await caught(c.deleteSubmission(slow.submission_id));
    expect(busy).toBeInstanceOf(ConflictError);
    expect(busy.retriable).toBe(true);
    const early = await caught(c.getReport(slow.submission_id));
    expect(early).toBeInstanceOf(ConflictError);
    expect(early.retriable).toBe(false);
    sandbox.configure({ processing: { distribution: 'fixed', meanMs: 150 } });

    const badSecret = await caught(client({ clientSecret: 'wrong' }).getFraud(plain.submission_id));
    expect(badSecret).toBeInstanceOf(AuthenticationError);

    const reader = client({ clientId: 'reader', clientSecret: 'reader-secret' });
    const denied = await caught(reader.createSubmission());
    expect(denied).toBeInstanceOf(PermissionError);
    expect(denied.endpoint).toBe('POST /v2/submission');

    const before = sandbox.stats().submissionsCreated;
    const invalid = await caught(c.createSubmission({ query_id: 'q'.repeat(1025) }));
    expect(invalid).toBeInstanceOf(ValidationError);
    expect(sandbox.stats().submissionsCreated).toBe(before);
  });
});

describe('resilience', () => {
  it('survives token expiry during a run', async () => {
    sandbox.configure({ tokenTtlSeconds: 1 });
    const c = client();
    const { submission_id: id } = await submitted(c);
    await ready(() => c.getFraud(id));
    const deadline = Date.now() + 3500;
    let calls = 0;
    while (Date.now() < deadline && calls < 200) {
      await c.getQuality(id);
      calls += 1;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(c.tokenRequests).toBeGreaterThanOrEqual(3);
  });

  it('recovers from a token the server forgot (401 → one refresh, one resend)', async () => {
    // A restarted server has forgotten every token it issued: the cached one is refused.
    const first = await startSandbox({ processing: { distribution: 'fixed', meanMs: 50 } });
    const port = Number(new URL(first.baseUrl).port);
    const events: CallEvent[] = [];
    const c = new DocumentAnalysisClient({
      baseUrl: first.baseUrl,
      clientId: 'sandbox-client',
      clientSecret: 'sandbox-secret',
      onCall: (e) => events.push(e),
    });
    await c.createSubmission();
    await first.close();
    const second = await startSandbox({ port });
    try {
      const created = await c.createSubmission({ query_id: 'after-restart' });
      expect(created.submission_id).toBeDefined();
      expect(c.tokenRequests).toBe(2);
      expect(events.filter((e) => e.endpoint === '/v2/submission').map((e) => e.status)).toEqual([
        200, 401, 200,
      ]);
      expect(second.stats().submissionsCreated).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('rides out a 429 storm: every call completes, the rate drops, then recovers', async () => {
    const c = client({ rateLimit: { ratePerSecond: 40, initial: 40 } });
    const { submission_id: id } = await submitted(c);
    await ready(() => c.getFraud(id));
    sandbox.configure({ faults: { storm429: { durationMs: 1500 } } });
    const rates: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        c.getQuality(id).then((r) => (rates.push(c.limiter.currentRate()), r)),
      ),
    );
    expect(results.every((r) => r.status === 'SUCCESS')).toBe(true);
    expect(sandbox.stats().rateLimited).toBeGreaterThan(0);
    expect(Math.min(...rates)).toBeLessThan(40);
    for (let i = 0; i < 200 && c.limiter.currentRate() < 40; i++) {
      await c.getQuality(id);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(c.limiter.currentRate()).toBe(40);
  });

  it.each(['seconds', 'http-date'] as const)(
    'honours Retry-After as %s under a rate limit',
    async (format) => {
      const c = client({ rateLimit: { ratePerSecond: 50 } });
      const { submission_id: id } = await submitted(c);
      await ready(() => c.getFraud(id));
      sandbox.configure({ rateLimit: { ratePerSecond: 10, burst: 2 }, retryAfterFormat: format });
      const limitedBefore = sandbox.stats().rateLimited;
      const events: CallEvent[] = [];
      const c2 = client({ rateLimit: { ratePerSecond: 50 }, onCall: (e) => events.push(e) });
      const results = await Promise.all(Array.from({ length: 12 }, () => c2.getQuality(id)));
      expect(results.every((r) => r.status === 'SUCCESS')).toBe(true);
      expect(sandbox.stats().rateLimited).toBeGreaterThan(limitedBefore);
      expect(events.some((e) => e.status === 429)).toBe(true);
      expect(events.some((e) => e.retried && e.status === 200)).toBe(true);
      expect(c2.limiter.currentRate()).toBeLessThan(50);
    },
  );

  it('gives a RateLimitError when the Retry-After is past the time budget', async () => {
    const c = client();
    const { submission_id: id } = await submitted(c);
    sandbox.configure({ faults: { storm429: { durationMs: 1000 } } });
    const stormEnds = Date.now() + 1000;
    const error = await caught(client({ retry: { maxTotalMs: 300 } }).getQuality(id));
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBeGreaterThan(0);
    // Setting storm429 back to null does not end a running storm; let it pass.
    await new Promise((r) => setTimeout(r, Math.max(0, stormEnds - Date.now())));
  });

  it('retries reads and creates through 5xx faults (transient failure), until the time budget', async () => {
    const c = client();
    const { submission_id: id } = await submitted(c);
    await ready(() => c.getFraud(id));
    sandbox.configure({ faults: { errorRate: 0.3 } });
    for (let i = 0; i < 15; i++) expect((await c.getQuality(id)).status).toBe('SUCCESS');
    expect(statusCount('GET /v2/submission/:id/quality 503')).toBeGreaterThan(0);

    sandbox.configure({ faults: { errorRate: 1 } });
    const events: CallEvent[] = [];
    const error = await caught(
      client({
        retry: { minDelayMs: 20, maxDelayMs: 100, maxTotalMs: 1500 },
        onCall: (e) => events.push(e),
      }).createSubmission({ query_id: 'transient failure' }),
    );
    expect(error).toBeInstanceOf(ServerError);
    expect(error.budgetSpent).toBe(true);
    const sent = events.filter((e) => e.endpoint === '/v2/submission');
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.every((e) => e.status === 503)).toBe(true);
    // Every try is counted, those that waited at the gate while the API was unavailable included.
    expect(error.attempts).toBeGreaterThanOrEqual(sent.length);
    sandbox.configure({ faults: { errorRate: 0 } });
  });

  it('resends a create whose connection dropped, and reads', async () => {
    // A sandbox of its own: clients of the tests before this one, left unavailable, probe the shared
    // one in the background, and their probes would be dropped and counted too.
    const own = await startSandbox({ seed: 7, clients: [WRITER] });
    try {
      const events: CallEvent[] = [];
      const c = client({
        baseUrl: own.baseUrl,
        retry: { minDelayMs: 10, maxDelayMs: 20, maxTotalMs: 400 },
        // No probe of its own while the API counts as unavailable: every call is one made below.
        health: { probeMinMs: 60_000, probeMaxMs: 60_000 },
        onCall: (e) => events.push(e),
      });
      const { submission_id: id } = await submitted(c);
      own.configure({ faults: { dropRate: 1 } });
      const dropped = own.stats().droppedConnections;
      const before = events.length;
      const create = await caught(c.createSubmission());
      expect(create).toBeInstanceOf(ConnectionError);
      expect((create as ConnectionError).requestSent).toBe(true);
      const creates = events.slice(before).filter((e) => e.endpoint === '/v2/submission').length;
      expect(creates).toBeGreaterThan(1);
      const read = await caught(c.getQuality(id));
      expect(read).toBeInstanceOf(ConnectionError);
      const after = events.slice(before);
      const reads = after.filter((e) => e.endpoint === '/v2/submission/{id}/quality').length;
      expect(reads).toBeGreaterThan(1);
      // Nothing else was sent, and every try reached the sandbox and had its connection dropped.
      expect(after).toHaveLength(creates + reads);
      expect(after.every((e) => e.status === undefined)).toBe(true);
      expect(own.stats().droppedConnections - dropped).toBe(creates + reads);
    } finally {
      await own.close();
    }
  });
});

describe('docstream analyze', () => {
  it('analyses a file and prints the results as JSON', async () => {
    const path = join(dir, 'cli.pdf');
    await writeFile(path, pdf);
    const chunks: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      chunks.push(String(chunk));
      return true;
    });
    const errors: string[] = [];
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      errors.push(String(chunk));
      return true;
    });
    process.exitCode = undefined;
    try {
      await buildProgram().parseAsync([
        'node',
        'docstream',
        'analyze',
        path,
        '--base-url',
        sandbox.baseUrl,
        '--decision',
        '--json',
      ]);
    } finally {
      write.mockRestore();
      stderr.mockRestore();
    }
    // On failure, show what the command said (its progress lines and the error go to stderr).
    expect({
      exitCode: process.exitCode ?? 0,
      error: errors.filter((e) => e.startsWith('docstream:')),
    }).toEqual({
      exitCode: 0,
      error: [],
    });
    const output = JSON.parse(chunks.join('')) as Record<string, { status?: string }>;
    expect(output.file).toBe('cli.pdf');
    expect(output.fraud?.status).toBe('SUCCESS');
    expect(output.decision?.status).toBe('SUCCESS');
  });
});
