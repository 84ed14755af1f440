/**
 * One `documents.arrived` record: decoded and validated, then admitted by the engine; a record that
 * cannot be read becomes a dead letter (stage `decode` or `validate`).
 *
 * Size rule: the attributes are echoed into every output event, so an event whose attributes
 * exceed `maxAttributesBytes` is refused (`attributes_too_large`), and so is one whose first state
 * record would not fit the state topic (`event_too_large`). Both are decided before a
 * submission exists: admitted, such an event would fail its state write on every redelivery and
 * stall its partition.
 *
 * One admission per `event_id` at a time: a record whose event is being admitted (another copy in the
 * same batch, a producer's retry) waits for that admission, then reads the state it recorded and
 * follows the redelivery rules, as if it came later (`engine.ts`; docs/semantics.md, "The same event twice").
 */
import type { IncomingMessage } from '../../kafka/consumer.js';
import { isMessageTooLarge } from '../../kafka/errors.js';
import type { Logger } from '../../observability/logger.js';
import { KeyedSerial } from '../../util/keyed-serial.js';
import { decodeDocumentArrived, TENANT_NAME, type AvroDecoder } from '../../serde/input.js';
import { deadLetterOf, decodeStage, type DeadLetterSink } from '../outputs/dead-letters.js';
import type { AdmitOutcome, Existing } from './engine.js';
import type { AdmissionHooks } from './ports.js';
import type { Recorded } from '../state/store.js';
import type { ReplayMarker } from '../state/replay-marker.js';
import type { ArrivalEvent, DeadLetter, SourceRecord } from '../types.js';

interface ArrivalDeps {
  decoder: AvroDecoder;
  engine: {
    admit(
      source: SourceRecord,
      event: ArrivalEvent,
      existing: Existing,
      hooks?: AdmissionHooks,
    ): Promise<AdmitOutcome>;
  };
  /** The state of the record's partition (owned and restored before its records are admitted). */
  state: {
    get(partition: number, eventId: string): Recorded | undefined;
    marker(partition: number): ReplayMarker | undefined;
  };
  deadLetter: DeadLetterSink;
  logger: Logger;
  /** Size rule (see above); absent: no limit beyond the decoder's own. */
  limits?: ArrivalLimits;
  /** The record header that may name the event's tenant (`tenants.header`); absent: the field only. */
  tenantHeader?: string;
}

/**
 * The event's tenant from its field and its header (`tenants.header`): either one, or both when they
 * agree. Both present and different is a dead letter: neither is taken, since a document must never
 * go to another tenant's cell or under its token.
 */
export function tenantOf(
  message: IncomingMessage,
  event: ArrivalEvent,
  header: string | undefined,
): { event: ArrivalEvent } | { code: 'schema_invalid' | 'tenant_mismatch'; message: string } {
  const raw = header ? message.headers[header] : undefined;
  if (raw === undefined) return { event };
  const named = raw.toString('utf8');
  if (!TENANT_NAME.test(named))
    return {
      code: 'schema_invalid',
      message: `header ${header}: must be a tenant name (1..61 characters a-z and 0-9)`,
    };
  if (event.tenant !== undefined && event.tenant !== named)
    return {
      code: 'tenant_mismatch',
      message: `the event's tenant ${event.tenant} and its header ${header} (${named}) differ; it is not analysed for either`,
    };
  return { event: event.tenant === named ? event : { ...event, tenant: named } };
}

export interface ArrivalLimits {
  maxAttributesBytes: number;
  /** Why the event's first state record cannot be written (too large), or null when it fits. */
  stateProblem?(source: SourceRecord, event: ArrivalEvent): string | null;
}

/** The reason an event is too large to admit, or null. */
export function sizeProblem(
  limits: ArrivalLimits | undefined,
  source: SourceRecord,
  event: ArrivalEvent,
): { code: 'attributes_too_large' | 'event_too_large'; message: string } | null {
  if (!limits) return null;
  const attributes = Buffer.byteLength(JSON.stringify(event.attributes));
  if (attributes > limits.maxAttributesBytes) {
    return {
      code: 'attributes_too_large',
      message: `attributes: ${attributes} bytes exceed the limit of ${limits.maxAttributesBytes} (connector.maxAttributesBytes)`,
    };
  }
  const problem = limits.stateProblem?.(source, event) ?? null;
  return problem === null ? null : { code: 'event_too_large', message: problem };
}

/**
 * The dead letter of a record whose handling threw something no rule expected (a bug, or a
 * value its decoder could not take): it ends the record instead of stopping the loop. It carries the
 * record's pointer only, not its bytes, which may be what made the handling fail.
 */
export function unhandledDeadLetter(
  message: IncomingMessage,
  err: unknown,
  stage: 'decode' | 'feedback',
): DeadLetter {
  const text = err instanceof Error ? err.message : String(err);
  return deadLetterOf(
    { code: 'handler_error', message: `handling the record failed: ${text.slice(0, 500)}` },
    { source: { ...sourceOf(message), value: null }, event_id: null, submission_id: null, attributes: {} },
    { stage, fallbackCode: 'handler_error', attempts: 1 },
  );
}

/** A dead letter's tenant field for this event: only when it names one. */
export function tenantField(event: ArrivalEvent): { tenant?: string } {
  return event.tenant !== undefined ? { tenant: event.tenant } : {};
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

export function arrivalHandler(
  deps: ArrivalDeps,
): (message: IncomingMessage, hooks?: AdmissionHooks) => Promise<void> {
  const admissions = new KeyedSerial();
  return async (message, hooks) => {
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
    const tenant = tenantOf(message, decoded.event, deps.tenantHeader);
    if (!('event' in tenant)) {
      await deps.deadLetter(
        deadLetterOf(
          tenant,
          {
            source,
            event_id: decoded.event.event_id,
            submission_id: null,
            attributes: decoded.event.attributes,
          },
          { stage: 'validate', fallbackCode: tenant.code },
        ),
      );
      return;
    }
    const event = tenant.event;
    const tooLarge = sizeProblem(deps.limits, source, event);
    if (tooLarge) {
      await deps.deadLetter(
        deadLetterOf(
          tooLarge,
          // Attributes too large for an output are too large for the dead letter too.
          {
            source,
            event_id: event.event_id,
            submission_id: null,
            attributes: tooLarge.code === 'attributes_too_large' ? {} : event.attributes,
            ...tenantField(event),
          },
          { stage: 'validate', fallbackCode: tooLarge.code },
        ),
      );
      return;
    }
    let outcome: AdmitOutcome;
    try {
      // The state is read once the admissions of this event before it ended: it holds what they recorded.
      outcome = await admissions.run(event.event_id, () =>
        deps.engine.admit(
          source,
          event,
          {
            recorded: deps.state.get(message.partition, event.event_id),
            marker: deps.state.marker(message.partition),
          },
          hooks,
        ),
      );
    } catch (err) {
      // The size rule above measures the state before it exists; should a write still be refused as
      // too large, the same record would be refused at every redelivery: it ends in a dead letter instead.
      if (!isMessageTooLarge(err)) throw err;
      await deps.deadLetter(
        deadLetterOf(
          err,
          {
            source,
            event_id: event.event_id,
            submission_id: null,
            attributes: event.attributes,
            ...tenantField(event),
          },
          { stage: 'validate', fallbackCode: 'event_too_large' },
        ),
      );
      return;
    }
    deps.logger.debug(
      { event_id: event.event_id, outcome, partition: message.partition, offset: message.offset },
      'admitted',
    );
  };
}
