import { Readable } from 'node:stream';
import { createLogger } from '../../observability/logger.js';
import { PollScheduler } from '../../util/scheduler.js';
import type { IncomingMessage } from '../../kafka/consumer.js';
import { decodeState, encodeState } from '../state/record.js';
import type { DocumentStateV2, UnfinishedState } from '../state/document-state.js';
import { tenantOf } from './arrivals.js';
import { RevocationInProgressError } from './create-gate.js';
import { DocumentEngine, type EngineOptions } from './engine.js';
import type { ApiPort, InputPort, OutputPort, StatePort, TenantPorts } from './ports.js';
import type {
  ArrivalEvent,
  Awaitable,
  DeadLetter,
  DocumentIdentity,
  OpenedBlob,
  SourceRecord,
} from '../types.js';

/** One application's API: it records what it was asked, under its own name. */
class NamedApi implements ApiPort {
  constructor(
    readonly name: string,
    readonly calls: string[],
  ) {}
  private n = 0;
  /** While set, a create waits for it (the application at its rate limit). */
  limited: Promise<void> | null = null;
  async createSubmission() {
    if (this.limited) await this.limited;
    this.n += 1;
    this.calls.push(`${this.name}:create`);
    return {
      submission_id: `${this.name}-sub-${String(this.n).padStart(20, '0')}`,
      upload_url: 'http://u/x',
    };
  }
  async upload() {
    this.calls.push(`${this.name}:upload`);
  }
  async putCharacteristics() {
    this.calls.push(`${this.name}:characteristics`);
  }
  async getResult(kind: Awaitable, id: string) {
    this.calls.push(`${this.name}:get:${kind}:${id}`);
    return { status: 'SUCCESS' };
  }
  async getReportUrl() {
    return 'http://r';
  }
  async deleteSubmission() {}
}

class Out implements OutputPort, StatePort {
  results: Array<{ kind: Awaitable; doc: DocumentIdentity; source?: string | undefined }> = [];
  deadLetters: DeadLetter[] = [];
  states: DocumentStateV2[] = [];
  async publishResult(
    kind: Awaitable,
    doc: DocumentIdentity,
    _body: Record<string, unknown>,
    extra?: { source?: string },
  ) {
    this.results.push({ kind, doc, source: extra?.source });
  }
  async deadLetter(deadLetter: DeadLetter) {
    this.deadLetters.push(deadLetter);
  }
  async writeState(state: DocumentStateV2) {
    this.states.push(state);
  }
}

const blob: OpenedBlob = {
  open: async () => Readable.from([Buffer.from('%PDF-1.7')]),
  size: 8,
  contentType: 'application/pdf',
  sha256: undefined,
  cleanup: async () => undefined,
};

const source = (offset: string): SourceRecord => ({
  topic: 'documents.arrived',
  partition: 0,
  offset,
  key: null,
  value: Buffer.from('{}'),
  traceparent: null,
});

function event(id: string, tenant?: string): ArrivalEvent {
  return {
    event_id: id,
    blob: { url: 'file:///tmp/a.pdf', content_type: null, size_bytes: null, sha256: null },
    query_id: null,
    pipeline_configuration: 'QUALITY_ONLY',
    enable_decision: false,
    submission_characteristics: null,
    attributes: {},
    reprocess: false,
    ...(tenant ? { tenant } : {}),
  };
}

