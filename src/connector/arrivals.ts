/**
 * One `documents.arrived` record: decoded and validated, then admitted by the engine; a record that
 * cannot be read becomes a dead letter (stage `decode` or `validate`).
 */
import type { IncomingMessage } from '../kafka/consumer.js';
import type { Logger } from '../observability/logger.js';
import { decodeDocumentArrived, type AvroDecoder } from '../serde/input.js';
import { deadLetterOf, decodeStage, type DeadLetterSink } from './dead-letters.js';
import type { AdmitOutcome, Existing } from './engine.js';
import type { Recorded } from './state/store.js';
import type { ReplayMarker } from './state/record.js';
import type { ArrivalEvent, SourceRecord } from './types.js';

export interface ArrivalDeps {
  decoder: AvroDecoder;
  engine: {
    admit(source: SourceRecord, event: ArrivalEvent, existing: Existing): Promise<AdmitOutcome>;
  };
  /** The state of the record's partition (owned and restored before its records are admitted). */
  state: {
    get(partition: number, eventId: string): Recorded | undefined;
    marker(partition: number): ReplayMarker | undefined;
  };
  deadLetter: DeadLetterSink;
  logger: Logger;
}

/** Where an input record came from, as dead letters and state carry it. */
export function sourceOf(message: IncomingMessage): SourceRecord {
  return {
    topic: message.topic,
    partition: message.partition,
    offset: message.offset,
    key: message.key,
    value: message.value,
    traceparent: message.headers.traceparent?.toString('utf8') ?? null,
  };
}

export function arrivalHandler(deps: ArrivalDeps): (message: IncomingMessage) => Promise<void> {
  return async (message) => {
    const source = sourceOf(message);
    const decoded = await decodeDocumentArrived(message.value, deps.decoder);
    if (!decoded.ok) {
      await deps.deadLetter(
        deadLetterOf(
          decoded,
          { source, event_id: decoded.event_id, submission_id: null, attributes: decoded.attributes },
          { stage: decodeStage(decoded.code), fallbackCode: decoded.code },
        ),
      );
      return;
    }
    const event = decoded.event;
    const existing = {
      recorded: deps.state.get(message.partition, event.event_id),
      marker: deps.state.marker(message.partition),
    };
    const outcome = await deps.engine.admit(source, event, existing);
    deps.logger.debug(
      { event_id: event.event_id, outcome, partition: message.partition, offset: message.offset },
      'admitted',
    );
  };
}
