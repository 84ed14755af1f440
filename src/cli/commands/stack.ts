import { InvalidArgumentError, type Command } from 'commander';
import {
  DEFAULT_PORTS,
  defaultStackOptions,
  kafkaBrokerCount,
  PORT_ENV,
  SERVICE_NAMES,
  stackDown,
  stackEnv,
  stackInstall,
  stackStatus,
  stackUp,
  readSecureListeners,
  scramPasswordFile,
  type SecureListeners,
  type ServiceName,
  type StackOptions,
} from '../../stack/index.js';
import {
  AUTHORIZER_ENV,
  BROKER_COUNTS,
  BROKERS_ENV,
  NODE_PORT_STEP,
  NODE_PORTS_ENV,
  parseNodePorts,
  type KafkaNodePorts,
} from '../../stack/options.js';
import { EXIT_NOT_FOUND } from '../exit-codes.js';
import { secondsOption } from '../durations.js';
import { examples } from '../help.js';

interface CommonFlags {
  cacheDir?: string;
  runDir?: string;
  kafkaPort?: number;
  kafkaControllerPort?: number;
  kafkaScramTlsPort?: number;
  kafkaMtlsPort?: number;
  kafkaOauthPort?: number;
  registryPort?: number;
  registryManagementPort?: number;
  s3Port?: number;
  jaegerOtlpPort?: number;
  jaegerQueryPort?: number;
  jaegerQueryGrpcPort?: number;
  timeout?: number;
  services?: ServiceName[];
  fresh?: boolean;
  wipe?: boolean;
  brokers?: number;
  kafkaNodePorts?: KafkaNodePorts[];
  authorizer?: boolean;
}

function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65535)
    throw new InvalidArgumentError('must be a port number (1-65535)');
  return n;
}

function parseBrokers(value: string): number {
  const n = Number(value);
  if (!(BROKER_COUNTS as readonly number[]).includes(n))
    throw new InvalidArgumentError(`must be ${BROKER_COUNTS.join(' or ')}`);
  return n;
}

