import { defaultCacheDir, defaultRunDir } from './paths.js';

export const SERVICE_NAMES = ['kafka', 'registry', 's3', 'jaeger'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** What `up`, `install` and `status` take without `--services`: Jaeger (a Go build) only when asked for. */
export const DEFAULT_SERVICES: readonly ServiceName[] = ['kafka', 'registry', 's3'];

export interface StackPorts {
  kafka: number;
  kafkaController: number;
  /** Kafka's secured listeners: SCRAM over TLS, mutual TLS, OAUTHBEARER over TLS (`secure.ts`). */
  kafkaScramTls: number;
  kafkaMtls: number;
  kafkaOauth: number;
  registry: number;
  registryManagement: number;
  s3: number;
  /** Jaeger's OTLP/HTTP receiver, its query API and UI, and its query gRPC API. */
  jaegerOtlp: number;
  jaegerQuery: number;
  jaegerQueryGrpc: number;
}

export interface StackOptions {
  /** Downloaded artifacts (jars, the registry, Python packages). */
  cacheDir: string;
  /** Pid files, logs, data directories and generated configs. */
  runDir: string;
  ports: StackPorts;
  /** How long to wait for each service to become healthy (and for locks). */
  timeoutMs: number;
  /** Only these services (default: all). */
  services?: ServiceName[];
  /** `up` only: stop the selected services and wipe their data first. */
  fresh?: boolean;
  /** `down` only: once stopped, remove the selected services' directories (data, logs, configs, keys). */
  wipe?: boolean;
  /**
   * Kafka nodes: 1 (the default, a single broker+controller with the secured listeners too) or 3, a
   * KRaft cluster of three broker+controller nodes with PLAINTEXT listeners only (`services.ts`).
   * Unset, `status` and `down` take the layout the run dir runs.
   */
  brokers?: number;
  /** A cluster's nodes 2.. ports (node 1 has `ports.kafka` and `ports.kafkaController`); see `kafkaNodePorts`. */
  nodePorts?: KafkaNodePorts[];
  /**
   * `up` only, single node: Kafka's StandardAuthorizer on. The PLAINTEXT and controller listeners are
   * the admin's (`User:ANONYMOUS` is a super user); the SCRAM users of the SCRAM-over-TLS listener
   * (`docstream`, `docstream-operator`) get only what ACLs grant them (`secure.ts`).
   */
  authorizer?: boolean;
  log: (line: string) => void;
}

/** One Kafka node's listeners: PLAINTEXT (clients and replication) and the KRaft controller's. */
export interface KafkaNodePorts {
  kafka: number;
  controller: number;
}

/** The sizes `--brokers` accepts: one node, or a cluster that survives the loss of one node. */
export const BROKER_COUNTS = [1, 3] as const;

/** A cluster's node n (from 1) listens on node 1's ports + NODE_PORT_STEP × (n - 1) unless told otherwise. */
export const NODE_PORT_STEP = 10;

export const BROKERS_ENV = 'DOCSTREAM_STACK_BROKERS';
export const NODE_PORTS_ENV = 'DOCSTREAM_STACK_KAFKA_NODE_PORTS';
export const AUTHORIZER_ENV = 'DOCSTREAM_STACK_KAFKA_AUTHORIZER';

/** DOCSTREAM_STACK_KAFKA_AUTHORIZER: `true`/`1` on, `false`/`0`/unset off. */
export function authorizerFromEnv(
  env: Record<string, string | undefined> = process.env,
): boolean | undefined {
  const raw = env[AUTHORIZER_ENV];
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new Error(`${AUTHORIZER_ENV}=${raw} is not true, false, 1 or 0`);
}

export const DEFAULT_PORTS: StackPorts = {
  kafka: 9092,
  kafkaController: 9093,
  kafkaScramTls: 9094,
  kafkaMtls: 9095,
  kafkaOauth: 9096,
  registry: 8081,
  registryManagement: 9001,
  s3: 9002,
  jaegerOtlp: 4318,
  jaegerQuery: 16686,
  jaegerQueryGrpc: 16685,
};

/** The environment variable that sets each port (the CLI's help names them). */
export const PORT_ENV: Record<keyof StackPorts, string> = {
  kafka: 'DOCSTREAM_STACK_KAFKA_PORT',
  kafkaController: 'DOCSTREAM_STACK_KAFKA_CONTROLLER_PORT',
  kafkaScramTls: 'DOCSTREAM_STACK_KAFKA_SCRAM_TLS_PORT',
  kafkaMtls: 'DOCSTREAM_STACK_KAFKA_MTLS_PORT',
  kafkaOauth: 'DOCSTREAM_STACK_KAFKA_OAUTH_PORT',
  registry: 'DOCSTREAM_STACK_REGISTRY_PORT',
  registryManagement: 'DOCSTREAM_STACK_REGISTRY_MANAGEMENT_PORT',
  s3: 'DOCSTREAM_STACK_S3_PORT',
  jaegerOtlp: 'DOCSTREAM_STACK_JAEGER_OTLP_PORT',
  jaegerQuery: 'DOCSTREAM_STACK_JAEGER_QUERY_PORT',
  jaegerQueryGrpc: 'DOCSTREAM_STACK_JAEGER_QUERY_GRPC_PORT',
};

/** Default ports, each overridable by an environment variable (DOCSTREAM_STACK_KAFKA_PORT, ...). */
export function defaultPorts(env: Record<string, string | undefined> = process.env): StackPorts {
  const ports = { ...DEFAULT_PORTS };
  for (const key of Object.keys(PORT_ENV) as Array<keyof StackPorts>) {
    const name = PORT_ENV[key];
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < 1 || n > 65535)
      throw new Error(`${name}=${raw} is not a port number (1-65535)`);
    ports[key] = n;
  }
  return ports;
}

