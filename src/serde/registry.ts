/**
 * Schema registry access (Confluent API; Apicurio Registry through its ccompat API) and the
 * Confluent wire format: magic byte 0, 4-byte big-endian schema id, Avro binary.
 *
 * Output schemas are registered under the TopicNameStrategy subject `<topic>-value` with an
 * explicit compatibility level. Apicurio answers `GET /config/{subject}` with 200 `NONE` for a
 * subject that exists without a rule (Confluent answers 404), which makes the registry client's
 * own check refuse to register; so the level is settled here first (see `settleCompatibility`).
 * Every request goes through one sender (`request`), which adds the configured authentication
 * (basic, a static or OIDC bearer token) and uses the configured TLS (a private CA, a client
 * certificate) through the `fetch` it is given.
 */
import avro from 'avsc';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { errorText, redactText } from '../observability/redact.js';
import { tlsProblem } from '../util/tls-problem.js';
import { checkAvroBounds } from './avro-bounds.js';
import { avroSchemaText, avroType, type AvroSchemaName, type AvroType } from './avro-schemas.js';

export const DEFAULT_REGISTRY_URL = 'http://localhost:8081/apis/ccompat/v7';

const COMPATIBILITY_LEVELS = [
  'NONE',
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
] as const;
export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number];

export const MAGIC_BYTE = 0;
const HEADER_LENGTH = 5;

export interface RegistrySettings {
  url?: string;
  /** Level set on subjects that have none; a level an operator already set is kept. */
  compatibility?: CompatibilityLevel;
  username?: string;
  password?: string;
  /**
   * The Authorization header of each request, e.g. a bearer token refreshed before it expires
   * (instead of `username`/`password`).
   */
  authorization?: () => Promise<string>;
  logger?: Logger;
  /** Replaceable (TLS settings, tests); defaults to the global fetch. */
  fetch?: typeof fetch;
  /**
   * How long a schema id the registry does not have (or refuses) is remembered as such, so records
   * carrying it are dead-lettered without a lookup each (default 60 s; a schema registered later
   * becomes readable after that).
   */
  unknownSchemaTtlMs?: number;
  /** Per-request timeout in ms (default 10 s). */
  requestTimeoutMs?: number;
  /** Clock for the negative cache; replaceable for tests. */
  now?: () => number;
}

const DEFAULT_UNKNOWN_SCHEMA_TTL_MS = 60_000;

/** A registry failure. `retriable` is true for network errors and 5xx: the data is not at fault. */
export class RegistryError extends Error {
  readonly status: number | undefined;
  readonly retriable: boolean;
  constructor(message: string, options: { status?: number; retriable: boolean; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'RegistryError';
    this.status = options.status;
    this.retriable = options.retriable;
  }
}

/**
 * The registry cannot answer now (network, timeout, 5xx, 408, 429, or 401/403 — a credentials
 * problem of this deployment, never of the record): pause input and retry the same record later.
 */
export class RegistryUnavailableError extends RegistryError {
  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { ...options, retriable: true });
    this.name = 'RegistryUnavailableError';
  }
}

/**
 * registry.autoRegister is false and a subject docstream writes to does not hold its schema: the
 * registry's owners must register it (or allow docstream to).
 */
export class SchemaNotRegisteredError extends RegistryError {
  readonly subject: string;
  constructor(subject: string, problem: string) {
    super(
      `${problem}; registry.autoRegister is false, so docstream registers nothing: have the schema ` +
        `registered under ${subject} (avro/), or set registry.autoRegister to true`,
      { status: 404, retriable: false },
    );
    this.name = 'SchemaNotRegisteredError';
    this.subject = subject;
  }
}

/** Statuses that say nothing about the schema id asked for. */
const UNAVAILABLE_STATUSES = new Set([401, 403, 408, 429]);

function isUnavailableStatus(status: number): boolean {
  return status >= 500 || UNAVAILABLE_STATUSES.has(status);
}

export type DecodeErrorCode = 'invalid_avro' | 'unknown_schema' | 'schema_rejected';

/**
 * Bytes that cannot be read: the data is at fault, retrying cannot help (dead-letter the record).
 * `unknown_schema`: the registry has no schema under the record's id (404); `schema_rejected`: the
 * registry refused the lookup (422 or another 4xx) or the schema is not usable Avro;
 * `invalid_avro`: the bytes do not fit the schema (including length prefixes beyond the record).
 */
