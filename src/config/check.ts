/**
 * `docstream config check`: validates a configuration file against the spec and reports every
 * problem at once (the loader stops at the first), so a user fixing a file sees all wrong keys.
 * JSON files hold configuration sections; `.env` files hold `DOCSTREAM_*` variables (as given to
 * `docker run --env-file` or systemd's EnvironmentFile), where secrets come from `…_FILE` paths.
 */
import fs from 'node:fs';
import path from 'node:path';
import { resolveAddress } from '../client/cells.js';
import { ConfigError, coerce } from './load.js';
import { kafkaTlsOn } from './effective.js';
import { parseStartFrom } from './start-from.js';
import { isLoopbackHost, plaintextBrokerProblem } from './transport.js';
import { CONFIG_GRADES } from './grades.js';
import { CONFIG_SPEC, RESERVED_ENV, envName, type FieldSpec } from './spec.js';

interface CheckResult {
  /** Each problem names the key (or variable) and, where it has one, the line. */
  errors: string[];
  /** Allowed but risky, e.g. a secret written into a file. */
  warnings: string[];
  /** How many keys or variables were read. */
  keys: number;
  /** The values the file set, as `section.key` (a secret from a `…_FILE` as `(from file)`). */
  values?: Map<string, unknown>;
}

const sections = CONFIG_SPEC as unknown as Record<string, Record<string, FieldSpec>>;

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** The closest known name, when it is close enough to be a typo. */
function suggest(name: string, known: Iterable<string>): string {
  let best = '';
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 4)) ? ` (did you mean '${best}'?)` : '';
}

function coerceInto(
  result: CheckResult,
  spec: FieldSpec,
  value: unknown,
  where: string,
): { ok: boolean; value?: unknown } {
  try {
    return { ok: true, value: coerce(spec, value, where) };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    result.errors.push(err.message);
    return { ok: false };
  }
}

/** Checks that hold across keys; `values` has only what the file set, as `section.key`. */
function crossChecks(result: CheckResult, values: Map<string, unknown>, origin: string): void {
  const cells = values.get('api.cells');
  if (cells !== undefined) {
    const isAddress = (v: unknown) =>
      typeof v === 'object' && v !== null && typeof (v as { baseUrl?: unknown }).baseUrl === 'string';
    if (typeof cells !== 'object' || cells === null || Array.isArray(cells)) {
      result.errors.push(`${origin}: api.cells: expected an object of cell name to {"baseUrl", "tokenUrl"}`);
    } else {
      for (const [name, address] of Object.entries(cells)) {
        if (!isAddress(address)) {
          result.errors.push(`${origin}: api.cells.${name}: expected {"baseUrl", "tokenUrl"}`);
        }
      }
    }
  }
  const cell = values.get('api.cell');
  if (typeof cell === 'string' && cell !== '') {
    try {
      resolveAddress({ cell, cells: (cells ?? {}) as Record<string, { baseUrl: string }> });
    } catch (err) {
      result.errors.push(`${origin}: api.cell: ${(err as Error).message}`);
    }
  }
  const mechanism = values.get('kafka.saslMechanism');
  if (
    typeof mechanism === 'string' &&
    ['plain', 'scram-sha-256', 'scram-sha-512'].includes(mechanism) &&
    !values.get('kafka.saslUsername')
  ) {
    result.errors.push(`${origin}: kafka.saslMechanism is ${mechanism} but kafka.saslUsername is not set`);
  }
  if (mechanism === 'oauthbearer') {
    for (const key of ['kafka.oauthTokenUrl', 'kafka.oauthClientId']) {
      if (!values.get(key))
        result.errors.push(`${origin}: kafka.saslMechanism is oauthbearer but ${key} is not set`);
    }
  }
  const setting = (section: 'kafka', key: string): number => {
    const value = values.get(`${section}.${key}`);
    if (typeof value === 'number') return value;
    return (sections[section]![key] as { default: number }).default;
  };
  const session = setting('kafka', 'sessionTimeoutMs');
  const heartbeat = setting('kafka', 'heartbeatIntervalMs');
  if (heartbeat >= session) {
    result.errors.push(
      `${origin}: kafka.heartbeatIntervalMs (${heartbeat}) must be below kafka.sessionTimeoutMs (${session}); a third of it or less`,
    );
  } else if (heartbeat * 3 > session) {
    result.warnings.push(
      `${origin}: kafka.heartbeatIntervalMs (${heartbeat}) is over a third of kafka.sessionTimeoutMs (${session}): one lost heartbeat can cost the member its partitions`,
    );
  }
  const startFrom = values.get('connector.startFrom');
  if (typeof startFrom === 'string') {
    try {
      parseStartFrom(startFrom, 0);
    } catch (err) {
      result.errors.push(`${origin}: ${(err as Error).message}`);
    }
  }
  const brokers = values.get('kafka.brokers');
  if (Array.isArray(brokers)) {
    const tls = kafkaTlsOn({
      ssl: values.get('kafka.ssl') === true,
      sslCaFile: String(values.get('kafka.sslCaFile') ?? ''),
      sslCertFile: String(values.get('kafka.sslCertFile') ?? ''),
      sslKeyFile: String(values.get('kafka.sslKeyFile') ?? ''),
    });
    const problem = plaintextBrokerProblem(brokers as string[], tls);
    if (problem) result.errors.push(`${origin}: kafka.brokers: ${problem}`);
  }
  const baseUrl = values.get('api.baseUrl');
  if (
    values.get('api.clientSecret') === SANDBOX_SECRET &&
    typeof baseUrl === 'string' &&
    !isSandboxAddress(baseUrl)
  ) {
    result.errors.push(
      `${origin}: api.clientSecret is the sandbox's public secret but api.baseUrl (${baseUrl}) is not the local sandbox: set your client's secret, from a file (DOCSTREAM_API_CLIENT_SECRET_FILE)`,
    );
  }
  for (const [cert, key] of [
    ['kafka.sslCertFile', 'kafka.sslKeyFile'],
    ['registry.certFile', 'registry.keyFile'],
  ] as const) {
    if (Boolean(values.get(cert)) !== Boolean(values.get(key))) {
      result.errors.push(`${origin}: ${cert} and ${key} go together (a client certificate and its key)`);
    }
  }
}

