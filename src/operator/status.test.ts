import { advertisedAddressOf, decodeClaim, encodeClaim } from '../kafka/sticky-assignor.js';
import { metricsOf, metricsUrl, promValue } from './status.js';

describe('status: finding and reading a member metrics endpoint', () => {
  it('carries the metrics address in the sticky claim without changing the claim', () => {
    const claim = { assignedAt: 5, assignment: { t: [0, 2] } };
    const data = encodeClaim(claim, '0.0.0.0:9464');
    expect(decodeClaim(data)).toEqual(claim);
    expect(advertisedAddressOf(data)).toBe('0.0.0.0:9464');
    // A member holding nothing still announces its address, and reads as holding nothing.
    expect(decodeClaim(encodeClaim(null, '127.0.0.1:1'))).toBeNull();
    expect(advertisedAddressOf(encodeClaim(null, '127.0.0.1:1'))).toBe('127.0.0.1:1');
    expect(encodeClaim(null)).toHaveLength(0);
    expect(advertisedAddressOf(encodeClaim(claim))).toBeNull();
  });

  it('replaces an address listening everywhere by the host the broker sees', () => {
    expect(metricsUrl('0.0.0.0:9464', '10.1.2.3')).toBe('http://10.1.2.3:9464/metrics');
    expect(metricsUrl('[::]:9464', 'fd00::5')).toBe('http://[fd00::5]:9464/metrics');
    expect(metricsUrl('127.0.0.1:9000', '10.1.2.3')).toBe('http://127.0.0.1:9000/metrics');
    expect(metricsUrl(null, '10.1.2.3')).toBeNull();
  });

  it('reads the gauges from a Prometheus exposition', () => {
    const text = [
      '# HELP docstream_documents_in_flight x',
      'docstream_documents_in_flight 12',
      'docstream_documents_in_flight_limit 500',
      'docstream_api_limiter_rate 7.5',
      'docstream_api_limiter_ceiling{instance="a"} 10',
      'docstream_ready 0',
    ].join('\n');
    expect(promValue(text, 'docstream_documents_in_flight')).toBe(12);
    expect(metricsOf('u', text)).toEqual({
      url: 'u',
      reachable: true,
      in_flight: 12,
      in_flight_limit: 500,
      limiter_rate_per_second: 7.5,
      api_share_per_second: 10,
      ready: false,
    });
  });
});
