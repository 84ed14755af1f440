/**
 * The dead letters of `topics.dlq`, read from the topic and decoded through the registry: the
 * filters `docstream dlq` selects them by (tenant included), and the report of counts by reason.
 */
import type { KafkaAdmin } from '../kafka/admin.js';
import type { KafkaClient } from '../kafka/client.js';
import { readTopicRange } from '../kafka/topic-range.js';
import type { Logger } from '../observability/logger.js';
import type { AvroDecoder } from '../serde/input.js';
import { NO_TENANT, tenantSelected, type TenantSelection } from './tenant-filter.js';

/** One dead letter with where it lies in the dead-letter topic. */
export interface DeadLetterRecord {
  /** `<dlq topic>/<partition>/<offset>`: unique, and stable across runs (the redrive marker's key). */
  id: string;
  partition: number;
  offset: string;
  event_id: string | null;
  submission_id: string | null;
  stage: string;
  error_code: string;
  message: string;
  http_status: number | null;
  attempts: number;
  failed_at: number;
  source_topic: string;
  source_partition: number;
  source_offset: string;
  attributes: Record<string, string>;
  /** The document's tenant; null for the default credentials, unknown, or a dead letter written before tenants. */
  tenant: string | null;
  /** Whether the dead letter kept a copy of the original value (pointers are what redrive uses). */
  has_copy: boolean;
}

export interface DeadLetterFilter {
  stages?: string[];
  codes?: string[];
  eventIds?: string[];
  /** Dead letters of these tenants (null: of no tenant). */
  tenants?: TenantSelection;
  /** failed_at at or after (milliseconds since the epoch). */
  since?: number;
  /** failed_at before. */
  until?: number;
}

export function deadLetterMatches(deadLetter: DeadLetterRecord, filter: DeadLetterFilter): boolean {
  if (filter.stages?.length && !filter.stages.includes(deadLetter.stage)) return false;
  if (filter.codes?.length && !filter.codes.includes(deadLetter.error_code)) return false;
  if (
    filter.eventIds?.length &&
    (deadLetter.event_id === null || !filter.eventIds.includes(deadLetter.event_id))
  )
    return false;
  if (!tenantSelected(deadLetter.tenant, filter.tenants)) return false;
  if (filter.since !== undefined && deadLetter.failed_at < filter.since) return false;
  if (filter.until !== undefined && deadLetter.failed_at >= filter.until) return false;
  return true;
}

export interface ReasonCount {
  stage: string;
  error_code: string;
  count: number;
  first: number;
  last: number;
}

/** Dead letters counted by (stage, code), the most frequent first. */
export function countByReason(deadLetters: readonly DeadLetterRecord[]): ReasonCount[] {
  const by = new Map<string, ReasonCount>();
  for (const l of deadLetters) {
    const key = `${l.stage}\u0000${l.error_code}`;
    const entry = by.get(key);
    if (entry) {
      entry.count += 1;
      entry.first = Math.min(entry.first, l.failed_at);
      entry.last = Math.max(entry.last, l.failed_at);
    } else
      by.set(key, {
        stage: l.stage,
        error_code: l.error_code,
        count: 1,
        first: l.failed_at,
        last: l.failed_at,
      });
  }
  return [...by.values()].sort(
    (a, b) => b.count - a.count || a.stage.localeCompare(b.stage) || a.error_code.localeCompare(b.error_code),
  );
}

function toDeadLetterRecord(
  topic: string,
  partition: number,
  offset: string,
  v: Record<string, unknown>,
): DeadLetterRecord {
  const str = (x: unknown) => (x === null || x === undefined ? null : String(x));
  return {
    id: `${topic}/${partition}/${offset}`,
    partition,
    offset,
    event_id: str(v.event_id),
    submission_id: str(v.submission_id),
    stage: String(v.stage),
    error_code: String(v.error_code),
    message: String(v.message),
    http_status: v.http_status === null || v.http_status === undefined ? null : Number(v.http_status),
    attempts: Number(v.attempts ?? 1),
    failed_at: Number(v.failed_at),
    source_topic: String(v.source_topic),
    source_partition: Number(v.source_partition),
    source_offset: String(v.source_offset),
    attributes: (v.attributes as Record<string, string> | undefined) ?? {},
    tenant: str(v.tenant),
    has_copy: v.value !== null && v.value !== undefined,
  };
}

/**
 * Every dead letter of the dead-letter topic up to its current end, in (partition, offset) order. A
 * record that is not a readable dead letter is counted in `unreadable`, not thrown.
 */
export async function readDeadLetters(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  decoder: AvroDecoder,
  topic: string,
  logger: Logger,
): Promise<{ deadLetters: DeadLetterRecord[]; unreadable: number }> {
  const topics = await admin.listTopics();
  if (!topics.includes(topic)) return { deadLetters: [], unreadable: 0 };
  const records = await readTopicRange(kafka, admin, topic, logger);
  const deadLetters: DeadLetterRecord[] = [];
  let unreadable = 0;
  for (const r of records) {
    if (!r.value) {
      unreadable += 1;
      continue;
    }
    try {
      const value = (await decoder.decode(r.value)) as Record<string, unknown>;
      deadLetters.push(toDeadLetterRecord(topic, r.partition, r.offset, value));
    } catch (err) {
      logger.warn(
        { partition: r.partition, offset: r.offset, err: (err as Error).message },
        'unreadable dead letter',
      );
      unreadable += 1;
    }
  }
  deadLetters.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  return { deadLetters, unreadable };
}

/** A table of rows, columns padded to their widest cell (the first row is the header). */
export function table(rows: string[][], rightAligned: number[] = []): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => (rightAligned.includes(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The report `docstream dlq list` prints: counts by reason, then one line per dead letter. */
export function formatDeadLetterReport(
  deadLetters: readonly DeadLetterRecord[],
  total: number,
  showDeadLetters = true,
): string {
  const lines: string[] = [];
  lines.push(`${deadLetters.length} of ${total} dead letters match`);
  if (deadLetters.length === 0) return lines.join('\n');
  lines.push('', 'by reason:');
  lines.push(
    table(
      [
        ['count', 'stage', 'code', 'first', 'last'],
        ...countByReason(deadLetters).map((c) => [
          String(c.count),
          c.stage,
          c.error_code,
          iso(c.first),
          iso(c.last),
        ]),
      ],
      [0],
    ),
  );
  if (showDeadLetters) {
    lines.push('', 'dead letters:');
    lines.push(
      table([
        ['dead letter', 'failed at', 'stage/code', 'tenant', 'event id', 'submission', 'source', 'message'],
        ...deadLetters.map((l) => [
          `${l.partition}@${l.offset}`,
          iso(l.failed_at),
          `${l.stage}/${l.error_code}`,
          l.tenant ?? NO_TENANT,
          l.event_id ?? '-',
          l.submission_id ?? '-',
          `${l.source_topic}[${l.source_partition}]@${l.source_offset}`,
          l.message.length > 60 ? `${l.message.slice(0, 57)}...` : l.message,
        ]),
      ]),
    );
  }
  return lines.join('\n');
}
