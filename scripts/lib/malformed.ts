/**
 * Input the connector must turn into dead letters without stopping: values that are not JSON, not
 * valid Avro, miss fields, break the spec's limits, or point at blobs that are missing or outside
 * the allowed roots. Each value is unique, so its dead letter can be matched back to it.
 */
import path from 'node:path';
import type { Arrival } from './harness.js';

export interface MalformedInput extends Arrival {
  /** What the input is, for the report. */
  kind: string;
  /** Whether the connector can read an event_id from it (else its dead letter is matched by value). */
  hasEventId: boolean;
}

const KINDS = [
  'not-json',
  'empty-value',
  'avro-unknown-schema',
  'missing-blob-field',
  'query-id-too-long',
  'bad-pipeline',
  'blob-not-found',
  'blob-outside-roots',
] as const;

export function malformedInputs(prefix: string, count: number, dir: string): MalformedInput[] {
  return Array.from({ length: count }, (_, i) => {
    const kind = KINDS[i % KINDS.length] as (typeof KINDS)[number];
    const eventId = `${prefix}-bad-${kind}-${i}`;
    const json = (v: Record<string, unknown>) => JSON.stringify({ event_id: eventId, ...v });
    const blob = { url: `file://${path.join(dir, 'doc-0.pdf')}` };
    switch (kind) {
      case 'not-json':
        return { kind, hasEventId: false, event_id: eventId, value: `{"event_id": "${eventId}" oops` };
      case 'empty-value':
        // Only one empty value can be told apart from another by its offset; one is enough.
        return i < KINDS.length
          ? { kind, hasEventId: false, event_id: eventId, value: '' }
          : { kind: 'not-json', hasEventId: false, event_id: eventId, value: `<${eventId}/>` };
      case 'avro-unknown-schema': {
        const header = Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0 + (i % 16)]);
        return {
          kind,
          hasEventId: false,
          event_id: eventId,
          value: Buffer.concat([header, Buffer.from(eventId)]),
        };
      }
      case 'missing-blob-field':
        return { kind, hasEventId: true, event_id: eventId, value: json({ query_id: eventId }) };
      case 'query-id-too-long':
        return {
          kind,
          hasEventId: true,
          event_id: eventId,
          value: json({ blob, query_id: 'q'.repeat(1025) }),
        };
      case 'bad-pipeline':
        return {
          kind,
          hasEventId: true,
          event_id: eventId,
          value: json({ blob, query_id: eventId, pipeline_configuration: 'EVERYTHING' }),
        };
      case 'blob-not-found':
        return {
          kind,
          hasEventId: true,
          event_id: eventId,
          value: json({ blob: { url: `file://${path.join(dir, `missing-${i}.pdf`)}` }, query_id: eventId }),
        };
      case 'blob-outside-roots':
        return {
          kind,
          hasEventId: true,
          event_id: eventId,
          value: json({ blob: { url: 'file:///etc/hostname' }, query_id: eventId }),
        };
    }
  });
}