function setup(
  graceMs = 300,
  options: Partial<EngineOptions> = {},
  more: {
    /** The directory's `tenantId` of each tenant (none given: null). */
    tenantIds?: Record<string, string>;
    /** What the recent deliveries say of a submission (a resumed document looks). */
    delivered?: (submissionId: string) => Array<string | null> | undefined;
  } = {},
) {
  const calls: string[] = [];
  const defaultApi = new NamedApi('default', calls);
  const apps = new Map<string, NamedApi>([
    ['acme', new NamedApi('acme', calls)],
    ['globex', new NamedApi('globex', calls)],
  ]);
  const tenants: TenantPorts = {
    known: (t) => apps.has(t),
    api: (t) => apps.get(t),
    tenantId: (t) => more.tenantIds?.[t] ?? null,
  };
  const out = new Out();
  const inputs: InputPort = { recall: async (p) => p.map(() => null), read: async () => null };
  const logLines: string[] = [];
  const refused: string[] = [];
  const delivered = more.delivered;
  const engine = new DocumentEngine(
    {
      api: defaultApi,
      tenants,
      blobs: { resolve: async () => blob },
      out,
      states: out,
      inputs,
      scheduler: new PollScheduler(),
      logger: createLogger({ level: 'warn', stream: { write: (line: string) => logLines.push(line) } }),
      ...(delivered ? { deliveries: { tenantIdsOf: delivered } } : {}),
    },
    {
      pollInitialMs: 5,
      pollMaxMs: 20,
      deadlineMs: 60_000,
      decisionPolling: true,
      deleteAfterPublish: false,
      attachReportUrl: false,
      unknownTenantGraceMs: graceMs,
      ...options,
    },
    { onDeliveryRefused: (reason) => refused.push(reason) },
  );
  engine.assigned([0]);
  const warnings = () =>
    logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 40);
  return { engine, out, calls, apps, warnings, refused };
}

