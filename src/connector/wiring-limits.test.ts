import { loadConfig } from '../config/index.js';
import { silentLogger } from '../observability/logger.js';
import { ConnectorMetrics } from '../observability/metrics.js';
import { sizeProblem } from './arrivals.js';
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

describe('the size rule as wired: the first state record measured against the producer limit', () => {
  const parts = buildParts(
    loadConfig({
      env: {},
      files: [],
      overrides: { kafka: { maxMessageBytes: 40_000 }, connector: { maxAttributesBytes: 100 } },
    }),
    silentLogger,
    new ConnectorMetrics({ defaultMetrics: false }),
    () => undefined,
  );
  afterAll(() => parts.blobs.close());

  it('admits an event whose state fits, refuses one whose state would not (event_too_large)', () => {
    const small = event(1000);
    expect(sizeProblem(parts.arrivalLimits, source(small), small)).toBeNull();
    const big = event(30_000);
    const problem = sizeProblem(parts.arrivalLimits, source(big), big);
    expect(problem?.code).toBe('event_too_large');
    expect(problem?.message).toMatch(
      /state record of \d+ bytes would exceed the state topic's limit of 40000/,
    );
  });

  it('refuses attributes over connector.maxAttributesBytes first', () => {
    const e = { ...event(0), attributes: { pad: 'x'.repeat(200) } };
    expect(sizeProblem(parts.arrivalLimits, source(e), e)?.code).toBe('attributes_too_large');
  });
});
