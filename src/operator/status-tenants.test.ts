import { formatStatus, metricsOf, type GroupStatus } from './status.js';

describe('status: the tenants of a member', () => {
  const text = [
    'docstream_documents_in_flight 5',
    'docstream_tenant_documents_in_flight{tenant="acme"} 3',
    'docstream_tenant_documents_in_flight{tenant="globex"} 0',
    'docstream_tenant_documents_waiting{tenant="acme"} 7',
    'docstream_tenant_documents_waiting{tenant="globex"} 0',
    'docstream_tenant_limiter_rate{tenant="acme"} 12.5',
    'docstream_tenant_limiter_rate{tenant="globex"} 40',
  ].join('\n');

  it('reads each tenant’s documents in flight and limiter rate', () => {
    expect(metricsOf('u', text).tenants).toEqual({
      acme: { in_flight: 3, waiting: 7, limiter_rate_per_second: 12.5 },
      globex: { in_flight: 0, waiting: 0, limiter_rate_per_second: 40 },
    });
    expect(metricsOf('u', 'docstream_documents_in_flight 5').tenants).toBeUndefined();
  });

  it('prints one line of tenants per member that has them', () => {
    const status: GroupStatus = {
      group: 'g',
      topic: 't',
      state: 'Stable',
      protocol: 'docstream-sticky',
      members: [
        {
          member_id: 'm-0123456789',
          client_id: 'c',
          host: 'h',
          partitions: [0],
          lag: 0,
          metrics: metricsOf('u', text),
        },
      ],
      partitions: [{ partition: 0, owner: 'm-0123456789', end: '1', committed: '1', lag: 0 }],
      unassigned: [],
      total_lag: 0,
    };
    expect(formatStatus(status)).toContain(
      'tenants of c 23456789: acme 3 in flight, 7 waiting for its share, limiter 12.5/s; globex 0 in flight, limiter 40.0/s',
    );
  });
});
