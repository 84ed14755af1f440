/**
 * `docstream dlq list|redrive`: the dead-letter topic as a report (counts by reason, the dead letters),
 * and the re-drive of selected dead letters' originals to their input topic (`src/operator/redrive.ts`).
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { Config } from '../../config/index.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { examples } from '../help.js';
import { UsageError } from '../exit-codes.js';
import { kafkaClientOf } from '../../kafka/client-from-config.js';
import { registryOf } from '../../serde/registry-from-config.js';
import { topicNotAuthorized, type KafkaAdmin } from '../../kafka/admin.js';
import type { KafkaClient } from '../../kafka/client.js';
import { silentLogger } from '../../observability/logger.js';
import {
  countByReason,
  formatDeadLetterReport,
  deadLetterMatches,
  readDeadLetters,
  table,
  type DeadLetterRecord,
  type DeadLetterFilter,
} from '../../operator/dead-letter-report.js';
import { redrive, type RedriveResult } from '../../operator/redrive.js';
import type { Registry } from '../../serde/registry.js';
import { Progress } from '../../util/progress.js';
import { NO_TENANT } from '../../operator/tenant-filter.js';
import { addTenantOption, tenantsOf } from '../tenant-option.js';

interface FilterFlags extends ConfigFlags {
  stage?: string[];
  code?: string[];
  eventId?: string[];
  tenant?: string[];
  since?: number;
  until?: number;
  json?: boolean;
}

function parseTime(value: string): number {
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms))
    throw new InvalidArgumentError('must be an ISO 8601 date or date-time, e.g. 2026-11-25T12:00:00Z');
  return ms;
}

const list = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.length > 0),
];

function filterOf(flags: FilterFlags): DeadLetterFilter {
  const tenants = tenantsOf(flags);
  return {
    ...(flags.stage ? { stages: flags.stage } : {}),
    ...(flags.code ? { codes: flags.code } : {}),
    ...(flags.eventId ? { eventIds: flags.eventId } : {}),
    ...(tenants ? { tenants } : {}),
    ...(flags.since !== undefined ? { since: flags.since } : {}),
    ...(flags.until !== undefined ? { until: flags.until } : {}),
  };
}

function withFilters(command: Command): Command {
  const filtered = addConfigOption(command)
    .option('--stage <stages>', 'only dead letters of these stages (comma-separated, repeatable)', list)
    .option(
      '--code <codes>',
      'only dead letters with these error codes, e.g. api_503 (comma-separated)',
      list,
    )
    .option('--event-id <ids>', 'only dead letters of these event ids (comma-separated)', list);
  return addTenantOption(filtered, 'dead letters')
    .option('--since <time>', 'only dead letters that failed at or after this time (ISO 8601)', parseTime)
    .option('--until <time>', 'only dead letters that failed before this time (ISO 8601)', parseTime)
    .option('--json', 'print JSON (for scripts)');
}

/** The kafka client and its connected admin the dlq commands read (and redrive sends) with. */
async function withAdmin<T>(
  config: Config,
  body: (kafka: KafkaClient, admin: KafkaAdmin) => Promise<T>,
): Promise<T> {
  const kafka = kafkaClientOf(config, { clientId: `${config.kafka.clientId}-dlq` });
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await body(kafka, admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function selectDeadLetters(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  registry: Registry,
  config: Config,
  filter: DeadLetterFilter,
): Promise<{ selected: DeadLetterRecord[]; total: number; unreadable: number }> {
  // "0 of 0" would read as a clean topic; a topic that is not there is a wrong name (or a cluster
  // the connector never ran on), and the name came from the user's configuration.
  const presence = await admin.topicPresence(config.topics.dlq);
  if (presence === 'not-authorized') throw topicNotAuthorized(config.topics.dlq, 'topics.dlq');
  if (presence === 'missing') {
    throw new UsageError(
      `the dead-letter topic ${config.topics.dlq} (topics.dlq) does not exist on ${config.kafka.brokers.join(',')}; ` +
        'check topics.dlq and kafka.brokers, or whether a connector ever ran with them',
    );
  }
  const { deadLetters, unreadable } = await readDeadLetters(
    kafka,
    admin,
    registry,
    config.topics.dlq,
    silentLogger,
  );
  return {
    selected: deadLetters.filter((l) => deadLetterMatches(l, filter)),
    total: deadLetters.length,
    unreadable,
  };
}

async function listCommand(flags: FilterFlags & { summary?: boolean }): Promise<void> {
  const config = configOf(flags);
  const filter = filterOf(flags);
  const { selected, total, unreadable } = await withAdmin(config, (kafka, admin) =>
    selectDeadLetters(kafka, admin, registryOf(config, silentLogger), config, filter),
  );
  if (flags.json) {
    // The JSON field names are what scripts read: `letters` keeps its first name.
    process.stdout.write(
      `${JSON.stringify({ topic: config.topics.dlq, total, matched: selected.length, unreadable, by_reason: countByReason(selected), letters: flags.summary ? undefined : selected }, null, 2)}\n`,
    );
    return;
  }
  process.stdout.write(`${config.topics.dlq}: ${formatDeadLetterReport(selected, total, !flags.summary)}\n`);
  if (unreadable > 0)
    process.stdout.write(`(${unreadable} records of the topic are not readable dead letters)\n`);
}

function formatRedrive(result: RedriveResult): string {
  const lines: string[] = [];
  const toSend = result.entries.filter((e) => e.decision.action === 'send').length;
  lines.push(
    result.dryRun
      ? `dry run: ${toSend} of ${result.entries.length} dead letters would be re-driven; nothing sent`
      : `re-drove ${result.sent} of ${result.entries.length} dead letters`,
  );
  const rows = [['dead letter', 'tenant', 'event id', 'what', 'why']];
  for (const { deadLetter, decision } of result.entries) {
    rows.push([
      `${deadLetter.partition}@${deadLetter.offset}`,
      deadLetter.tenant ?? NO_TENANT,
      deadLetter.event_id ?? '-',
      decision.action === 'send'
        ? result.dryRun
          ? 'would send'
          : 'sent'
        : `${decision.action === 'refuse' ? 'refused' : 'skipped'} (${decision.reason})`,
      decision.action === 'send'
        ? `to ${deadLetter.source_topic}[${deadLetter.source_partition}]${decision.reprocess ? ' with reprocess: true' : ''}`
        : decision.detail,
    ]);
  }
  if (result.entries.length > 0) lines.push(table(rows));
  return lines.join('\n');
}

async function redriveCommand(
  flags: FilterFlags & { dryRun?: boolean; reprocess?: boolean; all?: boolean },
): Promise<void> {
  const config = configOf(flags);
  const filter = filterOf(flags);
  if (Object.keys(filter).length === 0 && !flags.all)
    throw new UsageError(
      'select dead letters with --stage, --code, --event-id, --tenant, --since or --until, or give --all',
    );
  await withAdmin(config, async (kafka, admin) => {
    // One registry for reading the dead letters and re-encoding originals: its schema cache is shared.
    const registry = registryOf(config, silentLogger);
    const { selected } = await selectDeadLetters(kafka, admin, registry, config, filter);
    let progress: Progress | null = null;
    const result = await redrive(
      selected,
      { kafka, admin, registry, config, logger: silentLogger },
      {
        dryRun: flags.dryRun === true,
        reprocess: flags.reprocess === true,
        // A progress line on a terminal; nothing in CI or a pipe (Progress decides).
        onProgress: (sent, total) => {
          progress ??= new Progress({ label: 'redrive', total, unit: 'dead letters' });
          progress.update(sent, total);
        },
      },
    );
    (progress as Progress | null)?.finish();
    // The JSON field names are what scripts read: each entry's `letter` keeps its first name.
    const json = {
      ...result,
      entries: result.entries.map(({ deadLetter, decision }) => ({ letter: deadLetter, decision })),
    };
    if (flags.json) process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    else process.stdout.write(`${formatRedrive(result)}\n`);
  });
}

export function registerDlqCommand(program: Command): void {
  const dlq = program
    .command('dlq')
    .description(
      'List the dead-letter topic by reason, and re-drive dead letters once their cause is fixed.',
    );
  examples(
    dlq,
    'docstream dlq list -c prod.json --summary',
    'docstream dlq redrive -c prod.json --code api_503 --dry-run',
  );
  const listing = withFilters(dlq.command('list'))
    .description('Print the counts of the selected dead letters by stage and code, then the dead letters.')
    .option('--summary', 'print only the counts by reason')
    .action((flags: FilterFlags & { summary?: boolean }) => listCommand(flags));
  examples(
    listing,
    'docstream dlq list -c prod.json --summary',
    'docstream dlq list -c prod.json --stage upload --since 2026-11-25 --json',
    'docstream dlq list -c prod.json --tenant acme,- --summary',
  );
  const redriving = withFilters(dlq.command('redrive'))
    .summary('Re-publish the original records of the selected dead letters, each at most once.')
    .description(
      'Re-publish the original records of the selected dead letters to their input topic (same key, same partition), ' +
        'so they go through the normal path again. Each dead letter is re-driven at most once (recorded in ' +
        'topics.redrives); dead letters whose original is gone, and documents analysed since, are refused and named. ' +
        "With --tenant, one tenant's documents are sent again (docstream replay moves the whole group and cannot select a tenant).",
    )
    .option('--all', 'select every dead letter (instead of a filter)')
    .option('--dry-run', 'show what would be sent; send nothing')
    .option(
      '--reprocess',
      'also re-send documents that have a submission, with reprocess: true (a new submission)',
    )
    .action((flags: FilterFlags & { dryRun?: boolean; reprocess?: boolean; all?: boolean }) =>
      redriveCommand(flags),
    );
  examples(
    redriving,
    'docstream dlq redrive -c prod.json --code api_503 --dry-run',
    'docstream dlq redrive -c prod.json --event-id evt-1,evt-2 --reprocess',
    'docstream dlq redrive -c prod.json --tenant acme --code unknown_tenant --dry-run',
  );
}
