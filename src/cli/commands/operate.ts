/**
 * `docstream inspect <id>` and `docstream status`: one document, and the group, from the topics and
 * the members' metrics endpoints (`src/operator/inspect.ts`, `src/operator/status.ts`).
 */
import type { Command } from 'commander';
import { loadConfig } from '../../config/index.js';
import { kafkaClientOf } from '../../kafka/client-from-config.js';
import { registryOf } from '../../serde/registry-from-config.js';
import { silentLogger } from '../../observability/logger.js';
import { formatInspection, inspect, inspectIdProblem } from '../../operator/inspect.js';
import { formatStatus, groupStatus } from '../../operator/status.js';
import { errorText } from '../../observability/redact.js';
import { exitCodeOf, UsageError } from '../exit-codes.js';

const CONFIG_OPTION = [
  '-c, --config <files>',
  'comma-separated configuration files (instead of $DOCSTREAM_CONFIG)',
] as const;

function fail(name: string): (err: unknown) => never {
  return (err) => {
    process.stderr.write(`docstream ${name}: ${errorText(err)}\n`);
    process.exit(exitCodeOf(err));
  };
}

export function registerOperateCommands(program: Command): void {
  program
    .command('inspect <id>')
    .summary('Find one document in the topics by event id or submission id.')
    .description(
      'Find one document by event id or submission id in the topics (no instance needs to run): its input ' +
        'partition and the member owning it, its state (status, submission, results published, when), ' +
        'its result events and its dead letters. It exits with code 3 when nothing matches.',
    )
    .option(...CONFIG_OPTION)
    .option('--json', 'print JSON (for scripts)')
    .action(async (id: string, flags: { config?: string; json?: boolean }) => {
      const problem = inspectIdProblem(id);
      if (problem !== null) fail('inspect')(new UsageError(problem));
      const config = loadConfig(flags.config ? { files: flags.config.split(',') } : {});
      const kafka = kafkaClientOf(config, { clientId: `${config.kafka.clientId}-inspect` });
      const admin = kafka.admin();
      try {
        await admin.connect();
        const found = await inspect(id, {
          kafka,
          admin,
          decoder: registryOf(config, silentLogger),
          config,
          logger: silentLogger,
        });
        process.stdout.write(`${flags.json ? JSON.stringify(found, null, 2) : formatInspection(found)}\n`);
        if (found.matched === null) process.exitCode = 3;
      } catch (err) {
        fail('inspect')(err);
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    });

  program
    .command('status')
    .summary("Show the connector group's members, partitions, lag and in-flight documents.")
    .description(
      "Show the connector group's members with each one's input partitions and lag and, from each member's " +
        'metrics endpoint (announced when http.port is fixed), its documents in flight, API share, limiter rate ' +
        'and readiness.',
    )
    .option(...CONFIG_OPTION)
    .option('--json', 'print JSON (for scripts)')
    .option('--no-metrics', "do not contact the members' metrics endpoints")
    .option(
      '--metrics-endpoints <list>',
      "host:port of members' metrics endpoints, matched to members by host (instead of what they announce)",
      (v: string) => v.split(',').filter(Boolean),
    )
    .action(
      async (flags: { config?: string; json?: boolean; metrics?: boolean; metricsEndpoints?: string[] }) => {
        const config = loadConfig(flags.config ? { files: flags.config.split(',') } : {});
        const kafka = kafkaClientOf(config, { clientId: `${config.kafka.clientId}-status` });
        const admin = kafka.admin();
        try {
          await admin.connect();
          const status = await groupStatus(admin, config, {
            metrics: flags.metrics !== false,
            ...(flags.metricsEndpoints ? { endpoints: flags.metricsEndpoints } : {}),
          });
          process.stdout.write(`${flags.json ? JSON.stringify(status, null, 2) : formatStatus(status)}\n`);
        } catch (err) {
          fail('status')(err);
        } finally {
          await admin.disconnect().catch(() => undefined);
        }
      },
    );
}