/** The sandbox's public client secret (the default): fine only against the sandbox on this machine. */
const SANDBOX_SECRET = (sections.api!.clientSecret as { default: string }).default;

function isSandboxAddress(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}

/** A configuration as loaded (every key, defaults included), for `readinessProblems`. */
export interface EffectiveSettings {
  kafka: { brokers: string[]; ssl: boolean; sslCaFile: string; sslCertFile: string; sslKeyFile: string };
  registry: { caFile: string; certFile: string; keyFile: string };
  api: { baseUrl: string; clientSecret: string; caFile?: string };
}

/** The CA, certificate and key files a configuration names, by key (unset ones as ''). */
export function namedFiles(config: EffectiveSettings): Array<[string, string]> {
  return [
    ['kafka.sslCaFile', config.kafka.sslCaFile],
    ['kafka.sslCertFile', config.kafka.sslCertFile],
    ['kafka.sslKeyFile', config.kafka.sslKeyFile],
    ['registry.caFile', config.registry.caFile],
    ['registry.certFile', config.registry.certFile],
    ['registry.keyFile', config.registry.keyFile],
    ['api.caFile', config.api.caFile ?? ''],
  ];
}

/**
 * What keeps the effective configuration (files and environment, as `run` loads it here) from
 * working against a real deployment: files it names that do not exist on this machine, brokers
 * off this machine over plaintext, the sandbox's public secret sent to an API that is not it.
 */
export function readinessProblems(config: EffectiveSettings): string[] {
  const problems: string[] = [];
  for (const [key, file] of namedFiles(config)) {
    if (file !== '' && !fs.existsSync(file)) problems.push(`${key}: ${file} does not exist on this machine`);
  }
  const tls = kafkaTlsOn(config.kafka);
  const plaintext = plaintextBrokerProblem(config.kafka.brokers, tls);
  if (plaintext) problems.push(`kafka.brokers: ${plaintext}`);
  if (config.api.clientSecret === SANDBOX_SECRET && !isSandboxAddress(config.api.baseUrl)) {
    problems.push(
      `api.clientSecret: the sandbox's public secret is sent to ${config.api.baseUrl}, which is not the local sandbox: set your client's secret (DOCSTREAM_API_CLIENT_SECRET_FILE)`,
    );
  }
  return problems;
}