function parseNodePortList(value: string): KafkaNodePorts[] {
  try {
    const pairs = parseNodePorts(value);
    for (const p of pairs) {
      parsePort(String(p.kafka));
      parsePort(String(p.controller));
    }
    return pairs;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function parseServices(value: string): ServiceName[] {
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = list.filter((s) => !(SERVICE_NAMES as readonly string[]).includes(s));
  if (list.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(`expected a comma-separated subset of ${SERVICE_NAMES.join(',')}`);
  }
  return list as ServiceName[];
}

function helpDefaults(): StackOptions {
  try {
    return defaultStackOptions();
  } catch {
    // A bad DOCSTREAM_STACK_*_PORT must not break the whole CLI; the stack commands report it.
    return { ...defaultStackOptions({ ports: { ...DEFAULT_PORTS } }), ports: { ...DEFAULT_PORTS } };
  }
}

/** A port option's help: whose port it is, and the variable that sets it as well. */
function port(what: string, key: keyof StackOptions['ports']): string {
  return `${what} (env: ${PORT_ENV[key]})`;
}

/** What `stack install` takes as well: where artifacts go, which services, how long to wait. */
function withInstallOptions(cmd: Command): Command {
  const d = helpDefaults();
  return cmd
    .option(
      '--cache-dir <dir>',
      'where downloaded artifacts are kept (env: DOCSTREAM_STACK_CACHE_DIR)',
      d.cacheDir,
    )
    .option(
      '--services <list>',
      `only these services (comma-separated, of ${SERVICE_NAMES.join(',')}; default: all but jaeger, which up, install and status take only when named, and down stops too)`,
      parseServices,
    )
    .addOption(
      secondsOption('--timeout', 'wait at most this long for each service').default(d.timeoutMs / 1000),
    );
}

function withCommonOptions(cmd: Command): Command {
  const d = helpDefaults();
  return withInstallOptions(cmd)
    .option(
      '--run-dir <dir>',
      'where pid files, logs, data and configs are kept (env: DOCSTREAM_STACK_RUN_DIR)',
      d.runDir,
    )
    .option(
      '--kafka-port <port>',
      port("port of Kafka's PLAINTEXT listener", 'kafka'),
      parsePort,
      d.ports.kafka,
    )
    .option(
      '--kafka-controller-port <port>',
      port("port of Kafka's KRaft controller listener", 'kafkaController'),
      parsePort,
      d.ports.kafkaController,
    )
    .option(
      '--kafka-scram-tls-port <port>',
      port("port of Kafka's SCRAM-over-TLS listener, which `stack env --secure` uses", 'kafkaScramTls'),
      parsePort,
      d.ports.kafkaScramTls,
    )
    .option(
      '--kafka-mtls-port <port>',
      port("port of Kafka's mutual TLS listener", 'kafkaMtls'),
      parsePort,
      d.ports.kafkaMtls,
    )
    .option(
      '--kafka-oauth-port <port>',
      port("port of Kafka's OAUTHBEARER-over-TLS listener", 'kafkaOauth'),
      parsePort,
      d.ports.kafkaOauth,
    )
    .option(
      '--registry-port <port>',
      port('HTTP port of the schema registry', 'registry'),
      parsePort,
      d.ports.registry,
    )
    .option(
      '--registry-management-port <port>',
      port('management port of the schema registry', 'registryManagement'),
      parsePort,
      d.ports.registryManagement,
    )
    .option('--s3-port <port>', port('port of the S3-compatible server', 's3'), parsePort, d.ports.s3)
    .option(
      '--jaeger-otlp-port <port>',
      port("port of Jaeger's OTLP/HTTP receiver", 'jaegerOtlp'),
      parsePort,
      d.ports.jaegerOtlp,
    )
    .option(
      '--jaeger-query-port <port>',
      port("port of Jaeger's query API and UI", 'jaegerQuery'),
      parsePort,
      d.ports.jaegerQuery,
    )
    .option(
      '--jaeger-query-grpc-port <port>',
      port("port of Jaeger's query gRPC API", 'jaegerQueryGrpc'),
      parsePort,
      d.ports.jaegerQueryGrpc,
    )
    .option(
      '--brokers <n>',
      `Kafka nodes: 1 (default), or 3 for a KRaft cluster of broker+controller nodes, replication 3 and min ISR 2, PLAINTEXT only; status and down find the layout running when it is not given (env: ${BROKERS_ENV})`,
      parseBrokers,
    )
    .option(
      '--kafka-node-ports <list>',
      `a cluster's nodes 2 and 3 as kafka:controller port pairs, comma-separated (default: node 1's ports + ${NODE_PORT_STEP} per node; env: ${NODE_PORTS_ENV})`,
      parseNodePortList,
    );
}

function toOptions(
  flags: CommonFlags,
  log: (line: string) => void = (l) => process.stdout.write(l + '\n'),
): StackOptions {
  const d = defaultStackOptions();
  const o: StackOptions = {
    cacheDir: flags.cacheDir ?? d.cacheDir,
    runDir: flags.runDir ?? d.runDir,
    ports: {
      kafka: flags.kafkaPort ?? d.ports.kafka,
      kafkaController: flags.kafkaControllerPort ?? d.ports.kafkaController,
      kafkaScramTls: flags.kafkaScramTlsPort ?? d.ports.kafkaScramTls,
      kafkaMtls: flags.kafkaMtlsPort ?? d.ports.kafkaMtls,
      kafkaOauth: flags.kafkaOauthPort ?? d.ports.kafkaOauth,
      registry: flags.registryPort ?? d.ports.registry,
      registryManagement: flags.registryManagementPort ?? d.ports.registryManagement,
      s3: flags.s3Port ?? d.ports.s3,
      jaegerOtlp: flags.jaegerOtlpPort ?? d.ports.jaegerOtlp,
      jaegerQuery: flags.jaegerQueryPort ?? d.ports.jaegerQuery,
      jaegerQueryGrpc: flags.jaegerQueryGrpcPort ?? d.ports.jaegerQueryGrpc,
    },
    timeoutMs: (flags.timeout ?? d.timeoutMs / 1000) * 1000,
    log,
  };
  const brokers = flags.brokers ?? d.brokers;
  if (brokers !== undefined) o.brokers = brokers;
  const nodePorts = flags.kafkaNodePorts ?? d.nodePorts;
  if (nodePorts) o.nodePorts = nodePorts;
  if (flags.services) o.services = flags.services;
  if (flags.fresh) o.fresh = true;
  if (flags.wipe) o.wipe = true;
  if (flags.authorizer ?? d.authorizer) o.authorizer = true;
  return o;
}

/** Exports for the SCRAM-over-TLS listener (after the plain ones, so they win), the others as comments. */
function secureEnv(s: SecureListeners): string[] {
  return [
    `# SCRAM-SHA-512 over TLS, trusting the stack's CA (${s.caFile}):`,
    `export DOCSTREAM_KAFKA_BROKERS=${s.scramTls.bootstrap}`,
    `export DOCSTREAM_KAFKA_SSL_CA_FILE=${s.caFile}`,
    'export DOCSTREAM_KAFKA_SASL_MECHANISM=scram-sha-512',
    `export DOCSTREAM_KAFKA_SASL_USERNAME=${s.scramTls.username}`,
    `export DOCSTREAM_KAFKA_SASL_PASSWORD_FILE=${scramPasswordFile(s)}`,
    '# mutual TLS instead:',
    `#   DOCSTREAM_KAFKA_BROKERS=${s.mtls.bootstrap} DOCSTREAM_KAFKA_SSL_CERT_FILE=${s.mtls.certFile} DOCSTREAM_KAFKA_SSL_KEY_FILE=${s.mtls.keyFile} (and no SASL)`,
    '# OAUTHBEARER instead (a token endpoint signing with the stack key: src/stack/oidc-server.ts):',
    `#   DOCSTREAM_KAFKA_BROKERS=${s.oauth.bootstrap} DOCSTREAM_KAFKA_SASL_MECHANISM=oauthbearer DOCSTREAM_KAFKA_OAUTH_CLIENT_ID=${s.oauth.clientId} DOCSTREAM_KAFKA_OAUTH_TOKEN_URL=...`,
  ];
}

/** `docstream stack up|down|status|env|install`: the local Kafka + schema registry + S3 stack. */
export function registerStackCommand(program: Command): void {
  const stack = program
    .command('stack')
    .description('Run a local Kafka, schema registry and S3-compatible store (no Docker needed).');
  examples(stack, 'docstream stack up', 'eval "$(docstream stack env)"', 'docstream stack down --wipe');

  const up = withCommonOptions(stack.command('up'))
    .description('Start the stack (idempotent), detached, and wait until it is healthy.')
    .option('--fresh', 'stop the selected services and wipe their data first')
    .option(
      '--authorizer',
      `Kafka with its StandardAuthorizer on (single node): the plain listener is a super user's, the SCRAM-over-TLS users docstream and docstream-operator get what ACLs grant; a running broker keeps its settings until restarted (env: ${AUTHORIZER_ENV}=true)`,
    )
    .action(async (flags: CommonFlags) => {
      const o = toOptions(flags);
      const res = await stackUp(o);
      o.log(
        res.started.length === 0
          ? 'stack: already running, nothing to start'
          : `stack: up (${res.started.join(', ')} started${res.alreadyRunning.length ? `; ${res.alreadyRunning.join(', ')} already running` : ''})`,
      );
      o.log(`stack: logs and data in ${o.runDir}; \`docstream stack env\` prints the environment to use`);
    });
  examples(
    up,
    'docstream stack up',
    'docstream stack up --services kafka,registry --kafka-port 19092',
    'docstream stack up --services kafka --brokers 3 --run-dir /tmp/cluster --kafka-port 19092',
  );

  const down = withCommonOptions(stack.command('down'))
    .description('Stop what `stack up` started.')
    .option(
      '--wipe',
      "then remove the selected services' data, logs, configs and keys from the run dir, to start over",
    )
    .action(async (flags: CommonFlags) => {
      const o = toOptions(flags);
      await stackDown(o);
      if (o.wipe) o.log('stack: wiped; the next `docstream stack up` starts afresh');
    });
  examples(down, 'docstream stack down', 'docstream stack down --services s3 --wipe');

  const status = withCommonOptions(stack.command('status'))
    .description("Show each service's pid, port and health (exit code 3 when not all are healthy).")
    .option('--json', 'print the services as JSON (for scripts)')
    .action(async (flags: CommonFlags & { json?: boolean }) => {
      const { ok, services } = await stackStatus(
        toOptions(flags, flags.json ? (l) => process.stderr.write(`${l}\n`) : undefined),
      );
      if (flags.json) process.stdout.write(`${JSON.stringify({ ok, services }, null, 2)}\n`);
      if (!ok) process.exitCode = EXIT_NOT_FOUND;
    });
  examples(status, 'docstream stack status', 'docstream stack status --json || docstream stack up');

  const env = withCommonOptions(stack.command('env'))
    .description('Print exports that point docstream at the stack: eval "$(docstream stack env)".')
    .option(
      '--secure',
      "point at Kafka's SCRAM-over-TLS listener instead (the other secured listeners follow as comments)",
    )
    .action((flags: CommonFlags & { secure?: boolean }) => {
      const o = toOptions(flags);
      const lines = stackEnv({ ...o, brokers: kafkaBrokerCount(o) });
      if (flags.secure) {
        const secure = readSecureListeners(o);
        if (!secure) {
          throw new Error('the stack has not been started from this run dir yet: run `docstream stack up`');
        }
        lines.push(...secureEnv(secure));
      }
      process.stdout.write(lines.join('\n') + '\n');
    });
  examples(env, 'eval "$(docstream stack env)"', 'docstream stack env --secure > stack.env');

  const install = withInstallOptions(stack.command('install'))
    .description('Download and install the artifacts only (for CI caches).')
    .action(async (flags: CommonFlags) => {
      await stackInstall(toOptions(flags));
    });
  examples(
    install,
    'docstream stack install',
    'docstream stack install --cache-dir ~/.cache/docstream --services kafka',
  );
}