/** `19102:19103,19112:19113`: nodes 2.. as kafka:controller pairs. */
export function parseNodePorts(text: string): KafkaNodePorts[] {
  return text.split(',').map((pair) => {
    const m = /^\s*(\d+):(\d+)\s*$/.exec(pair);
    if (!m) throw new Error(`'${pair}' is not a kafka:controller port pair (e.g. 19102:19103)`);
    return { kafka: Number(m[1]), controller: Number(m[2]) };
  });
}

/** The cluster size from DOCSTREAM_STACK_BROKERS, undefined when unset. */
export function brokersFromEnv(env: Record<string, string | undefined> = process.env): number | undefined {
  const raw = env[BROKERS_ENV];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw new Error(`${BROKERS_ENV}=${raw} is not a number of brokers`);
  return Number(raw);
}

export function defaultStackOptions(overrides: Partial<StackOptions> = {}): StackOptions {
  const o: StackOptions = {
    cacheDir: defaultCacheDir(),
    runDir: defaultRunDir(),
    ports: defaultPorts(),
    timeoutMs: 180_000,
    log: (line) => process.stdout.write(line + '\n'),
  };
  const brokers = brokersFromEnv();
  if (brokers !== undefined) o.brokers = brokers;
  const nodePorts = process.env[NODE_PORTS_ENV];
  if (nodePorts) o.nodePorts = parseNodePorts(nodePorts);
  if (authorizerFromEnv()) o.authorizer = true;
  return { ...o, ...overrides };
}

/** Every Kafka node's ports, node 1 first: one entry for the single node, `brokers` for a cluster. */
export function kafkaNodePorts(o: Pick<StackOptions, 'ports' | 'brokers' | 'nodePorts'>): KafkaNodePorts[] {
  const n = o.brokers ?? 1;
  const nodes: KafkaNodePorts[] = [{ kafka: o.ports.kafka, controller: o.ports.kafkaController }];
  for (let i = 1; i < n; i++) {
    nodes.push(
      o.nodePorts?.[i - 1] ?? {
        kafka: o.ports.kafka + NODE_PORT_STEP * i,
        controller: o.ports.kafkaController + NODE_PORT_STEP * i,
      },
    );
  }
  return nodes;
}

/** The services named, else the default ones; `down` without a list stops every service, Jaeger too. */
export function selectedServices(opts: Pick<StackOptions, 'services'>, all = false): ServiceName[] {
  const wanted =
    opts.services && opts.services.length > 0 ? opts.services : all ? SERVICE_NAMES : DEFAULT_SERVICES;
  return SERVICE_NAMES.filter((s) => wanted.includes(s));
}

/** Problems with the options, as messages (empty when valid). */
export function validateOptions(opts: StackOptions): string[] {
  const problems: string[] = [];
  const seen = new Map<number, string>();
  const brokers = opts.brokers ?? 1;
  const cluster = (BROKER_COUNTS as readonly number[]).includes(brokers) && brokers > 1;
  if (!(BROKER_COUNTS as readonly number[]).includes(brokers))
    problems.push(`brokers must be ${BROKER_COUNTS.join(' or ')} (got ${String(opts.brokers)})`);
  if (opts.nodePorts && cluster && opts.nodePorts.length !== brokers - 1)
    problems.push(
      `a ${brokers}-node cluster takes the ports of nodes 2-${brokers}: ${brokers - 1} kafka:controller pairs (got ${opts.nodePorts.length})`,
    );
  const named = Object.entries(opts.ports);
  if (cluster) {
    kafkaNodePorts(opts)
      .slice(1)
      .forEach((p, i) => {
        named.push([`kafka node ${i + 2}`, p.kafka], [`kafka node ${i + 2} controller`, p.controller]);
      });
  }
  for (const [name, port] of named) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      problems.push(`port ${name} must be an integer between 1 and 65535 (got ${String(port)})`);
      continue;
    }
    const other = seen.get(port);
    if (other) problems.push(`ports ${other} and ${name} are both ${port}`);
    seen.set(port, name);
  }
  if (opts.authorizer && cluster)
    problems.push(
      'the authorizer needs the single node (its principals come from the SCRAM-over-TLS listener): drop --brokers',
    );
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0)
    problems.push('timeout must be a positive number');
  for (const s of opts.services ?? []) {
    if (!(SERVICE_NAMES as readonly string[]).includes(s)) {
      problems.push(`unknown service '${s}' (known: ${SERVICE_NAMES.join(', ')})`);
    }
  }
  return problems;
}
