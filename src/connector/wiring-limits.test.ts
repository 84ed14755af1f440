import { loadConfig } from '../config/index.js';
import { silentLogger } from '../observability/logger.js';
import { ConnectorMetrics } from '../observability/metrics.js';
import { sizeProblem } from './document/arrivals.js';
import type { ArrivalEvent, SourceRecord } from './types.js';
import { buildParts } from './wiring.js';

function event(characteristicsBytes: number): ArrivalEvent {
  return {
    event_id: 'evt-1',
    blob: { url: 'file:///tmp/a.pdf', content_type: null, size_bytes: null, sha256: null },
    query_id: 'evt-1',
    pipeline_configuration: 'FRAUD_ONLY',
    enable_decision: false,
    submission_characteristics:
      characteristicsBytes > 0 ? { customer_case_id: 'c'.repeat(characteristicsBytes) } : null,
    attributes: { tenant: 'acme' },
    reprocess: false,
  };
}

function source(e: ArrivalEvent): SourceRecord {
  return {
    topic: 'in',
    partition: 0,
    offset: '1',
    key: null,
    value: Buffer.from(JSON.stringify(e)),
    traceparent: null,
  };
}

describe('the size rule as wired: the first (largest) state record measured against the producer limit', () => {
  const parts = buildParts(
    loadConfig({
      env: {},
      files: [],
      overrides: { kafka: { maxMessageBytes: 40_000 }, connector: { maxAttributesBytes: 100 } },
    }),
    silentLogger,
    new ConnectorMetrics({ defaultMetrics: false }),
  );
  afterAll(() => parts.blobs.close());

  it('admits an event with large characteristics: the slim (v2) state record never holds them', () => {
    const big = event(30_000);
    expect(sizeProblem(parts.arrivalLimits, source(big), big)).toBeNull();
  });

  it('refuses an event whose first state record would not fit (event_too_large)', () => {
    // An event id near its 256-character limit against a state topic limit below the probe's URLs.
    const tight = buildParts(
      loadConfig({ env: {}, files: [], overrides: { kafka: { maxMessageBytes: 2_000 } } }),
      silentLogger,
      new ConnectorMetrics({ defaultMetrics: false }),
    );
    try {
      const e = { ...event(0), event_id: 'e'.repeat(256) };
      const problem = sizeProblem(tight.arrivalLimits, source(e), e);
      expect(problem?.code).toBe('event_too_large');
      expect(problem?.message).toMatch(
        /state record of \d+ bytes would exceed the state topic's limit of 2000/,
      );
    } finally {
      tight.blobs.close();
    }
  });

  it('refuses attributes over connector.maxAttributesBytes first', () => {
    const e = { ...event(0), attributes: { pad: 'x'.repeat(200) } };
    expect(sizeProblem(parts.arrivalLimits, source(e), e)?.code).toBe('attributes_too_large');
  });
});
