/**
 * `docstream inspect <event_id | submission_id>`: where one document is and what became of it, read
 * from the topics alone (no instance needs to run):
 * - its state record (the state topic, keyed by event_id, partition = the input partition): status,
 *   submission id, results awaited and published, when; the input record it came from;
 * - the input partition and the group member that owns it now (the group's description);
 * - its result events in the output topics (keyed by submission id, header `event_id`);
 * - its dead letters.
 * A submission id is matched against the state records' submission ids, the output keys and the
 * dead letters; an event id against the state keys, the outputs' `event_id` header and the dead letters.
 * Reading the output and dead-letter topics whole is the price of needing no index; the state topic
 * is compacted (one record per document in the retention window). `forTenants` narrows an
 * inspection to the records of selected tenants.
 */
import type { Config } from '../config/index.js';
import {
  AWAITABLE,
  isFinished,
  type Awaitable,
  type DocumentStateV2,
} from '../connector/state/document-state.js';
import { topicNotAuthorized, type KafkaAdmin } from '../kafka/admin.js';
import type { KafkaClient } from '../kafka/client.js';
import type { IncomingMessage } from '../kafka/consumer.js';
import { partitionOfKey } from '../kafka/partitioner.js';
import { readTopicRange } from '../kafka/topic-range.js';
import type { Logger } from '../observability/logger.js';
import { EVENT_ID_MAX, eventIdProblem, type AvroDecoder } from '../serde/input.js';
import { readDeadLetters, type DeadLetterRecord } from './dead-letter-report.js';
import { readStateRecords } from './state-records.js';
import { NO_TENANT, tenantSelected, type TenantSelection } from './tenant-filter.js';

interface ResultEvent {
  kind: Awaitable;
  topic: string;
  partition: number;
  offset: string;
  submission_id: string | null;
  event_id: string | null;
  published_at: number;
  /** The result's tenant; null for the default credentials (or an unreadable value). */
  tenant: string | null;
  /** The result's status or verdict fields, when the value has them. */
  summary: Record<string, unknown>;
  /** The trace its `traceparent` header names (with tracing on, the document's trace); null without one. */
  trace_id: string | null;
}

export interface Inspection {
  query: string;
  /** How the query matched: as an event id, as a submission id, or not at all. */
  matched: 'event_id' | 'submission_id' | null;
  event_id: string | null;
  submission_ids: string[];
  /**
   * The document's tenant: its unfinished state's, else its latest result's or dead letter's; null
   * for the default credentials, or when no record says.
   */
  tenant: string | null;
  input: { topic: string; partition: number; offset: string | null; how: string } | null;
  owner: { member_id: string; client_id: string; host: string } | null;
  group: { id: string; state: string };
  state: (Omit<DocumentStateV2, 'v' | 'pending'> & { upload_pending?: boolean; state_offset: string }) | null;
  results: ResultEvent[];
  deadLetters: DeadLetterRecord[];
  /** With a tenant selection: what it left out (the state, results and dead letters of other tenants). */
  hidden?: { state: boolean; results: number; dead_letters: number };
}

/** Longest part of a refused id that a message echoes. */
const SHOWN_ID = 40;

/**
 * Why `id` can be neither an event id nor a submission id (too long, control characters), or null.
 * Both are refused with such characters or beyond EVENT_ID_MAX at the input, so no document can
 * match; the answer shows the id cut and escaped, never raw (a terminal would run its escapes).
 */
export function inspectIdProblem(id: string): string | null {
  const shown =
    JSON.stringify(id.length > SHOWN_ID ? id.slice(0, SHOWN_ID) : id) + (id.length > SHOWN_ID ? '…' : '');
  if (id.length === 0) return 'the id is empty';
  if (id.length > EVENT_ID_MAX)
    return `${shown} is not an event id or a submission id: ${id.length} characters (at most ${EVENT_ID_MAX})`;
  const problem = eventIdProblem(id);
  return problem === null ? null : `${shown} is not an event id or a submission id: it ${problem}`;
}

interface StateHit {
  eventId: string;
  state: DocumentStateV2 | null;
  partition: number;
  offset: string;
}

/** The latest state record of each key that matches, read from the given partitions. */
async function findStates(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  config: Config,
  logger: Logger,
  match: (eventId: string, state: DocumentStateV2 | null) => boolean,
  partitions?: number[],
): Promise<StateHit[]> {
  const latest = new Map<string, StateHit>();
  await readStateRecords(
    kafka,
    admin,
    config.topics,
    logger,
    (eventId, state, r) => {
      // A tombstone (expired) of a matched key counts too: the document left the state.
      if (match(eventId, state) || latest.has(eventId))
        latest.set(eventId, { eventId, state, partition: r.partition, offset: r.offset });
    },
    partitions ? { partitions } : {},
  );
  return [...latest.values()];
}

