/**
 * `docstream replay`: moves the connector's consumer group back (or forward) on the input topic so
 * that the next `docstream run` re-reads from there. Re-read documents reuse their submissions
 * (results are re-emitted) unless their events say `reprocess`. Kafka lets only a group's own members
 * commit while it has any, so the command refuses while a connector of the group is running.
 *
 * A connector publishes a finished document's results once: a redelivered input (after a crash) is
 * skipped. So that a replay does re-emit, the command first writes a replay marker into each state
 * partition it moves back (a new generation, up to the group's offset before the reset); documents
 * below it re-emit once for that generation. It warns when the target is older than the state's
 * retention window: those documents left the state and will be submitted again.
 */
import { InvalidArgumentError, type Command } from 'commander';
import {
  nextGeneration,
  readReplayMarkers,
  writeReplayMarkers,
} from '../../connector/state/replay-markers.js';
import { replayWarning } from '../../connector/state/retention.js';
import { kafkaClientOf } from '../../kafka/client-from-config.js';
import type { KafkaAdmin } from '../../kafka/admin.js';
import { Progress, formatDuration } from '../../util/progress.js';
import type { KafkaClient } from '../../kafka/client.js';
import { RecordReader } from '../../kafka/record-reader.js';
import { silentLogger } from '../../observability/logger.js';
import {
  planOffsetReset,
  resetOffsets,
  type OffsetResetPlan,
  type OffsetResetTarget,
} from '../../operator/replay-plan.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { UsageError } from '../exit-codes.js';
import { examples } from '../help.js';
import { printWarning } from '../messages.js';

interface ReplayFlags extends ConfigFlags {
  topic?: string;
  group?: string;
  toDatetime?: number;
  toEarliest?: boolean;
  toLatest?: boolean;
  toOffset?: Record<number, string>;
  dryRun?: boolean;
  watch?: boolean;
  json?: boolean;
}

/** A refusal the user can act on (exit code 1, no stack trace). */
class ReplayRefused extends Error {}

function parseDatetime(value: string): number {
  const ms = Date.parse(value);
  // Date.parse accepts many shapes; insist on an ISO date so "03/04" is not silently guessed.
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms))
    throw new InvalidArgumentError('must be an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z');
  return ms;
}

function parseOffsets(value: string): Record<number, string> {
  const out: Record<number, string> = {};
  for (const part of value.split(',')) {
    const m = /^\s*(\d+)\s*=\s*(\d+)\s*$/.exec(part);
    if (!m) throw new InvalidArgumentError('expected <partition>=<offset>[,<partition>=<offset>...]');
    out[Number(m[1])] = m[2]!;
  }
  return out;
}

function targetOf(flags: ReplayFlags): OffsetResetTarget {
  const chosen: OffsetResetTarget[] = [];
  if (flags.toDatetime !== undefined) chosen.push({ kind: 'timestamp', timestamp: flags.toDatetime });
  if (flags.toEarliest) chosen.push({ kind: 'earliest' });
  if (flags.toLatest) chosen.push({ kind: 'latest' });
  if (flags.toOffset) chosen.push({ kind: 'offsets', offsets: flags.toOffset });
  if (chosen.length !== 1)
    throw new UsageError('give exactly one of --to-datetime, --to-earliest, --to-latest, --to-offset');
  return chosen[0]!;
}

