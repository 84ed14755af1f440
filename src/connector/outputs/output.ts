/**
 * Where the workflow's outcomes go: result events (Avro through the registry, key = submission id,
 * headers event_id and traceparent) and dead letters. Each call resolves once Kafka acknowledged it.
 * State records have their own writer (`state/writer.ts`).
 */
import { isMessageTooLarge } from '../../kafka/errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES, messageSize } from '../../kafka/message-size.js';
import type { OutgoingMessage } from '../../kafka/producer.js';
import type { Logger } from '../../observability/logger.js';
import { fitDeadLetter } from '../../serde/dead-letter-fit.js';
import type { Registry } from '../../serde/registry.js';
import type { DeadLetterValue } from '../../serde/types.js';
import { retry } from '../../util/retry.js';
import { redactAttributes, redactSource } from './dead-letters.js';
import { classificationValue, deadLetterValue, decisionValue, fraudValue, qualityValue } from './mapping.js';
import type { OutputPort, ResultExtra } from './output-port.js';
import type { Awaitable, DeadLetter, DocumentIdentity } from '../types.js';

interface OutputTopics {
  fraud: string;
  quality: string;
  classification: string;
  decision: string;
  dlq: string;
}

/** How dead letters are made safe and small enough to write. */
export interface DeadLetterOptions {
  /** Fields removed from the dead letter's copy of the original value, besides the characteristics. */
  redactFields?: readonly string[];
  /** The dead-letter topic's message limit (the producer's, read from the broker at boot). */
  limitFor?: (topic: string) => number;
  logger?: Logger;
  /** A dead letter that could not be written even cut to its bare fields: it is logged and counted. */
  onUnwritable?: (deadLetter: DeadLetter) => void;
  /** The input topic: a dead letter about one of its records is written with that partition's state. */
  inputTopic?: string;
}

/**
 * How an output record is sent: with `inputPartition`, exactly-once writes it in that input
 * partition's transaction (`delivery-modes.ts`); `stateFollows` says the caller writes the state record
 * that makes it durable next, in the same transaction, so the send resolves once the record is in
 * the transaction (the state write resolves on the commit). At-least-once ignores both.
 */
export interface OutputSender {
  send(
    topic: string,
    message: OutgoingMessage,
    options?: { inputPartition?: number; stateFollows?: boolean },
  ): Promise<void>;
}

/** What a `KafkaOutput` writes through, and where. */
export interface KafkaOutputOptions {
  sender: OutputSender;
  /** Encodes each value with its topic's schema (Confluent wire format). */
  registry: Pick<Registry, 'encode'>;
  topics: OutputTopics;
  /** The clock of the results' `published_at` (default `Date.now`). */
  now?: () => number;
  deadLetters?: DeadLetterOptions;
}

export class KafkaOutput implements OutputPort {
  private readonly sender: OutputSender;
  private readonly registry: Pick<Registry, 'encode'>;
  private readonly topics: OutputTopics;
  private readonly now: () => number;
  private readonly dlq: DeadLetterOptions;

  constructor(options: KafkaOutputOptions) {
    this.sender = options.sender;
    this.registry = options.registry;
    this.topics = options.topics;
    this.now = options.now ?? Date.now;
    this.dlq = options.deadLetters ?? {};
  }

  async publishResult(
    kind: Awaitable,
    doc: DocumentIdentity,
    body: Record<string, unknown>,
    extra: ResultExtra = {},
  ) {
    const now = this.now();
    const value =
      kind === 'fraud'
        ? fraudValue(doc, body, extra, now)
        : kind === 'quality'
          ? qualityValue(doc, body, now)
          : kind === 'classification'
            ? classificationValue(doc, body, now)
            : decisionValue(doc, body, extra, now);
    const topic = this.topics[kind];
    const headers: Record<string, string> = { event_id: doc.event_id };
    if (doc.traceparent) headers.traceparent = doc.traceparent;
    const message = { key: doc.submission_id, value: this.registry.encode(topic, value), headers };
    // The state record saying it was published follows (`document-life.ts`).
    if (extra.inputPartition === undefined) await this.sender.send(topic, message);
    else await this.sender.send(topic, message, { inputPartition: extra.inputPartition, stateFollows: true });
  }

  /**
   * Writes a dead letter with its personal fields removed and cut to fit the topic, pointing at the
   * original record. Resolves once Kafka acknowledged it; a dead letter that cannot fit even without the
   * original bytes is logged and counted, and resolves too, so the partition moves on. Rejects only
   * when Kafka could not be reached (the record is retried). A dead letter that cannot be built (a value
   * no step of the redaction or the encoding expected) is written minimal instead: its pointer,
   * ids, stage, code and a short reason, so the record still ends.
   */
  async deadLetter(deadLetter: DeadLetter, options: { stateFollows?: boolean } = {}): Promise<void> {
    const progress = { sending: false };
    try {
      await this.writeDeadLetter(deadLetter, options, progress);
    } catch (err) {
      if (progress.sending) throw err;
      const minimal = minimalDeadLetter(deadLetter, err);
      this.dlq.logger?.error(
        {
          source: pointerOf(deadLetter),
          event_id: minimal.event_id,
          stage: deadLetter.stage,
          err: minimal.message,
        },
        'dead letter could not be built whole; writing a minimal one',
      );
      await this.writeDeadLetter(minimal, options, progress);
    }
  }

