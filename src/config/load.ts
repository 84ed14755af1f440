/**
 * Loads the configuration: defaults from the spec, then config files (later files winning), then
 * `DOCSTREAM_*` environment variables, then explicit overrides (CLI flags). A file is JSON sections,
 * or, named `*.env` / `.env*`, `DOCSTREAM_*` lines as `docker run --env-file` takes them (secrets as
 * `…_FILE` paths). Anything unknown or malformed stops the program with a message naming the key
 * and where it came from.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REDACTED, redactText, rememberSecrets } from '../observability/redact.js';
import { CONFIG_SPEC, RESERVED_ENV, envName, type Config, type FieldSpec } from './spec.js';
import { apiUrls, insecureHttpProblem } from './transport.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Config files (JSON or .env) applied in order; default: $DOCSTREAM_CONFIG (comma-separated) or ./config/docstream.json if present. */
  files?: string[];
  /** Values from CLI flags, applied last: { section: { key: value } }. */
  overrides?: Record<string, Record<string, unknown>>;
  cwd?: string;
}

type Raw = Record<string, Record<string, unknown>>;

const sections = CONFIG_SPEC as unknown as Record<string, Record<string, FieldSpec>>;

function fieldOf(section: string, key: string): FieldSpec | undefined {
  const s = sections[section];
  return s && Object.hasOwn(s, key) ? s[key] : undefined;
}

/**
 * Coerces a value (from JSON or from an environment string) to the field's type, or throws naming
 * the key. A secret given with the wrong type is described by its type only, never shown.
 */
export function coerce(spec: FieldSpec, value: unknown, where: string): unknown {
  const coerced = coerceKind(spec, value, where);
  const problem = spec.check?.(coerced) ?? null;
  if (problem !== null) throw new ConfigError(`${where}: ${problem}`);
  return coerced;
}

function coerceKind(spec: FieldSpec, value: unknown, where: string): unknown {
  const fail = (expected: string): never => {
    const got = spec.secret ? `${kindOf(value)} (not shown: a secret)` : redactText(JSON.stringify(value));
    throw new ConfigError(`${where}: expected ${expected}, got ${got}`);
  };
  const fromEnv = typeof value === 'string';
  switch (spec.kind) {
    case 'string':
      return typeof value === 'string' ? value : fail('a string');
    case 'int':
    case 'number': {
      const n = fromEnv && value.trim() !== '' ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isFinite(n))
        return fail(spec.kind === 'int' ? 'an integer' : 'a number');
      if (spec.kind === 'int' && !Number.isInteger(n)) return fail('an integer');
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
        return fail(`a number between ${spec.min ?? '-∞'} and ${spec.max ?? '∞'}`);
      }
      return n;
    }
    case 'bool':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === '1') return true;
      if (value === 'false' || value === '0') return false;
      return fail('true or false');
    case 'list':
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
      if (fromEnv) {
        return value
          .split(',')
          .map((v) => v.trim())
          .filter((v) => v.length > 0);
      }
      return fail('a list of strings');
    case 'enum':
      return typeof value === 'string' && spec.values?.includes(value)
        ? value
        : fail(`one of ${spec.values?.join(', ')}`);
    case 'json':
      if (fromEnv) {
        try {
          return JSON.parse(value) as unknown;
        } catch {
          return fail('JSON');
        }
      }
      return value;
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function applyObject(target: Raw, source: unknown, origin: string): void {
  if (typeof source !== 'object' || source === null || Array.isArray(source)) {
    throw new ConfigError(`${origin}: the configuration must be a JSON object of sections`);
  }
  for (const [section, values] of Object.entries(source)) {
    if (!sections[section]) throw new ConfigError(`${origin}: unknown configuration section '${section}'`);
    if (typeof values !== 'object' || values === null || Array.isArray(values)) {
      throw new ConfigError(`${origin}: section '${section}' must be an object`);
    }
    for (const [key, value] of Object.entries(values)) {
      const spec = fieldOf(section, key);
      if (!spec) throw new ConfigError(`${origin}: unknown configuration key '${section}.${key}'`);
      target[section]![key] = coerce(spec, value, `${origin}: ${section}.${key}`);
    }
  }
}

function readSecretFile(file: string, variable: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError(
      `${variable}: cannot read the secret file (${(err as NodeJS.ErrnoException).code})`,
    );
  }
}

/** Every variable a configuration key answers to, with its key (and whether it names a secret file). */
function knownVariables(): Map<string, [string, string, FieldSpec]> {
  const known = new Map<string, [string, string, FieldSpec]>();
  for (const [section, fields] of Object.entries(sections)) {
    for (const [key, spec] of Object.entries(fields)) {
      known.set(envName(section, key), [section, key, spec]);
      if (spec.secret) known.set(`${envName(section, key)}_FILE`, [section, key, spec]);
    }
  }
  return known;
}

/**
 * Applies `DOCSTREAM_*` variables: the environment (`origin` undefined), or the lines of a .env
 * file (`origin` is the file, each variable named with its line). Variables of other tools pass.
 */