/** The table of a plan: what the group would re-read (or skip) on each partition. */
function formatPlan(plan: OffsetResetPlan): string {
  const rows = [['partition', 'current', 'target', 're-read', 'skipped']];
  for (const p of plan.partitions) {
    // A group without a committed offset starts at the beginning (the connector reads from earliest).
    const from = BigInt(p.current ?? p.low);
    const to = BigInt(p.target);
    rows.push([
      String(p.partition),
      p.current ?? '-',
      p.target,
      String(from > to ? from - to : 0n),
      String(to > from ? to - from : 0n),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padStart(widths[i]!)).join('  ')).join('\n');
}

/** Records the group re-reads after a reset: from each target to the end the partition had then. */
export function replayBacklog(plan: OffsetResetPlan): number {
  return plan.partitions.reduce((sum, p) => {
    const n = BigInt(p.high) - BigInt(p.target);
    return sum + (n > 0n ? Number(n) : 0);
  }, 0);
}

/**
 * Follows a replay: polls the group's committed offsets until every partition has re-read up to the
 * end it had at the reset (the connector, started after the reset, does the reading). Progress on a
 * terminal; nothing elsewhere.
 */
export async function watchReplay(
  admin: Pick<KafkaAdmin, 'groupOffsets'>,
  plan: OffsetResetPlan,
  progress: Progress,
  intervalMs = 1000,
): Promise<{ records: number; seconds: number }> {
  const started = Date.now();
  const total = replayBacklog(plan);
  for (;;) {
    const committed = await admin.groupOffsets(plan.groupId, plan.topic);
    let done = 0;
    for (const p of plan.partitions) {
      const span = BigInt(p.high) - BigInt(p.target);
      if (span <= 0n) continue;
      const at = committed.get(p.partition);
      const read = at === null || at === undefined ? 0n : BigInt(at) - BigInt(p.target);
      done += Number(read < 0n ? 0n : read > span ? span : read);
    }
    progress.update(done, total);
    if (done >= total) return { records: total, seconds: (Date.now() - started) / 1000 };
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Partitions moved back, with the group's offset before the reset (what the marker covers). */
function movedBack(plan: OffsetResetPlan): Map<number, string> {
  const out = new Map<number, string>();
  for (const p of plan.partitions) {
    if (p.current !== null && BigInt(p.target) < BigInt(p.current)) out.set(p.partition, p.current);
  }
  return out;
}

/** The earliest time replayed: the target time, else the timestamp of the oldest target record. */
async function replayedFrom(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  topic: string,
  target: OffsetResetTarget,
  plan: OffsetResetPlan,
): Promise<number | null> {
  if (target.kind === 'timestamp') return target.timestamp;
  const firsts = plan.partitions
    .filter((p) => BigInt(p.target) < BigInt(p.current ?? p.high))
    .map((p) => ({ partition: p.partition, offset: p.target }));
  if (firsts.length === 0) return null;
  const reader = new RecordReader(kafka, admin, topic, silentLogger, { readTimeoutMs: 15_000 });
  await reader.start();
  try {
    const records = await reader.readMany(firsts);
    const times = records.filter((r) => r !== null).map((r) => Number(r.timestamp));
    return times.length > 0 ? Math.min(...times) : null;
  } finally {
    await reader.stop();
  }
}

async function replay(
  flags: ReplayFlags,
  out: (line: string) => void,
  warn: (message: string) => void,
): Promise<OffsetResetPlan> {
  const config = configOf(flags);
  const target = targetOf(flags);
  const topic = flags.topic ?? config.topics.arrived;
  const group = flags.group ?? config.kafka.groupId;
  const kafka = kafkaClientOf(config, { clientId: `${config.kafka.clientId}-replay` });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const state = await admin.describeGroup(group);
    const active = !['Empty', 'Dead'].includes(state.state);
    if (active && !flags.dryRun) {
      throw new ReplayRefused(
        `group ${group} has ${state.members} active member(s) (${state.state}); stop its connectors, then replay`,
      );
    }
    const planned = await planOffsetReset(admin, group, topic, target);
    const from = await replayedFrom(kafka, admin, topic, target, planned);
    const warning = from === null ? null : replayWarning(from, config.state.retentionMs, Date.now());
    if (warning) warn(warning);
    let plan = planned;
    if (!flags.dryRun) {
      const back = movedBack(planned);
      // No state topic yet: no connector ever finished a document, so there is nothing to re-emit.
      const stateExists = (await admin.listTopics()).includes(config.topics.state);
      if (back.size > 0 && stateExists) {
        const markers = await readReplayMarkers(kafka, admin, config.topics.state, silentLogger);
        const generation = nextGeneration(markers);
        // An earlier replay not finished yet keeps its range: the new marker covers it too.
        for (const [partition, until] of back) {
          const earlier = markers.get(partition)?.until_offset;
          if (earlier !== undefined && BigInt(earlier) > BigInt(until)) back.set(partition, earlier);
        }
        const producer = kafka.producer();
        await producer.connect();
        try {
          await writeReplayMarkers(producer, config.topics.state, generation, back, Date.now());
        } finally {
          await producer.disconnect().catch(() => undefined);
        }
        out(`replay generation ${generation} marked on partitions ${[...back.keys()].join(',')}`);
      }
      plan = await resetOffsets(admin, group, topic, target);
    }
    out(`group ${group}, topic ${topic}${plan.applied ? '' : ' (dry run: nothing changed)'}`);
    if (!flags.json) out(formatPlan(plan));
    if (active) out(`note: group ${group} has active members; it must be stopped before a real replay`);
    if (plan.applied) out('offsets reset; the next `docstream run` re-reads from the targets');
    if (flags.watch && !plan.applied)
      out('note: --watch follows a real replay; a dry run has nothing to follow');
    if (flags.watch && plan.applied) {
      const backlog = replayBacklog(plan);
      out(`watching group ${group} re-read ${backlog} records (Ctrl-C stops watching; the reset stays)`);
      const progress = new Progress({ label: `replay ${topic}`, total: backlog, unit: 'records' });
      const { records, seconds } = await watchReplay(admin, plan, progress);
      progress.finish();
      out(`re-read ${records} records in ${formatDuration(seconds)}`);
    }
    return plan;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export function registerReplayCommand(program: Command): void {
  const command = program
    .command('replay')
    .summary("Move the connector's group back (or forward) on the input topic.")
    .description(
      "Reset the connector's consumer group on the input topic so that the next run re-reads from there. " +
        'Re-read documents reuse their submissions (results are re-emitted) unless their events set reprocess. ' +
        'Refused while the group has active members. It moves offsets, so it cannot select a tenant: to send one ' +
        "tenant's failed documents again, use docstream dlq redrive --tenant.",
    )
    .option('--topic <topic>', 'input topic (default: topics.arrived)')
    .option('--group <group>', 'consumer group (default: kafka.groupId)')
    .option('--to-datetime <iso>', 'move to the first record at or after this time', parseDatetime)
    .option('--to-earliest', 'move to the oldest record still stored')
    .option('--to-latest', 'move to the end (skip everything not yet read)')
    .option('--to-offset <list>', 'move to these offsets: <partition>=<offset>[,...]', parseOffsets)
    .option('--dry-run', 'print the plan without changing anything')
    .option(
      '--watch',
      'after the reset, follow the group re-reading up to the end (records, rate, time left on a terminal)',
    )
    .option('--json', 'print the plan as JSON (for scripts); the other lines go to standard error');
  addConfigOption(command).action(async (flags: ReplayFlags) => {
    const toStderr = (line: string) => process.stderr.write(`${line}\n`);
    const plan = await replay(
      flags,
      flags.json ? toStderr : (line) => process.stdout.write(`${line}\n`),
      (message) => printWarning(command, message),
    );
    if (flags.json) process.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
  });
  examples(
    command,
    'docstream replay -c prod.json --to-datetime 2026-11-25T12:00:00Z --dry-run',
    'docstream replay -c prod.json --to-earliest --watch',
    'docstream replay -c prod.json --to-offset 0=1200,1=1180 --json',
  );
}
