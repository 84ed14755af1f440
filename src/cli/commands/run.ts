import type { Command } from 'commander';
import { Connector, StartupStopped } from '../../connector/connector.js';
import { createLogger } from '../../observability/logger.js';
import { startOpsServer, type OpsServer } from '../../observability/server.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { examples } from '../help.js';
import { UsageError } from '../exit-codes.js';
import { checkedOptimisationsOff, OPTIMISATION_NAMES, type Optimisation } from '../../util/optimisations.js';

/** How recent an answer to one of the connector's own calls must be for /readyz's api check to trust it. */
const API_ANSWER_FRESH_MS = 10_000;

/** Runs a connector (or only its webhook receiver) until SIGTERM/SIGINT, then stops it cleanly. */
async function serve(opts: ConfigFlags, consume: boolean): Promise<void> {
  let off: Optimisation[];
  try {
    off = checkedOptimisationsOff();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const config = configOf(opts);
  const logger = createLogger({ level: config.log.level, format: config.log.format });
  // Signals are heard from the start: one during start-up ends it after the step under way (a
  // supervisor's SIGTERM to a starting instance leaves no member behind in the group); a second one
  // during start-up (one waiting on an unreachable Kafka) exits at once.
  let started = false;
  let stopping = false;
  const stopDuringStartup = new AbortController();
  let finish: (exitCode: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (started) return;
      logger.warn({ signal }, 'second signal during start-up: exiting without stopping cleanly');
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    logger.info(
      { signal },
      started ? 'shutting down' : 'shutting down once the start-up step under way ends',
    );
    stopDuringStartup.abort();
    finish(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Once, at start: which tuning runs and which is switched off (docs/optimisations.md).
  logger.info(
    { on: OPTIMISATION_NAMES.filter((name) => !off.includes(name)), off },
    off.length === 0 ? 'optimisations: all on' : `optimisations switched off: ${off.join(', ')}`,
  );
  let connector: Connector;
  try {
    connector = await Connector.start({
      config,
      logger,
      consume,
      stopDuringStartup: stopDuringStartup.signal,
      // The consumer gave up restarting: stop and exit non-zero for the supervisor.
      onFatal: () => finish(1),
    });
  } catch (err) {
    if (err instanceof StartupStopped) {
      logger.info('stopped cleanly during start-up');
      logger.flush();
      process.exit(0);
    }
    // Named step and cause (StartupError); a supervisor restarts the process.
    logger.fatal({ err: (err as Error).message }, 'start-up failed');
    logger.flush();
    process.exit(1);
  }
  started = true;
  connector.metrics.inFlightLimit.set(config.connector.maxInFlight);
  let ops: OpsServer | null = null;
  if (config.http.port > 0) {
    ops = await startOpsServer({
      host: config.http.host,
      port: config.http.port,
      registry: connector.metrics.registry,
      checks: {
        kafka: async () => connector.kafkaReadiness(),
        ...(consume
          ? {
              partitions: async () => {
                const { assigned: n, restored } = connector.isReady();
                return {
                  ok: n > 0 && restored,
                  detail: `${n} input partitions assigned${restored ? '' : ', state restoring'}`,
                };
              },
            }
          : {}),
        api: async () => {
          const health = connector.client.health;
          if (!health.available) {
            const s = Math.round(health.unavailableForMs() / 1000);
            return {
              ok: false,
              detail: `the API has been unavailable for ${s} s (5xx, no answer, or token endpoint down): input paused, ${connector.engine.inFlight} documents waiting`,
            };
          }
          // A call answered lately says the API is reachable; only an instance that sent nothing
          // lately (idle input) asks the API itself, so a frequent probe adds no API traffic.
          if (health.answeredWithin(API_ANSWER_FRESH_MS)) return { ok: true };
          try {
            await fetch(connector.client.baseUrl, { signal: AbortSignal.timeout(2000) });
            return { ok: true };
          } catch (err) {
            return { ok: false, detail: (err as Error).message };
          }
        },
      },
    });
    logger.info({ url: ops.url }, 'metrics and health endpoints ready');
  }
  if (!stopping) logger.info(consume ? 'connector running' : 'webhook receiver running');
  const exitCode = await stopped;
  // The stop bounds each of its steps by connector.shutdownTimeoutMs; should anything still hold the
  // process after it (a socket, a library's timer), it exits anyway.
  setTimeout(() => {
    logger.warn('stop took longer than connector.shutdownTimeoutMs; exiting');
    logger.flush();
    process.exit(exitCode);
  }, config.connector.shutdownTimeoutMs + 1000).unref();
  await connector.stop();
  await ops?.close();
  logger.info(exitCode === 0 ? 'stopped cleanly' : 'stopped after a fatal consumer failure');
  logger.flush();
  process.exit(exitCode);
}

const CONFIG_HELP =
  'Configuration comes from the -c files (default: $DOCSTREAM_CONFIG or config/docstream.json), then DOCSTREAM_* ' +
  'variables (secrets from …_FILE); see `docstream config docs`. With no configuration it uses the local stack and the sandbox.';

export function registerRunCommand(program: Command): void {
  const run = program
    .command('run')
    .summary('Run the connector.')
    .description(
      'Run the connector: consume documents.arrived, drive each document through the API, publish results. ' +
        'With webhooks.enabled it also serves the Adaptive Decision webhook receiver. ' +
        CONFIG_HELP,
    );
  addConfigOption(run).action((opts: ConfigFlags) => serve(opts, true));
  examples(
    run,
    'docstream run',
    'docstream run -c config/production.json -c config/production.env',
    'DOCSTREAM_API_CLIENT_SECRET_FILE=/run/secrets/api docstream run -c prod.json',
  );

  const webhooks = program
    .command('webhooks')
    .summary('Serve only the Adaptive Decision webhook receiver.')
    .description(
      'Serve only the Adaptive Decision webhook receiver: verify each delivery, deduplicate it and record it in the ' +
        'webhooks topic (topics.webhooks), answering 2xx once Kafka has it; the connector instance running the ' +
        'document reads that record, fetches the decision and publishes it. ' +
        CONFIG_HELP,
    );
  addConfigOption(webhooks).action((opts: ConfigFlags) => serve(opts, false));
  examples(
    webhooks,
    'docstream webhooks -c prod.json',
    'DOCSTREAM_WEBHOOKS_SECRETS_FILE=/run/secrets/whsec docstream webhooks -c prod.json',
  );
}
