import { deadLetterMatches, formatDeadLetterReport, type DeadLetterRecord } from './dead-letter-report.js';

const deadLetter = (
  offset: number,
  tenant: string | null,
  extra: Partial<DeadLetterRecord> = {},
): DeadLetterRecord => ({
  id: `documents.dlq/0/${offset}`,
  partition: 0,
  offset: String(offset),
  event_id: `evt-${offset}`,
  submission_id: null,
  stage: 'validate',
  error_code: 'unknown_tenant',
  message: 'tenant not in the directory',
  http_status: null,
  attempts: 1,
  failed_at: Date.UTC(2026, 10, 28, 12, 0, offset),
  source_topic: 'documents.arrived',
  source_partition: 0,
  source_offset: String(offset),
  attributes: {},
  tenant,
  has_copy: true,
  ...extra,
});

describe('deadLetterMatches: by tenant', () => {
  const deadLetters = [
    deadLetter(0, 'acme'),
    deadLetter(1, 'globex'),
    deadLetter(2, null),
    deadLetter(3, 'acme'),
  ];
  const offsets = (tenants: Array<string | null>) =>
    deadLetters.filter((l) => deadLetterMatches(l, { tenants })).map((l) => l.offset);

  it('selects the dead letters of the named tenants', () => {
    expect(offsets(['acme'])).toEqual(['0', '3']);
    expect(offsets(['acme', 'globex'])).toEqual(['0', '1', '3']);
  });

  it('selects those of no tenant by null, alone or with names', () => {
    expect(offsets([null])).toEqual(['2']);
    expect(offsets(['globex', null])).toEqual(['1', '2']);
  });

  it('selects all without a tenant filter, and combines with the other filters', () => {
    expect(deadLetters.filter((l) => deadLetterMatches(l, {}))).toHaveLength(4);
    expect(deadLetterMatches(deadLetter(0, 'acme'), { tenants: ['acme'], eventIds: ['evt-0'] })).toBe(true);
    expect(deadLetterMatches(deadLetter(0, 'acme'), { tenants: ['acme'], eventIds: ['evt-9'] })).toBe(false);
    expect(deadLetterMatches(deadLetter(0, 'acme'), { tenants: ['acme'], codes: ['api_503'] })).toBe(false);
  });
});

describe('formatDeadLetterReport: the tenant column', () => {
  it('prints each dead letter’s tenant, - for none', () => {
    const text = formatDeadLetterReport([deadLetter(0, 'acme'), deadLetter(1, null)], 2);
    const rows = text.slice(text.indexOf('dead letters:')).split('\n').slice(1);
    expect(rows[0]).toMatch(/^dead letter\s+failed at\s+stage\/code\s+tenant\s+event id/);
    expect(rows[1]).toMatch(/validate\/unknown_tenant\s+acme\s+evt-0/);
    expect(rows[2]).toMatch(/validate\/unknown_tenant\s+-\s+evt-1/);
  });
});