function summaryOf(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['status', 'score', 'verdict', 'decision', 'quality', 'document_type', 'message'])
    if (value[key] !== undefined && value[key] !== null && typeof value[key] !== 'object')
      out[key] = value[key];
  return out;
}

export async function inspect(
  query: string,
  deps: { kafka: KafkaClient; admin: KafkaAdmin; decoder: AvroDecoder; config: Config; logger: Logger },
): Promise<Inspection> {
  const { kafka, admin, decoder, config, logger } = deps;
  const t = config.topics;
  const existing = new Set(await admin.listTopics());
  // Kafka lists only the topics this principal may Describe: one missing from the list may be
  // there behind an ACL, and a document's state or results would then be left out unsaid.
  for (const key of ['state', ...AWAITABLE, 'dlq'] as const) {
    if (existing.has(t[key])) continue;
    if ((await admin.topicPresence(t[key])) === 'not-authorized')
      throw topicNotAuthorized(t[key], `topics.${key}`);
  }

  // The state, as an event id first (its likely partition when inputs are keyed by event id).
  let hits: StateHit[] = [];
  let inputPartitions = 0;
  if (existing.has(t.state)) {
    inputPartitions = (await admin.topicOffsets(t.state)).length;
    const likely = partitionOfKey(query, inputPartitions);
    const asEvent = (eventId: string) => eventId === query;
    hits = await findStates(kafka, admin, config, logger, asEvent, [likely]);
    if (hits.length === 0) {
      const rest = [...Array(inputPartitions).keys()].filter((p) => p !== likely);
      hits = await findStates(
        kafka,
        admin,
        config,
        logger,
        (eventId, state) => eventId === query || state?.submission_id === query,
        rest.length > 0 ? rest : undefined,
      );
      if (hits.length === 0 && rest.length > 0) {
        hits = await findStates(kafka, admin, config, logger, (_, s) => s?.submission_id === query, [likely]);
      }
    }
  }
  const hit = hits.find((h) => h.eventId === query) ?? hits[0] ?? null;

  const [deadLetterRead, outputs] = await Promise.all([
    readDeadLetters(kafka, admin, decoder, t.dlq, logger),
    Promise.all(
      AWAITABLE.filter((k) => existing.has(t[k])).map(async (kind) => ({
        kind,
        records: await readTopicRange(kafka, admin, t[kind], logger),
      })),
    ),
  ]);

  let eventId = hit?.eventId ?? null;
  const submissionIds = new Set<string>();
  if (hit?.state) submissionIds.add(hit.state.submission_id);
  const queryIsSubmission = hit !== null && hit.eventId !== query;
  if (queryIsSubmission || hit === null) submissionIds.add(query);

  // The event id of a submission with no state left (expired): from its outputs or dead letters.
  const headerOf = (r: IncomingMessage, name: string) => r.headers[name]?.toString('utf8') ?? null;
  if (eventId === null) {
    for (const { records } of outputs) {
      const found = records.find((r) => r.key?.toString('utf8') === query);
      if (found) eventId = headerOf(found, 'event_id');
      if (eventId) break;
    }
  }
  if (eventId === null) {
    const byEvent = deadLetterRead.deadLetters.some((l) => l.event_id === query);
    const bySubmission = deadLetterRead.deadLetters.find((l) => l.submission_id === query);
    eventId = byEvent ? query : (bySubmission?.event_id ?? null);
    if (eventId === null) {
      for (const { records } of outputs)
        if (records.some((r) => headerOf(r, 'event_id') === query)) eventId = query;
    }
  }
  if (eventId !== null && eventId !== query) submissionIds.add(query);
  if (eventId === query) submissionIds.delete(query);

  const deadLetters = deadLetterRead.deadLetters.filter(
    (l) =>
      (eventId !== null && l.event_id === eventId) ||
      (l.submission_id !== null && submissionIds.has(l.submission_id)),
  );
  for (const l of deadLetters) if (l.submission_id) submissionIds.add(l.submission_id);

  const results: ResultEvent[] = [];
  for (const { kind, records } of outputs) {
    for (const r of records) {
      const key = r.key?.toString('utf8') ?? null;
      const event = headerOf(r, 'event_id');
      if (!((eventId !== null && event === eventId) || (key !== null && submissionIds.has(key)))) continue;
      if (key) submissionIds.add(key);
      let summary: Record<string, unknown> = {};
      let tenant: string | null = null;
      try {
        if (r.value) {
          const value = (await decoder.decode(r.value)) as Record<string, unknown>;
          summary = summaryOf(value);
          if (typeof value.tenant === 'string') tenant = value.tenant;
        }
      } catch {
        summary = { unreadable: true };
      }
      results.push({
        kind,
        topic: r.topic,
        partition: r.partition,
        offset: r.offset,
        submission_id: key,
        event_id: event,
        published_at: Number(r.timestamp),
        tenant,
        summary,
        trace_id: traceIdOf(headerOf(r, 'traceparent')),
      });
    }
  }
  results.sort((a, b) => a.published_at - b.published_at);

  // The input partition: the state's pointer, else a dead letter's, else where a key equal to the event
  // id would go (a guess, said so).
  let input: Inspection['input'] = null;
  const arrivedDeadLetter = deadLetters.find((l) => l.source_topic === t.arrived);
  if (hit?.state) input = { ...hit.state.input, how: 'state record' };
  else if (hit)
    input = {
      topic: t.arrived,
      partition: hit.partition,
      offset: null,
      how: 'state partition (record expired)',
    };
  else if (arrivedDeadLetter)
    input = {
      topic: arrivedDeadLetter.source_topic,
      partition: arrivedDeadLetter.source_partition,
      offset: arrivedDeadLetter.source_offset,
      how: 'dead letter',
    };
  else if (eventId !== null && existing.has(t.arrived)) {
    const n = inputPartitions || (await admin.topicOffsets(t.arrived)).length;
    input = {
      topic: t.arrived,
      partition: partitionOfKey(eventId, n),
      offset: null,
      how: 'if the input is keyed by event id',
    };
  }

  const group = await admin.describeGroupMembers(config.kafka.groupId);
  const ownerMember =
    input === null
      ? undefined
      : group.members.find((m) => m.assignment[t.arrived]?.includes(input.partition));
  const matched =
    eventId === null && results.length === 0 && deadLetters.length === 0 && hit === null
      ? null
      : eventId === query
        ? 'event_id'
        : 'submission_id';

  let state: Inspection['state'] = null;
  if (hit?.state) {
    const { v: _v, ...rest } = hit.state;
    const base = { ...rest, state_offset: hit.offset };
    if (!isFinished(hit.state)) {
      const { pending, ...unfinished } = base as typeof base & { pending?: unknown };
      state = { ...unfinished, upload_pending: pending !== undefined };
    } else state = base;
  }
  // An unfinished state names its tenant (absent: the default credentials); a finished one does not,
  // so the latest record that names one says.
  const latest = [
    ...results.map((r) => ({ at: r.published_at, tenant: r.tenant })),
    ...deadLetters.map((l) => ({ at: l.failed_at, tenant: l.tenant })),
  ].sort((a, b) => b.at - a.at)[0];
  const unfinished = hit?.state && !isFinished(hit.state) ? hit.state : null;
  return {
    query,
    matched,
    event_id: eventId,
    submission_ids: [...submissionIds],
    tenant: unfinished ? (unfinished.tenant ?? null) : (latest?.tenant ?? null),
    input,
    owner: ownerMember
      ? { member_id: ownerMember.memberId, client_id: ownerMember.clientId, host: ownerMember.clientHost }
      : null,
    group: { id: group.groupId, state: group.state },
    state,
    results,
    deadLetters,
  };
}

