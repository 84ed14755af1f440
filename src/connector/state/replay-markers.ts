/**
 * The replay markers `docstream replay` writes into the state topic (see `ReplayMarker`): one per
 * input partition moved back, under a reserved key, so it is restored with its partition. A replay
 * takes the next generation after every marker already written.
 */
import { ChangelogReader } from '../../kafka/changelog.js';
import type { KafkaAdmin } from '../../kafka/admin.js';
import type { KafkaClient } from '../../kafka/client.js';
import type { KafkaProducer } from '../../kafka/producer.js';
import type { Logger } from '../../observability/logger.js';
import { StateRecordError } from './document-state.js';
import {
  MAX_GENERATION,
  REPLAY_KEY,
  decodeReplayMarker,
  encodeReplayMarker,
  type ReplayMarker,
} from './replay-marker.js';

const KEY = Buffer.from(REPLAY_KEY, 'utf8');

/** The latest marker of every partition of the state topic (reads the whole topic once). */
export async function readReplayMarkers(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  stateTopic: string,
  logger: Logger,
): Promise<Map<number, ReplayMarker>> {
  const markers = new Map<number, ReplayMarker>();
  const reader = new ChangelogReader(
    kafka,
    admin,
    stateTopic,
    {
      apply: (r) => {
        if (r.key[0] !== 0 || !r.key.equals(KEY)) return;
        if (r.value === null) markers.delete(r.partition);
        else markers.set(r.partition, decodeReplayMarker(r.value));
      },
      drop: () => undefined,
    },
    logger,
  );
  const partitions = (await admin.topicOffsets(stateTopic)).map((o) => o.partition);
  await reader.start();
  try {
    await reader.assign(partitions);
  } finally {
    await reader.stop();
  }
  return markers;
}

/** The generation of the next replay. */
export function nextGeneration(markers: Map<number, ReplayMarker>): number {
  const last = Math.max(0, ...[...markers.values()].map((m) => m.generation));
  if (last >= MAX_GENERATION)
    throw new StateRecordError(
      `replay generation ${MAX_GENERATION} reached; no further replay can be marked`,
    );
  return last + 1;
}

/** Writes a marker to each given partition (`untilOffsets`: the group's offsets before the reset). */
export async function writeReplayMarkers(
  producer: Pick<KafkaProducer, 'send'>,
  stateTopic: string,
  generation: number,
  untilOffsets: Map<number, string>,
  at: number,
): Promise<void> {
  await producer.send(
    stateTopic,
    [...untilOffsets].map(([partition, until]) => ({
      key: KEY,
      value: encodeReplayMarker({ generation, until_offset: until, at }),
      partition,
    })),
  );
}