function checkJson(text: string, origin: string): CheckResult {
  const result: CheckResult = { errors: [], warnings: [], keys: 0 };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    result.errors.push(`${origin}: invalid JSON (${(err as Error).message})`);
    return result;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    result.errors.push(`${origin}: the configuration must be a JSON object of sections`);
    return result;
  }
  const values = new Map<string, unknown>();
  for (const [section, fields] of Object.entries(parsed)) {
    const known = sections[section];
    if (!known) {
      result.errors.push(
        `${origin}: unknown configuration section '${section}'${suggest(section, Object.keys(sections))}`,
      );
      continue;
    }
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      result.errors.push(`${origin}: section '${section}' must be an object`);
      continue;
    }
    for (const [key, value] of Object.entries(fields)) {
      result.keys++;
      const spec = Object.hasOwn(known, key) ? known[key] : undefined;
      if (!spec) {
        result.errors.push(
          `${origin}: unknown configuration key '${section}.${key}'` +
            suggest(
              `${section}.${key}`,
              Object.keys(known).map((k) => `${section}.${k}`),
            ),
        );
        continue;
      }
      const coerced = coerceInto(result, spec, value, `${origin}: ${section}.${key}`);
      if (!coerced.ok) continue;
      values.set(`${section}.${key}`, coerced.value);
      const empty = coerced.value === '' || (Array.isArray(coerced.value) && coerced.value.length === 0);
      if (spec.secret && !empty) {
        result.warnings.push(
          `${origin}: ${section}.${key} is a secret written into the file; ` +
            `prefer ${envName(section, key)}_FILE pointing at a file only docstream can read`,
        );
      }
    }
  }
  crossChecks(result, values, origin);
  result.values = values;
  return result;
}

/** Parses `NAME=value` lines (comments, blank lines and a leading `export` allowed). */
function checkEnv(text: string, origin: string): CheckResult {
  const result: CheckResult = { errors: [], warnings: [], keys: 0 };
  const known = new Map<string, [string, string, FieldSpec, boolean]>();
  for (const [section, fields] of Object.entries(sections)) {
    for (const [key, spec] of Object.entries(fields)) {
      known.set(envName(section, key), [section, key, spec, false]);
      if (spec.secret) known.set(`${envName(section, key)}_FILE`, [section, key, spec, true]);
    }
  }
  const values = new Map<string, unknown>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const where = `${origin}:${index + 1}`;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match) {
      result.errors.push(`${where}: expected NAME=value`);
      return;
    }
    const [, variable, rawValue] = match as unknown as [string, string, string];
    const value = rawValue.replace(/^(['"])(.*)\1$/, '$2');
    if (!variable.startsWith('DOCSTREAM_')) return; // NODE_EXTRA_CA_CERTS and the like pass through
    if (RESERVED_ENV.some((r) => variable === r || (r.endsWith('_') && variable.startsWith(r)))) return;
    result.keys++;
    const entry = known.get(variable);
    if (!entry) {
      result.errors.push(
        `${where}: unknown configuration variable ${variable}${suggest(variable, known.keys())}`,
      );
      return;
    }
    const [section, key, spec, isFile] = entry;
    if (isFile) {
      // The secret file exists where docstream runs, not necessarily here: check only its shape.
      if (!path.isAbsolute(value)) result.errors.push(`${where}: ${variable}: expected an absolute path`);
      values.set(`${section}.${key}`, '(from file)');
      return;
    }
    const coerced = coerceInto(result, spec, value, `${where}: ${variable}`);
    if (!coerced.ok) return;
    values.set(`${section}.${key}`, coerced.value);
    if (spec.secret && value !== '') {
      result.warnings.push(`${where}: ${variable} holds a secret; prefer ${variable}_FILE`);
    }
  });
  crossChecks(result, values, origin);
  result.values = values;
  return result;
}

/** Checks one file: `.env` files as variables, anything else as JSON. */
export function checkConfigFile(file: string): CheckResult {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    return {
      errors: [`${file}: cannot read (${(err as NodeJS.ErrnoException).code})`],
      warnings: [],
      keys: 0,
    };
  }
  const base = path.basename(file);
  return base.endsWith('.env') || base.startsWith('.env') ? checkEnv(text, file) : checkJson(text, file);
}

/** The default of `section.key`, computed as the loader does. */
function defaultOf(key: string): unknown {
  const [section, name] = key.split('.') as [string, string];
  const spec = sections[section]![name]!;
  return typeof spec.default === 'function' ? (spec.default as () => unknown)() : spec.default;
}

function isLoopbackUrl(value: unknown): boolean {
  return typeof value === 'string' && isSandboxAddress(value);
}

/**
 * What a deployment's settings taken together lack or risk (`values`: what they set, as
 * `section.key`, the rest at its default). Against brokers off this machine, the keys that
 * docs/configuration.md calls required must be set; replication factor 1 on a cluster, and a
 * registry or API on this machine with a remote cluster, are warnings. `brokerCount`, when a
 * check has connected, is the cluster's size.
 */