/**
 * The inspection with only the selected tenants' records: results and dead letters by their own
 * tenant, the state by the document's. Nothing left is no match (exit 3), as for an unknown id.
 */
export function forTenants(x: Inspection, selection: TenantSelection): Inspection {
  const results = x.results.filter((r) => tenantSelected(r.tenant, selection));
  const deadLetters = x.deadLetters.filter((l) => tenantSelected(l.tenant, selection));
  const state = tenantSelected(x.tenant, selection) ? x.state : null;
  const hidden = {
    state: x.state !== null && state === null,
    results: x.results.length - results.length,
    dead_letters: x.deadLetters.length - deadLetters.length,
  };
  const nothingLeft = state === null && results.length === 0 && deadLetters.length === 0;
  const anyHidden = hidden.state || hidden.results > 0 || hidden.dead_letters > 0;
  // A document known by its id alone (its state record expired) is of the tenant none: `-` selects it.
  if (x.matched !== null && nothingLeft && (anyHidden || !tenantSelected(x.tenant, selection)))
    return {
      ...x,
      matched: null,
      event_id: null,
      submission_ids: [],
      tenant: null,
      input: null,
      owner: null,
      state: null,
      results: [],
      deadLetters: [],
      hidden,
    };
  return { ...x, state, results, deadLetters, hidden };
}

