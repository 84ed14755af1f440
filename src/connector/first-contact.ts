/**
 * Where a group starts on input partitions it has never committed, before its consumer joins: Kafka's
 * `auto.offset.reset`, with a guard. Analysing a record is a paid API call, so a first start on a
 * topic that already holds history analyses it only when told (`connector.startFrom`: earliest,
 * latest or a timestamp); unset, it goes from the beginning only while that history is small
 * (`connector.firstStartBacklogLimit`) and otherwise refuses to start, saying how many records wait
 * and the ways on. `latest` and a timestamp commit the chosen offsets for the group before it joins
 * (Kafka lets a group with no active member be committed from outside), so that a record arriving
 * between this check and the first fetch is not skipped; with members already active (another
 * instance started first and did the same) the group's own commits stand.
 */
import { INACTIVE_GROUP_STATES, type KafkaAdmin } from '../kafka/admin.js';
import type { Logger } from '../observability/logger.js';
import type { StartFrom } from '../config/start-from.js';

export { parseStartFrom, type StartFrom } from '../config/start-from.js';

/** The error that stops a start: a backlog nobody asked to analyse. */
export class BacklogRefusedError extends Error {
  constructor(
    readonly records: number,
    readonly partitions: number,
    topic: string,
    limit: number,
  ) {
    super(
      `${topic} holds ${records} record(s) on ${partitions} partition(s) this consumer group has never read ` +
        `(more than connector.firstStartBacklogLimit, ${limit}); each would be a paid API submission. ` +
        'Set connector.startFrom (DOCSTREAM_CONNECTOR_START_FROM) to earliest to analyse them, ' +
        'to latest to start with the records that arrive from now on, or to an ISO-8601 timestamp to start there',
    );
    this.name = 'BacklogRefusedError';
  }
}

type Admin = Pick<
  KafkaAdmin,
  'topicOffsets' | 'groupOffsets' | 'offsetsForTimestamp' | 'describeGroup' | 'commitGroupOffsets'
>;

/** What the consumer subscribes with once the group's offsets are settled. */
export interface StartDecision {
  /** Partitions without a committed offset start at their beginning (else at their end). */
  fromBeginning: boolean;
  /** Records on never-read partitions when the check ran, and how many of them will be analysed. */
  backlog: number;
  analysed: number;
}

export async function decideStart(o: {
  admin: Admin;
  groupId: string;
  topic: string;
  startFrom: StartFrom;
  logger: Logger;
}): Promise<StartDecision> {
  const { admin, groupId, topic, startFrom, logger } = o;
  const [ends, committed] = await Promise.all([
    admin.topicOffsets(topic),
    admin.groupOffsets(groupId, topic),
  ]);
  const unread = ends.filter((e) => (committed.get(e.partition) ?? null) === null);
  const backlogOf = (p: { low: string; high: string }) => Math.max(0, Number(p.high) - Number(p.low));
  const backlog = unread.reduce((sum, p) => sum + backlogOf(p), 0);
  if (backlog === 0 || startFrom.kind === 'earliest')
    return { fromBeginning: true, backlog, analysed: backlog };
  if (startFrom.kind === 'guarded') {
    if (backlog > startFrom.limit)
      throw new BacklogRefusedError(
        backlog,
        unread.filter((p) => backlogOf(p) > 0).length,
        topic,
        startFrom.limit,
      );
    return { fromBeginning: true, backlog, analysed: backlog };
  }
  const targets =
    startFrom.kind === 'latest'
      ? new Map(unread.map((p) => [p.partition, p.high]))
      : await admin.offsetsForTimestamp(topic, startFrom.at);
  // Within the partition's records: an answer past its end (or none) is its end.
  const chosen = new Map(
    unread.map((p) => {
      const target = Number(targets.get(p.partition) ?? p.high);
      return [p.partition, String(Math.max(Number(p.low), Math.min(Number(p.high), target)))];
    }),
  );
  const analysed = unread.reduce(
    (sum, p) => sum + Math.max(0, Number(p.high) - Number(chosen.get(p.partition))),
    0,
  );
  const group = await admin.describeGroup(groupId);
  if (INACTIVE_GROUP_STATES.has(group.state)) {
    await admin.commitGroupOffsets(groupId, topic, chosen);
    logger.info(
      { topic, partitions: chosen.size, backlog, analysed, startFrom: startFrom.kind },
      'first start: the group starts on its never-read partitions where connector.startFrom says',
    );
    return { fromBeginning: true, backlog, analysed };
  }
  // Active members started first and committed where they start; partitions still without a commit
  // take the end (latest) or, for a timestamp, the beginning of what arrived after the check.
  logger.info(
    { topic, backlog, members: group.members, startFrom: startFrom.kind },
    'first start: the group has active members; its own commits stand',
  );
  return { fromBeginning: startFrom.kind === 'timestamp', backlog, analysed };
}
