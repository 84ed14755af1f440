/**
 * `docstream dlq redrive`: re-publishes the original input records that dead letters point to, to
 * the topic they came from, so they go through the connector's normal path again.
 *
 * Why the markers live in a compacted topic of their own (`topics.redrives`, key = the dead-letter id,
 * `<dlq topic>/<partition>/<offset>`): "never twice" must hold across runs, machines and operators,
 * so the record of what was sent lives in Kafka, not in a local file; a topic of its own keeps the
 * connector's state topic (restored by every instance on every assignment) free of records only
 * this command reads, and compaction keeps one marker per dead letter. Each dead letter's marker is written
 * `pending` (with the end offset of the target partition) before its record is sent and `sent`
 * after: a run cut between the two leaves `pending`, and the next run looks for the record (by its
 * header, from that offset on) before deciding to send it again, so a crash never sends twice.
 */
import type { Config } from '../config/index.js';
import type { DocumentStateV2 } from '../connector/state/document-state.js';
import { redrivesTopicRequest } from '../connector/topology.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import type { KafkaClient } from '../kafka/client.js';
import type { IncomingMessage } from '../kafka/consumer.js';
import type { OutgoingMessage } from '../kafka/producer.js';
import { RecordReader } from '../kafka/record-reader.js';
import { readTopicRange } from '../kafka/topic-range.js';
import type { Logger } from '../observability/logger.js';
import { jsonDepthProblem } from '../serde/json-bounds.js';
import type { Registry } from '../serde/registry.js';
import type { DeadLetterRecord } from './dead-letter-report.js';
import { readStateRecords } from './state-records.js';

export const REDRIVE_HEADER = 'docstream-redrive';

interface RedriveMarker {
  /** The dead letter's id. The field keeps its first name: markers already stored are read by it. */
  letter: string;
  status: 'pending' | 'sent';
  at: number;
  event_id: string | null;
  topic: string;
  partition: number;
  /** The partition's end offset before the record was sent: where a check for it starts. */
  from: string;
  /** The re-driven record's offset, once sent. */
  offset?: string;
  reprocess: boolean;
}

export type RedriveDecision =
  | { action: 'send'; reprocess: boolean }
  | { action: 'skip'; reason: 'already-redriven' | 'running' | 'duplicate'; detail: string }
  | { action: 'refuse'; reason: 'original-gone' | 'analysed' | 'not-an-input'; detail: string };

export interface RedrivePlanEntry {
  deadLetter: DeadLetterRecord;
  decision: RedriveDecision;
}

export interface RedriveResult {
  entries: RedrivePlanEntry[];
  sent: number;
  dryRun: boolean;
}

interface RedriveOptions {
  dryRun: boolean;
  reprocess: boolean;
  /** Told after each batch sent (for a progress line). */
  onProgress?: (sent: number, total: number) => void;
}

/** Wire format of Avro values: magic byte 0, then a 4-byte schema id. */
function schemaIdOf(value: Buffer): number | null {
  return value.length >= 5 && value[0] === 0 ? value.readUInt32BE(1) : null;
}

/** The value with `reprocess` set true: JSON re-serialised, Avro re-encoded with its writer schema. */
export async function withReprocess(value: Buffer, registry: Pick<Registry, 'writerType'>): Promise<Buffer> {
  const schemaId = schemaIdOf(value);
  if (schemaId === null) {
    const text = value.toString('utf8');
    // Too deep to write again without recursing that deep: the connector refuses it anyway
    // (value_too_deep), so it goes back as it was rather than stopping the whole re-drive.
    if (jsonDepthProblem(text) !== null) return value;
    const event = JSON.parse(text) as Record<string, unknown>;
    if (typeof event !== 'object' || event === null || Array.isArray(event))
      throw new Error('the original value is not a JSON object');
    return Buffer.from(JSON.stringify({ ...event, reprocess: true }));
  }
  const type = await registry.writerType(schemaId);
  const decoded = type.fromBuffer(value.subarray(5)) as Record<string, unknown>;
  if (!('reprocess' in decoded)) throw new Error(`writer schema ${schemaId} has no reprocess field`);
  decoded.reprocess = true;
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, type.toBuffer(decoded)]);
}

async function readMarkers(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  topic: string,
  logger: Logger,
): Promise<Map<string, RedriveMarker>> {
  const markers = new Map<string, RedriveMarker>();
  for (const r of await readTopicRange(kafka, admin, topic, logger)) {
    if (!r.key) continue;
    const key = r.key.toString('utf8');
    if (r.value === null) markers.delete(key);
    else {
      try {
        markers.set(key, JSON.parse(r.value.toString('utf8')) as RedriveMarker);
      } catch {
        logger.warn({ key }, 'unreadable redrive marker ignored');
      }
    }
  }
  return markers;
}

