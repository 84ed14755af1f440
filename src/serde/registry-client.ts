/**
 * The schema registry's HTTP API as docstream uses it (Confluent API; Apicurio Registry through its
 * ccompat API): registering docstream's schemas, looking them up, a subject's compatibility level,
 * a schema by id, and an availability probe. What the bytes of a record mean is `avro-codec.ts`'s.
 *
 * Output schemas are registered under the TopicNameStrategy subject `<topic>-value` with an
 * explicit compatibility level. Apicurio answers `GET /config/{subject}` with 200 `NONE` for a
 * subject that exists without a rule (Confluent answers 404), so the level is settled here first
 * (see `settleCompatibility`). Every request goes through one sender (`request`), which adds the
 * configured authentication (basic, a static or OIDC bearer token), uses the configured TLS (a
 * private CA, a client certificate) through the `fetch` it is given, and tells an unreachable
 * registry (RegistryUnavailableError) from an answer about the data (RegistryError).
 */
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { errorText, redactText } from '../observability/redact.js';
import { tlsProblem } from '../util/tls-problem.js';
import { avroSchemaText, type AvroSchemaName } from './avro-schemas.js';

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

export interface RegistryClientSettings {
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
  /** Per-request timeout in ms (default 10 s). */
  requestTimeoutMs?: number;
}

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

export function valueSubject(topic: string): string {
  return `${topic}-value`;
}

/** A schema as the registry holds it under an id: its text and type (absent means Avro). */
export interface StoredSchema {
  schema?: unknown;
  schemaType?: unknown;
}

export class RegistryClient {
  readonly url: string;
  /** The URL as messages show it: a password in it (`user:password@`) redacted. */
  private readonly shownUrl: string;
  private readonly compatibility: CompatibilityLevel;
  private readonly logger: Logger;
  private readonly fetchImpl: typeof fetch;
  private readonly authorization: (() => Promise<string>) | undefined;
  private readonly requestTimeoutMs: number;

  constructor(settings: RegistryClientSettings = {}) {
    this.url = (settings.url ?? DEFAULT_REGISTRY_URL).replace(/\/+$/, '');
    this.shownUrl = redactText(this.url);
    this.compatibility = settings.compatibility ?? 'BACKWARD';
    this.logger = settings.logger ?? silentLogger;
    this.fetchImpl = settings.fetch ?? fetch;
    this.requestTimeoutMs = settings.requestTimeoutMs ?? 10_000;
    if (settings.authorization) {
      this.authorization = settings.authorization;
    } else if (settings.username !== undefined) {
      const basic = `Basic ${Buffer.from(`${settings.username}:${settings.password ?? ''}`).toString('base64')}`;
      this.authorization = async () => basic;
    }
  }

  /**
   * Registers the named schema under `subject` after settling the subject's compatibility level
   * (idempotent: an identical schema gets its existing id); returns its id.
   */
  async registerSchema(subject: string, name: AvroSchemaName): Promise<number> {
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
    this.logger.debug({ subject, schemaId: id, compatibility: level }, 'schema registered');
    return id;
  }

  /**
   * The id under which `subject` already holds the named schema, writing nothing to the registry
   * (registry.autoRegister false: registries governed by a platform team refuse applications'
   * registrations and compatibility changes). Throws SchemaNotRegisteredError, naming the subject,
   * when the subject is missing or holds other schemas only.
   */
  async registeredSchemaId(subject: string, name: AvroSchemaName): Promise<number> {
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
    this.logger.debug({ subject, schemaId: answer.id }, 'using the registered schema');
    return answer.id;
  }

  /** The versions the subject holds; null when the registry has no such subject (404). */
  async subjectVersions(subject: string): Promise<number[] | null> {
    const path = `/subjects/${encodeURIComponent(subject)}/versions`;
    const answer = await this.request('GET', path, undefined, [404]);
    return answer === null ? null : (answer as unknown[]).filter((v): v is number => typeof v === 'number');
  }

  /** The id under which the subject holds the named schema, or null (nothing written). */
  async lookupSchemaId(subject: string, name: AvroSchemaName): Promise<number | null> {
    const answer = (await this.request(
      'POST',
      `/subjects/${encodeURIComponent(subject)}`,
      { schemaType: 'AVRO', schema: avroSchemaText(name) },
      [404],
    )) as { id?: unknown } | null;
    return typeof answer?.id === 'number' ? answer.id : null;
  }

  /**
   * Whether the named schema may be registered after the subject's latest version under the
   * subject's compatibility level: the registry's own test (POST /compatibility/...), nothing written.
   * `messages` are the registry's reasons when it gives them (Confluent's `verbose`).
   */
  async compatibleWithLatest(
    subject: string,
    name: AvroSchemaName,
  ): Promise<{ compatible: boolean; messages: string[] }> {
    const answer = (await this.request(
      'POST',
      `/compatibility/subjects/${encodeURIComponent(subject)}/versions/latest?verbose=true`,
      { schemaType: 'AVRO', schema: avroSchemaText(name) },
    )) as { is_compatible?: unknown; messages?: unknown } | null;
    const messages = Array.isArray(answer?.messages) ? answer.messages.map(String) : [];
    return { compatible: answer?.is_compatible === true, messages };
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

  /**
   * The schema stored under `schemaId`, or null when the registry has none (404). Throws
   * RegistryUnavailableError when the registry cannot answer, and a RegistryError that is not
   * retriable, with the status, when it refused the lookup (the id is the data's fault).
   */
  async schemaById(schemaId: number): Promise<StoredSchema | null> {
    return (await this.request('GET', `/schemas/ids/${schemaId}`, undefined, [404])) as StoredSchema | null;
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