/** `2 results, 1 dead letter` of what a tenant selection left out, or null when it left nothing out. */
function hiddenText(hidden: NonNullable<Inspection['hidden']>): string | null {
  const parts: string[] = [];
  if (hidden.state) parts.push('the state');
  if (hidden.results > 0) parts.push(`${hidden.results} result${hidden.results === 1 ? '' : 's'}`);
  if (hidden.dead_letters > 0)
    parts.push(`${hidden.dead_letters} dead letter${hidden.dead_letters === 1 ? '' : 's'}`);
  return parts.length === 0 ? null : parts.join(', ');
}

const iso = (ms: number | undefined) =>
  ms === undefined || !Number.isFinite(ms) ? '-' : new Date(ms).toISOString();

/** The human-readable form of an inspection. */
export function formatInspection(x: Inspection): string {
  const hidden = x.hidden ? hiddenText(x.hidden) : null;
  if (x.matched === null)
    return x.hidden
      ? `${x.query}: no document of the selected tenants with this event id or submission id in the topics${hidden ? ` (not shown, of other tenants: ${hidden})` : ''}`
      : `${x.query}: no document with this event id or submission id in the topics`;
  const lines: string[] = [];
  lines.push(
    `document ${x.event_id ?? '(event id unknown)'}${x.matched === 'submission_id' ? ` (found by submission ${x.query})` : ''}`,
  );
  lines.push(`  tenant:      ${x.tenant ?? `${NO_TENANT} (the default credentials)`}`);
  lines.push(`  submissions: ${x.submission_ids.join(', ') || 'none'}`);
  if (x.input)
    lines.push(
      `  input:       ${x.input.topic}[${x.input.partition}]${x.input.offset !== null ? `@${x.input.offset}` : ''} (${x.input.how})`,
    );
  lines.push(
    `  owner:       ${x.owner ? `${x.owner.client_id} ${x.owner.member_id} on ${x.owner.host}` : `none (group ${x.group.id} is ${x.group.state})`}`,
  );
  if (x.state) {
    const s = x.state as Record<string, unknown>;
    lines.push(`  state:       ${String(s.status)}, submission ${String(s.submission_id)}`);
    lines.push(
      `               awaited ${(s.awaited as string[]).join(',') || '-'}; published ${(s.published as string[]).join(',') || 'nothing yet'}`,
    );
    if (s.finished_at !== undefined) lines.push(`               finished ${iso(s.finished_at as number)}`);
    else
      lines.push(
        `               created ${iso(s.created_at as number)}, updated ${iso(s.updated_at as number)}${s.upload_pending ? ', upload pending' : ''}`,
      );
    const error = s.error as { stage: string; code: string; message: string } | undefined;
    if (error) lines.push(`               last error ${error.stage}/${error.code}: ${error.message}`);
  } else if (x.hidden?.state) lines.push('  state:       not shown (of another tenant)');
  else lines.push('  state:       none (never admitted, or expired from the state)');
  lines.push(`  results:     ${x.results.length === 0 ? 'none' : ''}`);
  for (const r of x.results)
    lines.push(
      `    ${r.kind.padEnd(14)} ${iso(r.published_at)}  ${r.topic}[${r.partition}]@${r.offset}  ${Object.entries(
        {
          tenant: r.tenant ?? NO_TENANT,
          ...r.summary,
          ...(r.trace_id ? { trace: r.trace_id } : {}),
        },
      )
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(' ')}`,
    );
  lines.push(`  dead letters: ${x.deadLetters.length === 0 ? 'none' : ''}`);
  for (const l of x.deadLetters)
    lines.push(
      `    ${iso(l.failed_at)}  ${l.stage}/${l.error_code}  ${l.partition}@${l.offset}  tenant=${l.tenant ?? NO_TENANT}  ${l.message}`,
    );
  if (hidden) lines.push(`  not shown, of other tenants: ${hidden}`);
  return lines.join('\n');
}

/** The trace id of a W3C traceparent (`00-<trace id>-<span id>-<flags>`), or null. */
export function traceIdOf(traceparent: string | null): string | null {
  const m = traceparent
    ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent.trim())
    : null;
  return m?.[1] ?? null;
}
