/**
 * Reads docstream's output topics (results and dead letters) from the beginning, each value decoded
 * through the registry. The one reader of the outputs for tests, scripts, the demo and benchmarks;
 * the connector itself never reads them.
 */
import type { Config } from '../../config/index.js';
import type { KafkaClient } from '../../kafka/client.js';
import type { IncomingMessage, KafkaConsumer } from '../../kafka/consumer.js';
import type { AvroDecoder } from '../../serde/input.js';
import { AWAITABLE, type Awaitable } from '../types.js';

type OutputKind = Awaitable | 'dlq';
export const OUTPUT_KINDS: readonly OutputKind[] = [...AWAITABLE, 'dlq'];

interface OutputRecord {
  kind: OutputKind;
  topic: string;
  partition: number;
  /** The record's offset: a reader that rejoins its group may see a record again. */
  offset: string;
  key: string | null;
  /** Header values as UTF-8 (`event_id`, `traceparent`). */
  headers: Record<string, string>;
  /** Kafka's timestamp, milliseconds since the epoch. */
  timestamp: number;
  /** The decoded Avro value; null when the reader was asked not to decode. */
  value: Record<string, unknown> | null;
}

interface OutputReaderOptions {
  kafka: KafkaClient;
  topics: Pick<Config['topics'], OutputKind>;
  groupId: string;
  /** Decodes values; without it, `value` is null (e.g. when only keys and timestamps matter). */
  decoder?: AvroDecoder;
  /** The kinds whose values are decoded (default: all read); the others have a null `value`. */
  decoded?: readonly OutputKind[];
  kinds?: readonly OutputKind[];
  maxWaitTimeMs?: number;
}

export class OutputReader {
  private consumer: KafkaConsumer | null = null;

  constructor(private readonly o: OutputReaderOptions) {}

  /** The topics read, in the order of `kinds`. */
  get topicNames(): string[] {
    return (this.o.kinds ?? OUTPUT_KINDS).map((k) => this.o.topics[k]);
  }

  /** Subscribes and hands every record, in order per partition, to `onRecord`. */
  async start(onRecord: (record: OutputRecord) => void | Promise<void>): Promise<void> {
    const kinds = this.o.kinds ?? OUTPUT_KINDS;
    const kindOf = new Map(kinds.map((k) => [this.o.topics[k], k]));
    const consumer = this.o.kafka.consumer({
      groupId: this.o.groupId,
      maxWaitTimeMs: this.o.maxWaitTimeMs ?? 100,
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe(this.topicNames, { fromBeginning: true });
    await consumer.run(async (batch) => {
      const kind = kindOf.get(batch.topic);
      if (!kind) return;
      for (const m of batch.messages) await onRecord(await this.read(kind, m));
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    this.consumer = null;
  }

  private async read(kind: OutputKind, m: IncomingMessage): Promise<OutputRecord> {
    const wanted = !this.o.decoded || this.o.decoded.includes(kind);
    const value =
      this.o.decoder && wanted && m.value
        ? ((await this.o.decoder.decode(m.value)) as Record<string, unknown>)
        : null;
    return {
      kind,
      topic: m.topic,
      partition: m.partition,
      offset: m.offset,
      key: m.key?.toString('utf8') ?? null,
      headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, v.toString('utf8')])),
      timestamp: Number(m.timestamp),
      value,
    };
  }
}