export class DecodeError extends Error {
  readonly code: DecodeErrorCode;
  readonly schemaId: number | undefined;
  readonly status: number | undefined;
  constructor(code: DecodeErrorCode, message: string, details: { schemaId?: number; status?: number } = {}) {
    super(message);
    this.name = 'DecodeError';
    this.code = code;
    this.schemaId = details.schemaId;
    this.status = details.status;
  }
}

/** A value that does not fit its schema (a programming error on the producing side). */
export class EncodeError extends Error {
  readonly paths: string[];
  constructor(message: string, paths: string[]) {
    super(message);
    this.name = 'EncodeError';
    this.paths = paths;
  }
}

interface Registered {
  id: number;
  type: AvroType;
}

export function valueSubject(topic: string): string {
  return `${topic}-value`;
}

/** Splits a Confluent wire-format buffer; null when the buffer is not in that format. */
function parseWireHeader(buffer: Buffer): { schemaId: number; payload: Buffer } | null {
  if (buffer.length < HEADER_LENGTH || buffer[0] !== MAGIC_BYTE) return null;
  return { schemaId: buffer.readUInt32BE(1), payload: buffer.subarray(HEADER_LENGTH) };
}

export class Registry {
  readonly url: string;
  /** The URL as messages show it: a password in it (`user:password@`) redacted. */
  private readonly shownUrl: string;
  private readonly compatibility: CompatibilityLevel;
  private readonly logger: Logger;
  private readonly fetchImpl: typeof fetch;
  private readonly authorization: (() => Promise<string>) | undefined;
  private readonly byTopic = new Map<string, Registered>();
  /** Where values are encoded before being copied out (grows to the largest value seen). */
  private scratch = Buffer.allocUnsafe(16 * 1024);
  private readonly writers = new Map<number, AvroType>();
  private readonly lookups = new Map<number, Promise<AvroType>>();
  private readonly refused = new Map<number, { error: DecodeError; until: number }>();
  private readonly unknownSchemaTtlMs: number;
  private readonly requestTimeoutMs: number;
  private readonly now: () => number;
  private schemaLookups = 0;
  private readonly resolvers = new Map<string, AvroResolver>();

  constructor(settings: RegistrySettings = {}) {
    this.url = (settings.url ?? DEFAULT_REGISTRY_URL).replace(/\/+$/, '');
    this.shownUrl = redactText(this.url);
    this.compatibility = settings.compatibility ?? 'BACKWARD';
    this.logger = settings.logger ?? silentLogger;
    this.fetchImpl = settings.fetch ?? fetch;
    this.unknownSchemaTtlMs = settings.unknownSchemaTtlMs ?? DEFAULT_UNKNOWN_SCHEMA_TTL_MS;
    this.requestTimeoutMs = settings.requestTimeoutMs ?? 10_000;
    this.now = settings.now ?? Date.now;
    if (settings.authorization) {
      this.authorization = settings.authorization;
    } else if (settings.username !== undefined) {
      const basic = `Basic ${Buffer.from(`${settings.username}:${settings.password ?? ''}`).toString('base64')}`;
      this.authorization = async () => basic;
    }
  }

  /**
   * Registers the named schema as the value schema of `topic` (idempotent: an identical schema
   * gets its existing id) and remembers it for `encode(topic, …)`.
   */
  async registerValueSchema(topic: string, name: AvroSchemaName): Promise<number> {
    const subject = valueSubject(topic);
    const level = await this.settleCompatibility(subject);
    let id: number;
    try {
      const answer = (await this.request('POST', `/subjects/${encodeURIComponent(subject)}/versions`, {
        schemaType: 'AVRO',
        schema: avroSchemaText(name),
      })) as { id?: unknown } | null;
      if (typeof answer?.id !== 'number') {
        throw new RegistryError(`the registry answered without a schema id`, { retriable: false });
      }
      id = answer.id;
    } catch (error) {
      throw toRegistryError(error, `registering ${name} under ${subject} (compatibility ${level})`);
    }
    this.byTopic.set(topic, { id, type: avroType(name) });
    this.logger.debug({ subject, schemaId: id, compatibility: level }, 'schema registered');
    return id;
  }

