import { CallRecord, type CallEntry } from './call-record.js';

function entry(n: number, over: Partial<CallEntry> = {}): CallEntry {
  return {
    at: new Date(n).toISOString(),
    cell: 'eu-1',
    tenant_id: 'acme',
    client_id: 'acme-app',
    method: 'GET',
    route: '/v2/submission/:id/fraud',
    status: 200,
    submission_id: `s${n}`,
    ...over,
  };
}

describe('CallRecord', () => {
  test('keeps the newest entries up to its capacity, oldest first, and counts what it dropped', () => {
    const record = new CallRecord(() => 3);
    for (let n = 1; n <= 5; n++) record.add(entry(n));
    const list = record.list();
    expect(list.items.map((c) => c.submission_id)).toEqual(['s3', 's4', 's5']);
    expect(list.count).toBe(3);
    expect(list.dropped).toBe(2);
  });

  test('filters by cell, tenant, client and submission', () => {
    const record = new CallRecord(() => 10);
    record.add(entry(1));
    record.add(entry(2, { cell: 'us-1', tenant_id: 'initech', client_id: 'initech-app' }));
    record.add(entry(3, { tenant_id: null, client_id: null, status: 401 }));
    expect(record.list({ cell: 'us-1' }).items.map((c) => c.submission_id)).toEqual(['s2']);
    expect(record.list({ tenantId: 'acme' }).items.map((c) => c.submission_id)).toEqual(['s1']);
    expect(record.list({ clientId: 'initech-app' }).count).toBe(1);
    expect(record.list({ submissionId: 's3' }).items[0]?.status).toBe(401);
    expect(record.list({ cell: 'eu-1', tenantId: 'initech' }).count).toBe(0);
  });

  test('a capacity lowered while running keeps the newest; 0 keeps none; reset empties it', () => {
    let capacity = 4;
    const record = new CallRecord(() => capacity);
    for (let n = 1; n <= 6; n++) record.add(entry(n));
    capacity = 2;
    record.add(entry(7));
    expect(record.list().items.map((c) => c.submission_id)).toEqual(['s6', 's7']);
    expect(record.list().dropped).toBe(5);
    capacity = 0;
    record.add(entry(8));
    expect(record.list().dropped).toBe(6);
    record.reset();
    expect(record.list()).toEqual({ count: 0, dropped: 0, items: [] });
  });

  test('the entries handed out are copies', () => {
    const record = new CallRecord(() => 2);
    record.add(entry(1));
    const first = record.list().items[0] as CallEntry;
    first.cell = 'changed';
    expect(record.list().items[0]?.cell).toBe('eu-1');
  });
});
