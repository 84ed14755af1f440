/**
 * `docstream inspect <id>` and `docstream status`: one document, and the group, from the topics and
 * the members' metrics endpoints (`src/operator/inspect.ts`, `src/operator/status.ts`).
 */
import type { Command } from 'commander';
import { kafkaClientOf } from '../../kafka/client-from-config.js';
import { registryOf } from '../../serde/registry-from-config.js';
import { silentLogger } from '../../observability/logger.js';
import { formatInspection, forTenants, inspect, inspectIdProblem } from '../../operator/inspect.js';
import { formatStatus, groupStatus } from '../../operator/status.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { EXIT_NOT_FOUND, UsageError } from '../exit-codes.js';
import { examples } from '../help.js';
import { addTenantOption, tenantsOf } from '../tenant-option.js';

export function registerOperateCommands(program: Command): void {
  const inspectCommand = program
    .command('inspect <id>')
    .summary('Find one document in the topics by event id or submission id.')
    .description(
      'Find one document by event id or submission id in the topics (no instance needs to run): its input ' +
        'partition and the member owning it, its state (status, submission, results published, when), ' +
        'its result events and its dead letters, each with its tenant. With --tenant, only the records of those ' +
        "tenants are shown (the state by the document's tenant). It exits with code 3 when nothing matches.",
    )
    .option('--json', 'print JSON (for scripts)');
  addTenantOption(inspectCommand, 'the state, results and dead letters');
  type InspectFlags = ConfigFlags & { json?: boolean; tenant?: string[] };
  addConfigOption(inspectCommand).action(async (id: string, flags: InspectFlags) => {
    const problem = inspectIdProblem(id);
    if (problem !== null) throw new UsageError(problem);
    const tenants = tenantsOf(flags);
    const config = configOf(flags);
    const kafka = kafkaClientOf(config, { clientId: `${config.kafka.clientId}-inspect` });
    const admin = kafka.admin();
    try {
      await admin.connect();
      const all = await inspect(id, {
        kafka,
        admin,
        decoder: registryOf(config, silentLogger),
        config,
        logger: silentLogger,
      });
      const found = tenants ? forTenants(all, tenants) : all;
      // The JSON field names are what scripts read: `letters` keeps its first name.
      const { deadLetters, ...rest } = found;
      const json = { ...rest, letters: deadLetters };
      process.stdout.write(`${flags.json ? JSON.stringify(json, null, 2) : formatInspection(found)}\n`);
      if (found.matched === null) process.exitCode = EXIT_NOT_FOUND;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  });
  examples(
    inspectCommand,
    'docstream inspect -c prod.json send-20261126143508-86b77d',
    'docstream inspect -c prod.json --json sub_0123456789abcdefghijkl',
    'docstream inspect -c prod.json --tenant acme send-20261126143508-86b77d',
  );

  const statusCommand = program
    .command('status')
    .summary("Show the connector group's members, partitions, lag and in-flight documents.")
    .description(
      "Show the connector group's members with each one's input partitions and lag and, from each member's " +
        'metrics endpoint (announced when http.port is fixed), its documents in flight, API share, limiter rate ' +
        'and readiness.',
    )
    .option('--json', 'print JSON (for scripts)')
    .option('--no-metrics', "do not contact the members' metrics endpoints")
    .option(
      '--metrics-endpoints <list>',
      "host:port of members' metrics endpoints, matched to members by host (instead of what they announce)",
      (v: string) => v.split(',').filter(Boolean),
    );
  addConfigOption(statusCommand).action(
    async (flags: ConfigFlags & { json?: boolean; metrics?: boolean; metricsEndpoints?: string[] }) => {
      const config = configOf(flags);
      const kafka = kafkaClientOf(config, { clientId: `${config.kafka.clientId}-status` });
      const admin = kafka.admin();
      try {
        await admin.connect();
        const status = await groupStatus(admin, config, {
          metrics: flags.metrics !== false,
          ...(flags.metricsEndpoints ? { endpoints: flags.metricsEndpoints } : {}),
        });
        process.stdout.write(`${flags.json ? JSON.stringify(status, null, 2) : formatStatus(status)}\n`);
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    },
  );
  examples(
    statusCommand,
    'docstream status -c prod.json',
    'docstream status -c prod.json --json --no-metrics',
  );
}