function applyEnv(
  target: Raw,
  env: NodeJS.ProcessEnv | Array<[variable: string, value: string, line: number]>,
  cwd: string,
  origin?: string,
): void {
  const known = knownVariables();
  const entries = Array.isArray(env)
    ? env
    : Object.entries(env).map(([variable, value]) => [variable, value, 0] as const);
  for (const [variable, value, line] of entries) {
    if (!variable.startsWith('DOCSTREAM_') || value === undefined) continue;
    if (RESERVED_ENV.some((r) => variable === r || (r.endsWith('_') && variable.startsWith(r)))) continue;
    const where = origin === undefined ? variable : `${origin}:${line}: ${variable}`;
    const entry = known.get(variable);
    if (!entry) throw new ConfigError(`unknown configuration variable ${where}`);
    const [section, key, spec] = entry;
    const raw =
      variable.endsWith('_FILE') && spec.secret ? readSecretFile(path.resolve(cwd, value), where) : value;
    target[section]![key] = coerce(spec, raw, where);
  }
}

/** Whether a configuration file holds `NAME=value` lines rather than JSON. */
export function isEnvFile(file: string): boolean {
  const base = path.basename(file);
  return base.endsWith('.env') || base.startsWith('.env');
}

/** The `NAME=value` lines of a .env file (comments, blank lines, `export` and quotes allowed). */
export function parseEnvFile(
  text: string,
  origin: string,
): Array<[variable: string, value: string, line: number]> {
  const out: Array<[string, string, number]> = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match) throw new ConfigError(`${origin}:${index + 1}: expected NAME=value`);
    out.push([match[1]!, match[2]!.replace(/^(['"])(.*)\1$/, '$2'), index + 1]);
  });
  return out;
}

function defaultFiles(env: NodeJS.ProcessEnv, cwd: string): string[] {
  if (env.DOCSTREAM_CONFIG) {
    return env.DOCSTREAM_CONFIG.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
  const local = path.join(cwd, 'config', 'docstream.json');
  return fs.existsSync(local) ? [local] : [];
}

export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const raw: Raw = {};
  for (const [section, fields] of Object.entries(sections)) {
    raw[section] = {};
    for (const [key, spec] of Object.entries(fields)) {
      raw[section][key] =
        typeof spec.default === 'function' ? (spec.default as () => unknown)() : spec.default;
    }
  }
  for (const file of options.files ?? defaultFiles(env, cwd)) {
    let text: string;
    try {
      text = fs.readFileSync(path.resolve(cwd, file), 'utf8');
    } catch (err) {
      throw new ConfigError(`config file ${file}: ${(err as Error).message}`);
    }
    if (isEnvFile(file)) {
      applyEnv(raw, parseEnvFile(text, file), cwd, file);
      continue;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(`config file ${file}: invalid JSON (${(err as Error).message})`);
    }
    applyObject(raw, parsed, file);
  }
  applyEnv(raw, env, cwd);
  if (options.overrides) applyObject(raw, options.overrides, 'command line');
  const config = raw as unknown as Config;
  rememberSecrets(secretValues(config));
  for (const [where, url] of apiUrls(config.api)) {
    const problem = insecureHttpProblem(url, config.api.allowInsecureHttp);
    if (problem) throw new ConfigError(`${where}: ${problem}`);
  }
  return config;
}

/** Every secret setting's value(s), for the redaction of whatever leaves the process. */
function secretValues(config: Config): string[] {
  const values: string[] = [];
  for (const [section, fields] of Object.entries(sections)) {
    for (const [key, spec] of Object.entries(fields)) {
      if (!spec.secret) continue;
      const value = (config as unknown as Raw)[section]![key];
      if (typeof value === 'string') values.push(value);
      else if (Array.isArray(value)) values.push(...value.filter((v): v is string => typeof v === 'string'));
    }
  }
  return values;
}

/** Passwords inside URLs anywhere in a value (strings, lists, JSON such as `api.cells`). */
function redactNested(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map(redactNested);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactNested(v)]));
  }
  return value;
}

/** The configuration with every secret replaced, for `docstream config show` and logs. */
export function redactConfig(config: Config): Record<string, Record<string, unknown>> {
  const out: Raw = {};
  for (const [section, fields] of Object.entries(sections)) {
    out[section] = {};
    for (const [key, spec] of Object.entries(fields)) {
      const value = (config as unknown as Raw)[section]![key];
      const empty = value === '' || (Array.isArray(value) && value.length === 0);
      out[section][key] = spec.secret && !empty ? REDACTED : redactNested(value);
    }
  }
  return out;
}

/** A markdown reference of every key, for the README (`docstream config docs`). */
export function configReference(): string {
  const rows = ['| key | environment variable | type | default | description |', '|---|---|---|---|---|'];
  for (const [section, fields] of Object.entries(sections)) {
    for (const [key, spec] of Object.entries(fields)) {
      const type = spec.kind === 'enum' ? spec.values!.join(' \\| ') : spec.kind;
      const def =
        typeof spec.default === 'function'
          ? '(computed)'
          : spec.secret
            ? '(secret)'
            : JSON.stringify(spec.default);
      const variable = `\`${envName(section, key)}\`` + (spec.secret ? ' (or `…_FILE`)' : '');
      rows.push(`| \`${section}.${key}\` | ${variable} | ${type} | \`${def}\` | ${spec.description} |`);
    }
  }
  return rows.join('\n');
}