const waitFor = async (what: () => boolean, ms = 3000) => {
  const until = Date.now() + ms;
  while (!what()) {
    if (Date.now() > until) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('documents of tenants', () => {
  it("go to their tenant's application only, and carry the tenant in their results and state", async () => {
    const { engine, out, calls } = setup();
    await engine.admit(source('1'), event('e-acme', 'acme'));
    await engine.admit(source('2'), event('e-globex', 'globex'));
    await engine.admit(source('3'), event('e-none'));
    await waitFor(() => out.results.length === 3);
    // Every call of a document went to one application: the one of its tenant (or the default).
    for (const [id, app] of [
      ['e-acme', 'acme'],
      ['e-globex', 'globex'],
      ['e-none', 'default'],
    ] as const) {
      const sub = out.states.find((s) => s.event_id === id)!.submission_id;
      expect(sub.startsWith(`${app}-sub-`)).toBe(true);
      expect(calls.filter((c) => c.includes(sub)).every((c) => c.startsWith(`${app}:`))).toBe(true);
    }
    expect(out.results.map((r) => [r.doc.event_id, r.doc.tenant ?? null]).sort()).toEqual([
      ['e-acme', 'acme'],
      ['e-globex', 'globex'],
      ['e-none', null],
    ]);
    const created = out.states.filter((s) => s.status === 'CREATED') as UnfinishedState[];
    expect(created.map((s) => [s.event_id, s.tenant ?? null]).sort()).toEqual([
      ['e-acme', 'acme'],
      ['e-globex', 'globex'],
      ['e-none', null],
    ]);
    await engine.stop(1000);
  });

  it("resumes a document with its state's tenant, whatever a copy of its event says", async () => {
    const { engine, out, calls } = setup();
    const state: UnfinishedState = {
      v: 2,
      event_id: 'e-r',
      submission_id: 'acme-sub-00000000000000000042',
      status: 'UPLOADED',
      input: { topic: 'documents.arrived', partition: 0, offset: '9' },
      awaited: ['quality'],
      published: [],
      created_at: Date.now(),
      updated_at: Date.now(),
      tenant: 'acme',
    };
    await engine.admit(source('9'), event('e-r', 'globex'), {
      recorded: { unfinished: state },
      marker: undefined,
    });
    await waitFor(() => out.results.length === 1);
    expect(calls).toEqual(['acme:get:quality:acme-sub-00000000000000000042']);
    expect(out.results[0]!.doc.tenant).toBe('acme');
    await engine.stop(1000);
  });

  it('hold a new document of an unknown tenant for the grace period, then dead-letter it (unknown_tenant)', async () => {
    const { engine, out, calls } = setup(200);
    const started = Date.now();
    expect(await engine.admit(source('4'), event('e-x', 'initech'))).toBe('dead-lettered');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(calls).toEqual([]);
    expect(out.deadLetters.map((d) => [d.stage, d.error_code, d.tenant, d.source?.offset])).toEqual([
      ['validate', 'unknown_tenant', 'initech', '4'],
    ]);
    expect(out.deadLetters[0]!.message).toMatch(/tenant initech is not in the tenant directory/);
  });

  it('go on once the tenant is added during the grace period', async () => {
    const { engine, out, calls, apps } = setup(5000);
    const admitted = engine.admit(source('5'), event('e-late', 'initech'));
    await new Promise((r) => setTimeout(r, 100));
    apps.set('initech', new NamedApi('initech', calls));
    expect(await admitted).toBe('started');
    await waitFor(() => out.results.length === 1);
    expect(calls[0]).toBe('initech:create');
    expect(out.deadLetters).toEqual([]);
    await engine.stop(1000);
  });

  it('stop waiting for an unknown tenant once the partition is being revoked: the next owner has the record', async () => {
    const { engine, out } = setup(5000);
    const admitted = engine.admit(source('6'), event('e-rev', 'initech'));
    await new Promise((r) => setTimeout(r, 50));
    engine.holdCreates();
    await expect(admitted).rejects.toBeInstanceOf(RevocationInProgressError);
    expect(out.deadLetters).toEqual([]);
  });
});

describe("a decision webhook delivery and the document's tenant", () => {
  /** A new acme document awaiting its quality result and its decision, uploaded. */
  const started = async (engine: DocumentEngine, out: Out, id: string, tenant?: string) => {
    await engine.admit(source(id), { ...event(`e-${id}`, tenant), enable_decision: true });
    await waitFor(() => out.states.some((s) => s.event_id === `e-${id}` && s.status === 'UPLOADED'));
    return out.states.find((s) => s.event_id === `e-${id}`)!.submission_id;
  };
  const decisionFetches = (calls: string[], sub: string) =>
    calls.filter((c) => c.endsWith(`:get:decision:${sub}`));
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("is acted on when it names the tenant id the directory gives the document's tenant", async () => {
    const { engine, out, calls, warnings, refused } = setup(
      300,
      { decisionPolling: false },
      { tenantIds: { acme: 'acme-id' } },
    );
    const sub = await started(engine, out, '20', 'acme');
    engine.decisionReady(sub, 'acme-id');
    await waitFor(() => out.results.some((r) => r.kind === 'decision'));
    expect(decisionFetches(calls, sub)).toEqual([`acme:get:decision:${sub}`]);
    expect(out.results.find((r) => r.kind === 'decision')?.source).toBe('webhook');
    expect([warnings(), refused]).toEqual([[], []]);
    await engine.stop(1000);
  });

  it('is refused when it names another tenant id: no fetch for it, one warning and one count per delivery', async () => {
    const { engine, out, calls, warnings, refused } = setup(
      300,
      { decisionPolling: false },
      { tenantIds: { acme: 'acme-id' } },
    );
    const sub = await started(engine, out, '21', 'acme');
    // The receiving instance tells its engine at once and again once the record is written.
    engine.decisionReady(sub, 'globex-id');
    engine.decisionReady(sub, 'globex-id');
    await pause(200);
    expect(decisionFetches(calls, sub)).toEqual([]);
    expect(out.results.some((r) => r.kind === 'decision')).toBe(false);
    expect(refused).toEqual(['tenant_mismatch']);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({
      submission_id: sub,
      tenant: 'acme',
      tenant_id: 'acme-id',
      delivery_tenant_id: 'globex-id',
    });
    // A later delivery that names the document's tenant id is acted on.
    engine.decisionReady(sub, 'acme-id');
    await waitFor(() => out.results.some((r) => r.kind === 'decision'));
    expect(decisionFetches(calls, sub)).toEqual([`acme:get:decision:${sub}`]);
    expect(refused).toEqual(['tenant_mismatch']);
    await engine.stop(1000);
  });

  it('leaves a refused document to its polls: its decision comes from a poll (source poll)', async () => {
    const { engine, out, warnings } = setup(300, {}, { tenantIds: { acme: 'acme-id' } });
    const sub = await started(engine, out, '22', 'acme');
    engine.decisionReady(sub, 'globex-id');
    await waitFor(() => out.results.some((r) => r.kind === 'decision'));
    expect(out.results.find((r) => r.kind === 'decision')?.source).toBe('poll');
    expect(warnings()).toHaveLength(1);
    await engine.stop(1000);
  });

  it('dead-letters a refused document at its deadline with decision polling off, saying why', async () => {
    const { engine, out } = setup(
      300,
      { decisionPolling: false, deadlineMs: 1000 },
      { tenantIds: { acme: 'acme-id' } },
    );
    const sub = await started(engine, out, '26', 'acme');
    engine.decisionReady(sub, 'globex-id');
    await waitFor(() => out.deadLetters.length === 1, 5000);
    expect([out.deadLetters[0]!.stage, out.deadLetters[0]!.error_code]).toEqual(['decision', 'deadline']);
    expect(out.deadLetters[0]!.message).toMatch(/webhook deliveries named another tenant id/);
    await engine.stop(1000);
  });

  it('is acted on as before when either side has no tenant id, or the document has no tenant', async () => {
    const { engine, out, calls, warnings, refused } = setup(
      300,
      { decisionPolling: false },
      { tenantIds: { acme: 'acme-id' } },
    );
    // globex has no tenantId in the directory; the delivery to acme names none; e-24 has no tenant.
    const subs = [
      [await started(engine, out, '23', 'globex'), 'someone-id'],
      [await started(engine, out, '24'), 'someone-id'],
      [await started(engine, out, '25', 'acme'), null],
    ] as const;
    for (const [sub, tenantId] of subs) engine.decisionReady(sub, tenantId);
    await waitFor(() => out.results.filter((r) => r.kind === 'decision').length === 3);
    expect(subs.map(([sub]) => decisionFetches(calls, sub).length)).toEqual([1, 1, 1]);
    expect(out.results.filter((r) => r.kind === 'decision').every((r) => r.source === 'webhook')).toBe(true);
    expect([warnings(), refused]).toEqual([[], []]);
    await engine.stop(1000);
  });

  it("a resumed document takes a recorded delivery only when one names its tenant's id", async () => {
    const recorded: Record<string, Array<string | null>> = {
      'acme-sub-00000000000000000051': ['globex-id'],
      'acme-sub-00000000000000000052': ['globex-id', 'acme-id'],
    };
    const { engine, out, calls, warnings, refused } = setup(
      300,
      { decisionPolling: false },
      { tenantIds: { acme: 'acme-id' }, delivered: (sub) => recorded[sub] },
    );
    for (const [i, sub] of Object.keys(recorded).entries()) {
      const state: UnfinishedState = {
        v: 2,
        event_id: `e-resumed-${i}`,
        submission_id: sub,
        status: 'UPLOADED',
        input: { topic: 'documents.arrived', partition: 0, offset: String(50 + i) },
        awaited: ['decision'],
        published: [],
        created_at: Date.now(),
        updated_at: Date.now(),
        tenant: 'acme',
      };
      await engine.admit(source(String(50 + i)), event(`e-resumed-${i}`, 'acme'), {
        recorded: { unfinished: state },
        marker: undefined,
      });
    }
    await waitFor(() => out.results.length === 1);
    await pause(100);
    expect(out.results.map((r) => [r.doc.submission_id, r.source])).toEqual([
      ['acme-sub-00000000000000000052', 'webhook'],
    ]);
    expect(decisionFetches(calls, 'acme-sub-00000000000000000051')).toEqual([]);
    // Both resumed documents refused their globex-id delivery, each once.
    expect(refused).toEqual(['tenant_mismatch', 'tenant_mismatch']);
    expect(warnings().map((w) => w.submission_id)).toEqual(Object.keys(recorded));
    await engine.stop(1000);
  });
});

describe('the state record and the tenant', () => {
  it('keeps the tenant of an unfinished document; a record without one reads as before', () => {
    const base: UnfinishedState = {
      v: 2,
      event_id: 'e',
      submission_id: '0b6f3c4e-2d1a-4c5b-9e8f-7a6b5c4d3e2f',
      status: 'CREATED',
      input: { topic: 't', partition: 1, offset: '2' },
      awaited: ['fraud'],
      published: [],
      created_at: 1,
      updated_at: 2,
      blob: 7,
    };
    const withTenant = { ...base, tenant: 'acme' };
    expect(decodeState('e', encodeState(withTenant), 't')).toEqual(withTenant);
    expect(decodeState('e', encodeState(base), 't')).toEqual(base);
    expect(encodeState(withTenant).length - encodeState(base).length).toBe(2 + 4);
  });
});

describe('tenantOf: the field and the header', () => {
  const message = (headers: Record<string, string>) =>
    ({
      headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)])),
    }) as unknown as IncomingMessage;

  it('takes either one, or both when they agree', () => {
    expect(tenantOf(message({ 'x-tenant': 'acme' }), event('e'), 'x-tenant')).toEqual({
      event: event('e', 'acme'),
    });
    expect(tenantOf(message({}), event('e', 'acme'), 'x-tenant')).toEqual({ event: event('e', 'acme') });
    expect(tenantOf(message({ 'x-tenant': 'acme' }), event('e', 'acme'), 'x-tenant')).toEqual({
      event: event('e', 'acme'),
    });
  });

  it('ignores the header unless tenants.header names it', () => {
    expect(tenantOf(message({ 'x-tenant': 'acme' }), event('e'), undefined)).toEqual({ event: event('e') });
  });

  it('refuses both when they differ (tenant_mismatch), and a header that is no tenant name', () => {
    expect(tenantOf(message({ 'x-tenant': 'globex' }), event('e', 'acme'), 'x-tenant')).toMatchObject({
      code: 'tenant_mismatch',
    });
    expect(tenantOf(message({ 'x-tenant': 'Not A Name' }), event('e'), 'x-tenant')).toMatchObject({
      code: 'schema_invalid',
      message: expect.stringMatching(/header x-tenant/),
    });
  });
});