/** The latest state of each of `eventIds` in the given state partitions (tombstones: none). */
async function readStates(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  topics: Pick<Config['topics'], 'state' | 'arrived'>,
  partitions: number[],
  eventIds: Set<string>,
  logger: Logger,
): Promise<Map<string, DocumentStateV2>> {
  const states = new Map<string, DocumentStateV2>();
  if (eventIds.size === 0 || !(await admin.listTopics()).includes(topics.state)) return states;
  await readStateRecords(
    kafka,
    admin,
    topics,
    logger,
    (eventId, state) => {
      if (state === null) states.delete(eventId);
      else states.set(eventId, state);
    },
    { partitions, wanted: (eventId) => eventIds.has(eventId) },
  );
  return states;
}

/** Whether a record carrying the dead letter's redrive header lies in the marker's partition after `from`. */
async function alreadySent(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  marker: RedriveMarker,
  logger: Logger,
): Promise<IncomingMessage | null> {
  const records = await readTopicRange(kafka, admin, marker.topic, logger, {
    partitions: [marker.partition],
    from: new Map([[marker.partition, marker.from]]),
  });
  return records.find((r) => r.headers[REDRIVE_HEADER]?.toString('utf8') === marker.letter) ?? null;
}

/**
 * What is sent, per selected dead letter:
 * - the original record, read by its pointer (source topic, partition, offset), with its key, value
 *   and headers, to the same partition (the state topic is co-partitioned with the input: the
 *   document's state, if any, lies in that partition), plus a `docstream-redrive` header naming
 *   the dead letter. A dead letter whose original is gone (retention) is refused and named;
 * - nothing for a document the state topic shows as finished (DONE: analysed, results published;
 *   FAILED: it has a submission and its dead letter stands; the connector would skip it anyway),
 *   unless `reprocess` is asked for: the event is then re-sent with `reprocess: true`, a new
 *   submission. A document still running (CREATED/UPLOADED) is never re-sent.
 */
export async function redrive(
  deadLetters: readonly DeadLetterRecord[],
  deps: { kafka: KafkaClient; admin: KafkaAdmin; registry: Registry; config: Config; logger: Logger },
  options: RedriveOptions,
): Promise<RedriveResult> {
  const { kafka, admin, registry, config, logger } = deps;
  const t = config.topics;
  const inputs = new Set([t.arrived, t.feedback]);
  if (!options.dryRun) {
    await admin.ensureTopics([redrivesTopicRequest(t)]);
  }
  const markers = (await admin.listTopics()).includes(t.redrives)
    ? await readMarkers(kafka, admin, t.redrives, logger)
    : new Map<string, RedriveMarker>();

  // A run cut between a pending marker and its sent marker: look for the record before resending.
  const producer = kafka.producer();
  await producer.connect();
  try {
    for (const deadLetter of deadLetters) {
      const marker = markers.get(deadLetter.id);
      if (marker?.status !== 'pending') continue;
      const found = await alreadySent(kafka, admin, marker, logger);
      if (found && !options.dryRun) {
        const sent: RedriveMarker = { ...marker, status: 'sent', offset: found.offset };
        await producer.send(t.redrives, [{ key: deadLetter.id, value: JSON.stringify(sent) }]);
        markers.set(deadLetter.id, sent);
      } else if (found) markers.set(deadLetter.id, { ...marker, status: 'sent', offset: found.offset });
      else markers.delete(deadLetter.id);
    }

    // The originals, by pointer, per source topic.
    const originals = new Map<string, IncomingMessage | null>();
    for (const topic of inputs) {
      const wanted = deadLetters.filter((l) => l.source_topic === topic && !markers.has(l.id));
      if (wanted.length === 0) continue;
      const reader = new RecordReader(kafka, admin, topic, logger, { readTimeoutMs: 30_000 });
      await reader.start();
      try {
        const read = await reader.readMany(
          wanted.map((l) => ({ partition: l.source_partition, offset: l.source_offset })),
        );
        wanted.forEach((l, i) => originals.set(l.id, read[i] ?? null));
      } finally {
        await reader.stop();
      }
    }

    const arrivals = deadLetters.filter((l) => l.source_topic === t.arrived && l.event_id !== null);
    const states = await readStates(
      kafka,
      admin,
      t,
      [...new Set(arrivals.map((l) => l.source_partition))],
      new Set(arrivals.map((l) => l.event_id!)),
      logger,
    );

    // One dead letter per event is re-sent: the latest (the others would be its duplicates).
    const latestOfEvent = new Map<string, DeadLetterRecord>();
    for (const l of deadLetters) {
      if (l.event_id === null || l.source_topic !== t.arrived) continue;
      const seen = latestOfEvent.get(l.event_id);
      if (!seen || l.failed_at >= seen.failed_at) latestOfEvent.set(l.event_id, l);
    }

    const entries: RedrivePlanEntry[] = deadLetters.map((deadLetter) => ({
      deadLetter,
      decision: decide(
        deadLetter,
        markers.get(deadLetter.id),
        originals,
        states,
        latestOfEvent,
        inputs,
        options,
      ),
    }));
    const toSend = entries.filter((e) => e.decision.action === 'send');
    if (options.dryRun || toSend.length === 0) return { entries, sent: 0, dryRun: options.dryRun };

    const ends = new Map<string, string>();
    for (const topic of new Set(toSend.map((e) => e.deadLetter.source_topic))) {
      for (const o of await admin.topicOffsets(topic)) ends.set(`${topic}/${o.partition}`, o.high);
    }
    let sent = 0;
    const BATCH = 100;
    for (let i = 0; i < toSend.length; i += BATCH) {
      const batch = toSend.slice(i, i + BATCH);
      const pending = batch.map(({ deadLetter, decision }) => ({
        letter: deadLetter.id,
        status: 'pending' as const,
        at: Date.now(),
        event_id: deadLetter.event_id,
        topic: deadLetter.source_topic,
        partition: deadLetter.source_partition,
        from: ends.get(`${deadLetter.source_topic}/${deadLetter.source_partition}`) ?? '0',
        reprocess: decision.action === 'send' && decision.reprocess,
      }));
      await producer.send(
        t.redrives,
        pending.map((m) => ({ key: m.letter, value: JSON.stringify(m) })),
      );
      const byTopic = new Map<string, OutgoingMessage[]>();
      for (const { deadLetter, decision } of batch) {
        const original = originals.get(deadLetter.id)!;
        const reprocess = decision.action === 'send' && decision.reprocess;
        const messages = byTopic.get(deadLetter.source_topic) ?? [];
        byTopic.set(deadLetter.source_topic, messages);
        messages.push({
          key: original.key,
          value: reprocess && original.value ? await withReprocess(original.value, registry) : original.value,
          headers: { ...original.headers, [REDRIVE_HEADER]: deadLetter.id },
          partition: deadLetter.source_partition,
        });
      }
      await producer.sendBatch([...byTopic].map(([topic, msgs]) => ({ topic, messages: msgs })));
      await producer.send(
        t.redrives,
        pending.map((m) => ({
          key: m.letter,
          value: JSON.stringify({ ...m, status: 'sent', at: Date.now() }),
        })),
      );
      sent += batch.length;
      options.onProgress?.(sent, toSend.length);
    }
    return { entries, sent, dryRun: false };
  } finally {
    await producer.disconnect().catch(() => undefined);
  }
}