  private async writeDeadLetter(
    deadLetter: DeadLetter,
    options: { stateFollows?: boolean },
    progress: { sending: boolean },
  ): Promise<void> {
    const topic = this.topics.dlq;
    const inputPartition =
      deadLetter.source && deadLetter.source.topic === this.dlq.inputTopic
        ? deadLetter.source.partition
        : undefined;
    const route = inputPartition === undefined ? undefined : { inputPartition, ...options };
    const headers: Record<string, string> = {};
    if (deadLetter.event_id) headers.event_id = deadLetter.event_id;
    if (deadLetter.source?.traceparent) headers.traceparent = deadLetter.source.traceparent;
    const key = deadLetter.submission_id ?? deadLetter.event_id ?? null;
    const fields = this.dlq.redactFields ?? [];
    let safe: DeadLetter = { ...deadLetter, attributes: redactAttributes(deadLetter.attributes, fields) };
    if (deadLetter.source) {
      const { source, redaction } = redactSource(deadLetter.source, fields);
      if (redaction) {
        const pointer = `${source.topic}/${source.partition}@${source.offset}`;
        const what =
          redaction === 'fields_removed' ? 'personal fields removed' : 'withheld (may hold personal data)';
        safe = {
          ...safe,
          source,
          message: `${safe.message} [original value ${what}; the original is ${pointer}]`,
        };
      }
    }
    const value = deadLetterValue(safe, this.now());
    const message = (v: DeadLetterValue): OutgoingMessage => ({
      key,
      value: this.registry.encode(topic, v),
      headers,
    });
    let limit = this.dlq.limitFor?.(topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
    // A broker whose limit is below the one read at boot (changed since) refuses the dead letter without
    // saying its limit: halve the size until it is taken or the bare dead letter does not fit.
    const unfit = new Error('the bare dead letter does not fit');
    try {
      return await retry(
        async () => {
          const fitted = fitDeadLetter(value, limit, (v) => messageSize(message(v)));
          if (!fitted) throw unfit;
          const outgoing = message(fitted.deadLetter);
          try {
            progress.sending = true;
            if (route) await this.sender.send(topic, outgoing, route);
            else await this.sender.send(topic, outgoing);
          } catch (err) {
            if (isMessageTooLarge(err)) {
              progress.sending = false;
              limit = Math.floor(Math.min(limit, messageSize(outgoing)) / 2);
            }
            throw err;
          }
        },
        {
          attempts: 12,
          backoff: { initialMs: 0, maxMs: 0 },
          // Smaller at once: the next try is another dead letter, not the same one later.
          classify: (err) => (isMessageTooLarge(err) ? { retry: true, immediately: true } : { retry: false }),
        },
      );
    } catch (err) {
      if (err !== unfit && !isMessageTooLarge(err)) throw err;
    }
    this.dlq.logger?.error(
      {
        topic,
        source: pointerOf(deadLetter),
        event_id: deadLetter.event_id,
        stage: deadLetter.stage,
        error_code: deadLetter.error_code,
      },
      'dead letter too large to write even without the original record; skipped',
    );
    this.dlq.onUnwritable?.(deadLetter);
  }
}

function pointerOf(deadLetter: DeadLetter): string | null {
  const s = deadLetter.source;
  return s ? `${s.topic}/${s.partition}@${s.offset}` : null;
}

/** Longest part of the original reason a minimal dead letter keeps. */
const MINIMAL_REASON = 500;

/** The dead letter without the original bytes and attributes, saying why it could not be built whole. */
function minimalDeadLetter(deadLetter: DeadLetter, err: unknown): DeadLetter {
  const why = err instanceof Error ? `${err.name}: ${err.message}` : 'an unexpected value';
  const reason = typeof deadLetter.message === 'string' ? deadLetter.message.slice(0, MINIMAL_REASON) : '';
  const pointer = pointerOf(deadLetter);
  return {
    source: deadLetter.source ? { ...deadLetter.source, key: null, value: null } : null,
    event_id: typeof deadLetter.event_id === 'string' ? deadLetter.event_id : null,
    submission_id: typeof deadLetter.submission_id === 'string' ? deadLetter.submission_id : null,
    attributes: {},
    stage: deadLetter.stage,
    error_code: deadLetter.error_code,
    message: `${reason} [the dead letter could not be written whole (${why.slice(0, MINIMAL_REASON)})${
      pointer ? `; the original is ${pointer}` : ''
    }]`,
    http_status: deadLetter.http_status,
    attempts: deadLetter.attempts,
  };
}