export function deploymentChecks(
  values: ReadonlyMap<string, unknown>,
  options: {
    brokerCount?: number;
    /** Files are checked, not what runs: an unset secret may come from a `…_FILE` where it runs. */
    secretsElsewhere?: boolean;
  } = {},
): { errors: string[]; warnings: string[] } {
  const { brokerCount } = options;
  const errors: string[] = [];
  const warnings: string[] = [];
  const valueOf = (key: string) => (values.has(key) ? values.get(key) : defaultOf(key));
  const brokers = (valueOf('kafka.brokers') as string[]).map((b) => b.trim());
  const remote = brokers.filter((b) => !isLoopbackHost(b.replace(/:\d+$/, '').replace(/^\[|\]$/g, '')));
  if (remote.length > 0) {
    const groups = new Map<string, string[]>();
    for (const [key, grade] of Object.entries(CONFIG_GRADES)) {
      if (grade.required === undefined) continue;
      const group = grade.required === 'yes' ? key : grade.required;
      groups.set(group, [...(groups.get(group) ?? []), key]);
    }
    for (const [group, keys] of groups) {
      if (keys.some((key) => values.has(key))) continue;
      const risk = keys.length === 1 ? CONFIG_GRADES[keys[0]!]!.risk : undefined;
      const problem = `${group} is required against a cluster off this machine (${remote[0]}) and not set${risk ? ` (its default: ${risk})` : ''}`;
      const secret = keys.every((key) => {
        const [section, name] = key.split('.') as [string, string];
        return sections[section]![name]!.secret === true;
      });
      if (secret && options.secretsElsewhere) {
        warnings.push(
          `${problem}; set ${keys.map((key) => `${envName(...(key.split('.') as [string, string]))}_FILE`).join(' or ')} where docstream runs`,
        );
      } else {
        errors.push(problem);
      }
    }
    if (values.has('registry.url') && isLoopbackUrl(valueOf('registry.url'))) {
      warnings.push(
        `registry.url (${String(valueOf('registry.url'))}) is on this machine while kafka.brokers (${remote[0]}) is not: the connector's outputs would be registered in a registry its consumers cannot reach`,
      );
    }
    const cell = valueOf('api.cell');
    if (
      values.has('api.baseUrl') &&
      (cell === '' || cell === undefined) &&
      isLoopbackUrl(valueOf('api.baseUrl'))
    ) {
      warnings.push(
        `api.baseUrl (${String(valueOf('api.baseUrl'))}) is on this machine while kafka.brokers (${remote[0]}) is not: set api.cell or api.baseUrl to the real service`,
      );
    }
  }
  const replication = valueOf('topics.replicationFactor');
  const cluster = brokerCount !== undefined ? brokerCount > 1 : brokers.length > 1 || remote.length > 0;
  if (replication === 1 && cluster) {
    const size =
      brokerCount !== undefined ? `a cluster of ${brokerCount} brokers` : `a cluster (${brokers.join(',')})`;
    warnings.push(
      `topics.replicationFactor is 1 against ${size}: the topics docstream creates lose their records (results, state) with a broker; set it to 3`,
    );
  }
  return { errors, warnings };
}

/** The keys of a loaded configuration that differ from their defaults, as `deploymentChecks` takes them. */
export function setValues(config: object): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [section, fields] of Object.entries(sections)) {
    const loaded = (config as Record<string, Record<string, unknown> | undefined>)[section];
    if (!loaded) continue;
    for (const key of Object.keys(fields)) {
      const value = loaded[key];
      if (JSON.stringify(value) !== JSON.stringify(defaultOf(`${section}.${key}`)))
        out.set(`${section}.${key}`, value);
    }
  }
  return out;
}

/** The keys the `DOCSTREAM_*` variables of `env` set (a secret's `…_FILE` as `(from file)`). */
export function environmentValues(env: Record<string, string | undefined>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [section, fields] of Object.entries(sections)) {
    for (const [key, spec] of Object.entries(fields)) {
      const name = envName(section, key);
      const raw = env[name];
      if (spec.secret && env[`${name}_FILE`]) out.set(`${section}.${key}`, '(from file)');
      if (raw === undefined || raw === '') continue;
      try {
        out.set(`${section}.${key}`, coerce(spec, raw, name));
      } catch {
        // A malformed variable is named when the configuration is loaded.
      }
    }
  }
  return out;
}
