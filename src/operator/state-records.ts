/**
 * The document records of the state topic, read once up to its current end without a running
 * connector: what `inspect` and `dlq redrive` learn a document's state from.
 */
import type { Config } from '../config/index.js';
import type { DocumentStateV2 } from '../connector/state/document-state.js';
import { decodeState } from '../connector/state/record.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import type { KafkaClient } from '../kafka/client.js';
import type { IncomingMessage } from '../kafka/consumer.js';
import { readTopicRange } from '../kafka/topic-range.js';
import type { Logger } from '../observability/logger.js';

/**
 * Hands each document record of the state topic to `visit` in offset order per partition, decoded
 * (`state` null: a tombstone). Replay markers (keys starting with byte 0) are skipped, and so are
 * records whose key `wanted` rejects (before decoding) and records that cannot be decoded (logged).
 */
export async function readStateRecords(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  topics: Pick<Config['topics'], 'state' | 'arrived'>,
  logger: Logger,
  visit: (eventId: string, state: DocumentStateV2 | null, record: IncomingMessage) => void,
  options: { partitions?: number[]; wanted?: (eventId: string) => boolean } = {},
): Promise<void> {
  await readTopicRange(kafka, admin, topics.state, logger, {
    ...(options.partitions ? { partitions: options.partitions } : {}),
    onRecords: (records) => {
      for (const r of records) {
        if (!r.key || r.key[0] === 0) continue;
        const eventId = r.key.toString('utf8');
        if (options.wanted && !options.wanted(eventId)) continue;
        let state: DocumentStateV2 | null = null;
        if (r.value !== null) {
          try {
            state = decodeState(eventId, r.value, topics.arrived);
          } catch (err) {
            logger.warn({ event_id: eventId, err: (err as Error).message }, 'unreadable state record');
            continue;
          }
        }
        visit(eventId, state, r);
      }
    },
  });
}