  /**
   * Takes the id under which the value subject of `topic` already holds the named schema, writing
   * nothing to the registry (registry.autoRegister false: registries governed by a platform team
   * refuse applications' registrations and compatibility changes), and remembers it for
   * `encode(topic, …)`. Throws SchemaNotRegisteredError, naming the subject, when the subject is
   * missing or holds other schemas only.
   */
  async useRegisteredValueSchema(topic: string, name: AvroSchemaName): Promise<number> {
    const subject = valueSubject(topic);
    const path = `/subjects/${encodeURIComponent(subject)}`;
    let answer: { id?: unknown } | null;
    try {
      answer = (await this.request(
        'POST',
        path,
        { schemaType: 'AVRO', schema: avroSchemaText(name) },
        [404],
      )) as typeof answer;
    } catch (error) {
      throw toRegistryError(error, `looking up ${name} under ${subject}`);
    }
    if (answer === null) {
      // 404 is either "no such subject" or "not this schema": the versions tell them apart.
      const versions = await this.request('GET', `${path}/versions`, undefined, [404]);
      throw new SchemaNotRegisteredError(
        subject,
        versions === null
          ? `subject ${subject} is not in the registry`
          : `subject ${subject} has no version with docstream's ${name} schema (versions ${JSON.stringify(versions)})`,
      );
    }
    if (typeof answer.id !== 'number') {
      throw new RegistryError(`the registry answered the lookup of ${subject} without a schema id`, {
        retriable: false,
      });
    }
    this.byTopic.set(topic, { id: answer.id, type: avroType(name) });
    this.logger.debug({ subject, schemaId: answer.id }, 'using the registered schema');
    return answer.id;
  }

  /** The schema id registered for `topic` by this instance, if any. */
  schemaIdOf(topic: string): number | undefined {
    return this.byTopic.get(topic)?.id;
  }

  /**
   * Makes sure the subject has a compatibility level and returns the one in force.
   * A subject without a level (404, or Apicurio's 200 `NONE`) gets the configured level;
   * an explicit `NONE` on Confluent cannot be told apart from that and is overwritten too.
   */
  async settleCompatibility(subject: string): Promise<CompatibilityLevel> {
    const current = await this.getCompatibility(subject);
    if (current !== null && current !== 'NONE') {
      if (current !== this.compatibility) {
        this.logger.info(
          { subject, configured: this.compatibility, current },
          'keeping the compatibility level already set on the subject',
        );
      }
      return current;
    }
    const set = await this.request(
      'PUT',
      `/config/${encodeURIComponent(subject)}`,
      { compatibility: this.compatibility },
      [409],
    );
    if (set === null) {
      // Apicurio answers 409 when another instance set the rule between our read and our write
      // (instances of one group starting together): the subject has a level now, read it.
      return (await this.getCompatibility(subject)) ?? this.compatibility;
    }
    return this.compatibility;
  }

  /** The subject's own compatibility level, or null when it has none (Confluent's 404). */
  async getCompatibility(subject: string): Promise<CompatibilityLevel | null> {
    const body = await this.request('GET', `/config/${encodeURIComponent(subject)}`, undefined, [404]);
    if (body === null) return null;
    const level = String((body as { compatibilityLevel?: unknown }).compatibilityLevel ?? '').toUpperCase();
    return (COMPATIBILITY_LEVELS as readonly string[]).includes(level) ? (level as CompatibilityLevel) : null;
  }

