import { defaultCacheDir, defaultRunDir } from './paths.js';

export const SERVICE_NAMES = ['kafka', 'registry', 's3'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

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
  log: (line: string) => void;
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

export function defaultStackOptions(overrides: Partial<StackOptions> = {}): StackOptions {
  return {
    cacheDir: defaultCacheDir(),
    runDir: defaultRunDir(),
    ports: defaultPorts(),
    timeoutMs: 180_000,
    log: (line) => process.stdout.write(line + '\n'),
    ...overrides,
  };
}

export function selectedServices(opts: Pick<StackOptions, 'services'>): ServiceName[] {
  const wanted = opts.services && opts.services.length > 0 ? opts.services : SERVICE_NAMES;
  return SERVICE_NAMES.filter((s) => wanted.includes(s));
}

/** Problems with the options, as messages (empty when valid). */
export function validateOptions(opts: StackOptions): string[] {
  const problems: string[] = [];
  const seen = new Map<number, string>();
  for (const [name, port] of Object.entries(opts.ports)) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      problems.push(`port ${name} must be an integer between 1 and 65535 (got ${String(port)})`);
      continue;
    }
    const other = seen.get(port);
    if (other) problems.push(`ports ${other} and ${name} are both ${port}`);
    seen.set(port, name);
  }
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0)
    problems.push('timeout must be a positive number');
  for (const s of opts.services ?? []) {
    if (!(SERVICE_NAMES as readonly string[]).includes(s)) {
      problems.push(`unknown service '${s}' (known: ${SERVICE_NAMES.join(', ')})`);
    }
  }
  return problems;
}