function decide(
  deadLetter: DeadLetterRecord,
  marker: RedriveMarker | undefined,
  originals: Map<string, IncomingMessage | null>,
  states: Map<string, DocumentStateV2>,
  latestOfEvent: Map<string, DeadLetterRecord>,
  inputs: Set<string>,
  options: RedriveOptions,
): RedriveDecision {
  if (marker)
    return {
      action: 'skip',
      reason: 'already-redriven',
      detail: `re-driven ${new Date(marker.at).toISOString()} to ${marker.topic}[${marker.partition}]${marker.offset !== undefined ? `@${marker.offset}` : ''}`,
    };
  if (!inputs.has(deadLetter.source_topic))
    return {
      action: 'refuse',
      reason: 'not-an-input',
      detail: `its original is on ${deadLetter.source_topic}, not an input topic of this connector`,
    };
  const original = originals.get(deadLetter.id);
  if (!original)
    return {
      action: 'refuse',
      reason: 'original-gone',
      detail: `its original ${deadLetter.source_topic}[${deadLetter.source_partition}]@${deadLetter.source_offset} is no longer in the topic (retention)`,
    };
  if (
    deadLetter.event_id !== null &&
    latestOfEvent.get(deadLetter.event_id) !== deadLetter &&
    latestOfEvent.has(deadLetter.event_id)
  )
    return {
      action: 'skip',
      reason: 'duplicate',
      detail: `a later dead letter of event ${deadLetter.event_id} (${latestOfEvent.get(deadLetter.event_id)!.id}) is the one re-driven`,
    };
  const state = deadLetter.event_id !== null ? states.get(deadLetter.event_id) : undefined;
  if (state && (state.status === 'CREATED' || state.status === 'UPLOADED'))
    return {
      action: 'skip',
      reason: 'running',
      detail: `document ${deadLetter.event_id} is in progress (${state.status}, submission ${state.submission_id})`,
    };
  if (state && !options.reprocess)
    return {
      action: 'refuse',
      reason: 'analysed',
      detail:
        state.status === 'DONE'
          ? `document ${deadLetter.event_id} was analysed since (DONE, submission ${state.submission_id}, published ${state.published.join(',') || 'nothing'}); --reprocess submits it again`
          : `document ${deadLetter.event_id} has a submission (FAILED, ${state.submission_id}); --reprocess submits it again`,
    };
  // reprocess only where the connector would otherwise skip the event: a document with a state.
  return { action: 'send', reprocess: options.reprocess && state !== undefined };
}
