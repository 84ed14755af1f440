import type { DeadLetterRecord } from './dead-letter-report.js';
import { formatInspection, forTenants, inspectIdProblem, traceIdOf, type Inspection } from './inspect.js';

describe('inspectIdProblem', () => {
  it('accepts event ids and submission ids', () => {
    expect(inspectIdProblem('evt-1')).toBeNull();
    expect(inspectIdProblem('sub_0123456789abcdefghijkl')).toBeNull();
    expect(inspectIdProblem('e'.repeat(256))).toBeNull();
  });

  it('refuses a 100 KB id with control characters, echoing it cut to 40 characters and escaped', () => {
    const id = `\u001b[2J\u0007${'x'.repeat(100 * 1024)}`;
    const problem = inspectIdProblem(id)!;
    expect(problem).toContain('102405 characters (at most 256)');
    expect(problem.length).toBeLessThan(200);
    // eslint-disable-next-line no-control-regex -- the point: no raw control character is echoed
    expect(problem).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(problem).toContain('"\\u001b[2J\\u0007xxx');
  });

  it('refuses control characters and lone surrogates in a short id, saying where', () => {
    expect(inspectIdProblem('a\u0007b')).toMatch(/^"a\\u0007b" is not an event id .*U\+0007 at position 1/);
    expect(inspectIdProblem('a\ud800')).toMatch(/lone surrogate/);
    expect(inspectIdProblem('')).toBe('the id is empty');
  });
});

const result = (
  kind: 'fraud' | 'quality',
  tenant: string | null,
  at: number,
): Inspection['results'][number] => ({
  kind,
  topic: `documents.${kind}`,
  partition: 0,
  offset: String(at),
  submission_id: 'sub-1',
  event_id: 'evt-1',
  published_at: at,
  tenant,
  summary: { status: 'SUCCESS' },
  trace_id: null,
});

const deadLetter = (tenant: string | null): DeadLetterRecord => ({
  id: 'documents.dlq/0/7',
  partition: 0,
  offset: '7',
  event_id: 'evt-1',
  submission_id: 'sub-0',
  stage: 'create',
  error_code: 'deadline',
  message: 'the deadline passed',
  http_status: null,
  attempts: 3,
  failed_at: 1,
  source_topic: 'documents.arrived',
  source_partition: 0,
  source_offset: '4',
  attributes: {},
  tenant,
  has_copy: true,
});

/** A finished document of acme, with a dead letter of an earlier try under the default credentials. */
const acmeDocument = (): Inspection => ({
  query: 'evt-1',
  matched: 'event_id',
  event_id: 'evt-1',
  submission_ids: ['sub-1', 'sub-0'],
  tenant: 'acme',
  input: { topic: 'documents.arrived', partition: 0, offset: '4', how: 'state record' },
  owner: null,
  group: { id: 'docstream', state: 'Empty' },
  state: {
    status: 'DONE',
    submission_id: 'sub-1',
    awaited: ['fraud', 'quality'],
    published: ['fraud', 'quality'],
    finished_at: 20,
    state_offset: '9',
  } as unknown as Inspection['state'],
  results: [result('fraud', 'acme', 10), result('quality', 'acme', 11)],
  deadLetters: [deadLetter(null)],
});

describe('forTenants: an inspection narrowed to selected tenants', () => {
  it("keeps the selected tenant's state and results, and counts what it leaves out", () => {
    const x = forTenants(acmeDocument(), ['acme']);
    expect(x.matched).toBe('event_id');
    expect(x.state).not.toBeNull();
    expect(x.results.map((r) => r.kind)).toEqual(['fraud', 'quality']);
    expect(x.deadLetters).toEqual([]);
    expect(x.hidden).toEqual({ state: false, results: 0, dead_letters: 1 });
  });

  it('keeps only the records of no tenant with null, the state going by the document’s tenant', () => {
    const x = forTenants(acmeDocument(), [null]);
    expect(x.matched).toBe('event_id');
    expect(x.state).toBeNull();
    expect(x.results).toEqual([]);
    expect(x.deadLetters.map((l) => l.tenant)).toEqual([null]);
    expect(x.hidden).toEqual({ state: true, results: 2, dead_letters: 0 });
    expect(formatInspection(x)).toMatch(/state:\s+not shown \(of another tenant\)/);
  });

  it('is no match, showing nothing of the document, when no record is of a selected tenant', () => {
    const x = forTenants(acmeDocument(), ['globex']);
    expect(x).toMatchObject({
      matched: null,
      event_id: null,
      submission_ids: [],
      tenant: null,
      input: null,
      state: null,
      results: [],
      deadLetters: [],
      hidden: { state: true, results: 2, dead_letters: 1 },
    });
    expect(formatInspection(x)).toBe(
      'evt-1: no document of the selected tenants with this event id or submission id in the topics (not shown, of other tenants: the state, 2 results, 1 dead letter)',
    );
  });

  it('selects a document known only by its id (state expired, nothing else) with null only', () => {
    const bare: Inspection = { ...acmeDocument(), tenant: null, state: null, results: [], deadLetters: [] };
    expect(forTenants(bare, [null]).matched).toBe('event_id');
    expect(forTenants(bare, ['acme']).matched).toBeNull();
  });

  it('leaves an inspection that matched nothing as it was', () => {
    const none: Inspection = {
      ...acmeDocument(),
      matched: null,
      tenant: null,
      state: null,
      results: [],
      deadLetters: [],
    };
    expect(forTenants(none, ['acme'])).toMatchObject({
      matched: null,
      hidden: { state: false, results: 0, dead_letters: 0 },
    });
    expect(formatInspection(forTenants(none, ['acme']))).toBe(
      'evt-1: no document of the selected tenants with this event id or submission id in the topics',
    );
  });
});

describe('formatInspection: tenants', () => {
  it("prints the document's tenant and each result's and dead letter's", () => {
    const text = formatInspection(acmeDocument());
    expect(text).toContain('  tenant:      acme\n');
    expect(text).toMatch(/fraud .*documents\.fraud\[0\]@10 {2}tenant=acme status=SUCCESS/);
    expect(text).toMatch(/create\/deadline {2}0@7 {2}tenant=- {2}the deadline passed/);
    expect(text).not.toContain('not shown');
    expect(formatInspection({ ...acmeDocument(), tenant: null })).toContain(
      '  tenant:      - (the default credentials)\n',
    );
  });
});

describe('inspect: the trace of each result', () => {
  it("reads the trace id of a result's traceparent", () => {
    const id = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(traceIdOf(`00-${id}-00f067aa0ba902b7-01`)).toBe(id);
    expect(traceIdOf(null)).toBeNull();
    expect(traceIdOf('not-a-traceparent')).toBeNull();
  });
});