describe("each tenant's share of the slots", () => {
  const shares = { tenantShares: { maxInFlight: 4, share: 0.5, maxWaiting: 100 } };

  it('a tenant at its rate limit holds its share only; another tenant is admitted meanwhile', async () => {
    const { engine, apps, calls } = setup(300, shares);
    let unlimit!: () => void;
    apps.get('acme')!.limited = new Promise<void>((resolve) => (unlimit = resolve));
    const acme = Array.from({ length: 5 }, (_, i) => engine.admit(source(String(i)), event(`a${i}`, 'acme')));
    await waitFor(() => engine.uncounted === 3);
    expect(engine.waitingByTenant()).toEqual(new Map([['acme', 3]]));
    await expect(engine.admit(source('9'), event('g1', 'globex'))).resolves.toBe('started');
    expect(calls.filter((c) => c === 'acme:create')).toEqual([]);
    unlimit();
    await expect(Promise.all(acme)).resolves.toEqual(Array(5).fill('started'));
    expect(calls.filter((c) => c === 'acme:create')).toHaveLength(5);
    expect(engine.uncounted).toBe(0);
  });

  it('tells the consumer when an admission waits for its share (the batch goes on without it)', async () => {
    const { engine, apps } = setup(300, shares);
    apps.get('acme')!.limited = new Promise<void>(() => undefined);
    const waited: string[] = [];
    const hooks = (id: string) => ({ waiting: () => waited.push(id) });
    for (let i = 0; i < 3; i++)
      void engine.admit(source(String(i)), event(`a${i}`, 'acme'), undefined, hooks(`a${i}`));
    await waitFor(() => engine.uncounted === 1);
    expect(waited).toEqual(['a2']);
  });

  it("a revoke ends the waiting documents of its partitions; they are tried again by the partition's owner", async () => {
    const { engine, apps } = setup(300, shares);
    apps.get('acme')!.limited = new Promise<void>(() => undefined);
    for (let i = 0; i < 2; i++) void engine.admit(source(String(i)), event(`a${i}`, 'acme'));
    const waiting = engine.admit(source('2'), event('a2', 'acme'));
    await waitFor(() => engine.uncounted === 1);
    engine.revoke([0]);
    await expect(waiting).rejects.toBeInstanceOf(RevocationInProgressError);
    expect(engine.uncounted).toBe(0);
  });

  it('without tenant shares (no directory) every document is admitted as before', async () => {
    const { engine, apps } = setup(300);
    apps.get('acme')!.limited = new Promise<void>(() => undefined);
    for (let i = 0; i < 5; i++) void engine.admit(source(String(i)), event(`a${i}`, 'acme'));
    await new Promise((r) => setTimeout(r, 20));
    expect(engine.uncounted).toBe(0);
    expect(engine.waitingByTenant()).toEqual(new Map());
  });
});