  /** Confluent wire format of `value` with the schema registered for `topic`. */
  encode(topic: string, value: unknown): Buffer {
    const registered = this.byTopic.get(topic);
    if (!registered) {
      throw new Error(`no value schema registered for topic ${topic}; call registerValueSchema first`);
    }
    // The plain check first: the path bookkeeping of an error hook is paid only to explain a refusal.
    if (!registered.type.isValid(value)) {
      const paths: string[] = [];
      registered.type.isValid(value, {
        errorHook: (path: string[]) => {
          paths.push(path.length > 0 ? path.join('.') : '(value)');
        },
      });
      throw new EncodeError(
        `value does not match ${registered.type.name ?? 'the schema'} of ${topic}: ${paths.join(', ')}`,
        paths,
      );
    }
    // Written once into a reused scratch buffer after the header, then copied out: one copy, not
    // avsc's copy plus a concatenation.
    let end = registered.type.encode(value, this.scratch, HEADER_LENGTH);
    if (end < 0) {
      this.scratch = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.scratch.length - end));
      end = registered.type.encode(value, this.scratch, HEADER_LENGTH);
    }
    const out = Buffer.allocUnsafe(end);
    this.scratch.copy(out, 0, 0, end);
    out.writeUInt8(MAGIC_BYTE, 0);
    out.writeUInt32BE(registered.id, 1);
    return out;
  }

  /**
   * Resolves when the registry answers, throws RegistryUnavailableError when it does not: a cheap
   * probe (GET /schemas/types) for deciding when input paused by an outage may resume.
   */
  async checkAvailable(): Promise<void> {
    try {
      await this.request('GET', '/schemas/types');
    } catch (error) {
      if (error instanceof RegistryUnavailableError) throw error;
      throw new RegistryUnavailableError(
        `schema registry at ${this.shownUrl} is not usable: ${message(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** How many schema-by-id requests this instance sent (for metrics and tests). */
  get schemaLookupCount(): number {
    return this.schemaLookups;
  }

  /**
   * The writer schema registered under `schemaId`, fetched once and cached; concurrent callers
   * share one request. Fetched directly rather than through the registry client because that
   * client reports network failures as HTTP 400, which would make an unreachable registry look
   * like bad data.
   *
   * Throws DecodeError (`unknown_schema`, `schema_rejected`) when the id is the data's fault —
   * remembered for `unknownSchemaTtlMs` — and RegistryUnavailableError when the registry is.
   */
  writerType(schemaId: number): Promise<AvroType> {
    const cached = this.writers.get(schemaId);
    if (cached) return Promise.resolve(cached);
    const refused = this.refused.get(schemaId);
    if (refused !== undefined) {
      if (refused.until > this.now()) return Promise.reject(refused.error);
      this.refused.delete(schemaId);
    }
    let lookup = this.lookups.get(schemaId);
    if (lookup === undefined) {
      lookup = this.lookUpWriter(schemaId).finally(() => this.lookups.delete(schemaId));
      this.lookups.set(schemaId, lookup);
    }
    return lookup;
  }

  private async lookUpWriter(schemaId: number): Promise<AvroType> {
    this.schemaLookups += 1;
    let body: { schema?: unknown; schemaType?: unknown } | null;
    try {
      body = (await this.request('GET', `/schemas/ids/${schemaId}`, undefined, [404])) as typeof body;
    } catch (error) {
      if (error instanceof RegistryError && !error.retriable && error.status !== undefined) {
        throw this.refuse(
          new DecodeError('schema_rejected', `the registry refused schema id ${schemaId}: ${error.message}`, {
            schemaId,
            status: error.status,
          }),
        );
      }
      throw error;
    }
    if (body === null) {
      throw this.refuse(
        new DecodeError('unknown_schema', `schema id ${schemaId} is not in the registry`, {
          schemaId,
          status: 404,
        }),
      );
    }
    if (body.schemaType !== undefined && body.schemaType !== 'AVRO') {
      throw this.refuse(
        new DecodeError('schema_rejected', `schema id ${schemaId} is ${String(body.schemaType)}, not Avro`, {
          schemaId,
        }),
      );
    }
    let type: AvroType;
    try {
      type = avro.Type.forSchema(JSON.parse(String(body.schema)) as avro.Schema);
    } catch (error) {
      throw this.refuse(
        new DecodeError(
          'schema_rejected',
          `schema id ${schemaId} is not a usable Avro schema: ${message(error)}`,
          { schemaId },
        ),
      );
    }
    this.writers.set(schemaId, type);
    return type;
  }

  private refuse(error: DecodeError): DecodeError {
    if (error.schemaId !== undefined && this.unknownSchemaTtlMs > 0) {
      this.refused.set(error.schemaId, { error, until: this.now() + this.unknownSchemaTtlMs });
    }
    return error;
  }

  /**
   * Decodes a wire-format buffer. With `reader`, the value is resolved into that schema (fields the
   * writer lacks take their defaults), as Avro schema evolution prescribes.
   * Throws DecodeError when the data is at fault, RegistryError when the registry is.
   */
  async decode(buffer: Buffer, reader?: AvroSchemaName): Promise<unknown> {
    const parsed = parseWireHeader(buffer);
    if (!parsed) {
      throw new DecodeError(
        'invalid_avro',
        'not in the Confluent wire format (magic byte 0 and a schema id)',
      );
    }
    const writer = await this.writerType(parsed.schemaId);
    try {
      // Before avsc, which trusts the data's length prefixes (see avro-bounds.ts).
      checkAvroBounds(writer, parsed.payload);
      if (reader === undefined) return plain(writer.fromBuffer(parsed.payload));
      const readerType = avroType(reader);
      const key = `${parsed.schemaId}:${reader}`;
      let resolver = this.resolvers.get(key);
      if (resolver === undefined) {
        resolver = readerType.createResolver(writer);
        this.resolvers.set(key, resolver);
      }
      return plain(readerType.fromBuffer(parsed.payload, resolver));
    } catch (error) {
      throw new DecodeError(
        'invalid_avro',
        `Avro value with schema id ${parsed.schemaId}: ${message(error)}`,
        { schemaId: parsed.schemaId },
      );
    }
  }

  private async request(
    method: 'GET' | 'PUT' | 'POST',
    path: string,
    body?: unknown,
    nullOn: number[] = [],
  ): Promise<unknown> {
    const headers: Record<string, string> = { Accept: 'application/vnd.schemaregistry.v1+json' };
    if (body !== undefined) headers['Content-Type'] = 'application/vnd.schemaregistry.v1+json';
    if (this.authorization) {
      try {
        headers.Authorization = await this.authorization();
      } catch (error) {
        // The token endpoint's error names the setting at fault.
        throw new RegistryUnavailableError(`schema registry authentication: ${message(error)}`, {
          cause: error,
        });
      }
    }
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.url}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (error) {
      const hint = registryTlsHint(error);
      throw new RegistryUnavailableError(
        `${hint ? `${hint}; ` : ''}schema registry unreachable at ${this.shownUrl}: ${message(error)}`,
        { cause: error },
      );
    }
    if (nullOn.includes(response.status)) return null;
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw new RegistryUnavailableError(`schema registry ${method} ${path}: ${message(error)}`, {
        cause: error,
      });
    }
    if (response.status === 401 || response.status === 403) {
      // An outage, not the data's fault: records wait (input paused) until the credentials work.
      throw new RegistryUnavailableError(
        `schema registry ${method} ${path} answered ${response.status}: it refused the credentials ` +
          '(registry.username and registry.password, registry.bearerToken, or registry.oauth*)',
        { status: response.status },
      );
    }
    if (!response.ok) {
      const answer = `schema registry ${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`;
      if (isUnavailableStatus(response.status)) {
        throw new RegistryUnavailableError(answer, { status: response.status });
      }
      throw new RegistryError(answer, { status: response.status, retriable: false });
    }
    if (text.length === 0) return null;
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new RegistryUnavailableError(
        `schema registry ${method} ${path} answered ${response.status} with a body that is not JSON`,
        { status: response.status, cause: error },
      );
    }
  }
}

type AvroResolver = ReturnType<AvroType['createResolver']>;

/**
 * avsc reads records as instances of generated classes whose prototype methods (clone, toBuffer…)
 * are enumerable; validators would see them as fields, so decoded values are copied to plain data.
 */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = plain((value as Record<string, unknown>)[key]);
  return copy;
}

/** An error's message as registry errors carry it: a failed fetch names the URL, credentials included. */
function message(error: unknown): string {
  return errorText(error);
}

/** The setting to fix when the registry's TLS handshake failed, from the error's causes. */
function registryTlsHint(error: unknown): string | undefined {
  switch (tlsProblem(error)) {
    case 'untrusted':
      return "registry.caFile: the registry's certificate is not signed by a trusted CA";
    case 'client-certificate-required':
    case 'client-certificate-refused':
      return 'registry.certFile: the registry requires or refused the client certificate';
    default:
      return undefined;
  }
}

function toRegistryError(error: unknown, doing: string): Error {
  if (error instanceof RegistryError) return error;
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number') {
    if (isUnavailableStatus(status)) {
      return new RegistryUnavailableError(`${doing}: ${(error as Error).message}`, { status, cause: error });
    }
    return new RegistryError(`${doing}: ${(error as Error).message}`, {
      status,
      retriable: false,
      cause: error,
    });
  }
  return new RegistryUnavailableError(`${doing}: ${message(error)}`, { cause: error });
}
