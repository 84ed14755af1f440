/**
 * Where the workflow's outcomes go: result events (Avro through the registry, key = submission id,
 * headers event_id and traceparent) and dead letters. Each call resolves once Kafka acknowledged it.
 * State records have their own writer (`state/writer.ts`).
 */
import type { CoalescingSender } from '../kafka/coalescer.js';
import type { Registry } from '../serde/registry.js';
import { classificationValue, deadLetterValue, decisionValue, fraudValue, qualityValue } from './mapping.js';
import type { Awaitable, DeadLetter, DocumentIdentity, OutputPort, ResultExtra } from './types.js';

export interface OutputTopics {
  fraud: string;
  quality: string;
  classification: string;
  decision: string;
  dlq: string;
}

export class KafkaOutput implements OutputPort {
  constructor(
    private readonly sender: Pick<CoalescingSender, 'send'>,
    private readonly registry: Pick<Registry, 'encode'>,
    private readonly topics: OutputTopics,
    private readonly now: () => number = Date.now,
  ) {}

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
    await this.sender.send(topic, {
      key: doc.submission_id,
      value: this.registry.encode(topic, value),
      headers,
    });
  }

  async deadLetter(letter: DeadLetter): Promise<void> {
    const headers: Record<string, string> = {};
    if (letter.event_id) headers.event_id = letter.event_id;
    if (letter.source?.traceparent) headers.traceparent = letter.source.traceparent;
    await this.sender.send(this.topics.dlq, {
      key: letter.submission_id ?? letter.event_id ?? null,
      value: this.registry.encode(this.topics.dlq, deadLetterValue(letter, this.now())),
      headers,
    });
  }
}
