/**
 * The Confluent wire format with Avro values: magic byte 0, the 4-byte big-endian schema id, then
 * Avro binary. Encodes outputs with the schema registered for their topic, and decodes records with
 * the writer schema their id names (looked up once through `SchemaSource`), resolved into a reader
 * schema when one is given. Bytes are bounds-checked before avsc reads them (`avro-bounds.ts`), and
 * a failure is said to be the data's (DecodeError) or the registry's (thrown through unchanged).
 */
import avro from 'avsc';
import { errorText } from '../observability/redact.js';
import { checkAvroBounds } from './avro-bounds.js';
import { avroType, type AvroSchemaName, type AvroType } from './avro-schemas.js';
import { RegistryError, type StoredSchema } from './registry-client.js';

export const MAGIC_BYTE = 0;
const HEADER_LENGTH = 5;
const DEFAULT_UNKNOWN_SCHEMA_TTL_MS = 60_000;

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

/** Where writer schemas come from: the registry client's lookup by id. */
export interface SchemaSource {
  /** Null when there is no schema under the id; throws RegistryError when the registry fails or refuses. */
  schemaById(schemaId: number): Promise<StoredSchema | null>;
}

export interface AvroCodecSettings {
  /**
   * How long a schema id the registry does not have (or refuses) is remembered as such, so records
   * carrying it are dead-lettered without a lookup each (default 60 s; a schema registered later
   * becomes readable after that).
   */
  unknownSchemaTtlMs?: number;
  /** Clock for the negative cache; replaceable for tests. */
  now?: () => number;
}

interface TopicSchema {
  id: number;
  type: AvroType;
}

type AvroResolver = ReturnType<AvroType['createResolver']>;

/** Splits a Confluent wire-format buffer; null when the buffer is not in that format. */
function parseWireHeader(buffer: Buffer): { schemaId: number; payload: Buffer } | null {
  if (buffer.length < HEADER_LENGTH || buffer[0] !== MAGIC_BYTE) return null;
  return { schemaId: buffer.readUInt32BE(1), payload: buffer.subarray(HEADER_LENGTH) };
}

export class AvroCodec {
  private readonly source: SchemaSource;
  private readonly byTopic = new Map<string, TopicSchema>();
  /** Where values are encoded before being copied out (grows to the largest value seen). */
  private scratch = Buffer.allocUnsafe(16 * 1024);
  private readonly writers = new Map<number, AvroType>();
  private readonly lookups = new Map<number, Promise<AvroType>>();
  private readonly refused = new Map<number, { error: DecodeError; until: number }>();
  private readonly resolvers = new Map<string, AvroResolver>();
  private readonly unknownSchemaTtlMs: number;
  private readonly now: () => number;
  private schemaLookups = 0;

  constructor(source: SchemaSource, settings: AvroCodecSettings = {}) {
    this.source = source;
    this.unknownSchemaTtlMs = settings.unknownSchemaTtlMs ?? DEFAULT_UNKNOWN_SCHEMA_TTL_MS;
    this.now = settings.now ?? Date.now;
  }

  /** Encodes values for `topic` with the named schema, registered under `schemaId`. */
  useTopicSchema(topic: string, schemaId: number, name: AvroSchemaName): void {
    this.byTopic.set(topic, { id: schemaId, type: avroType(name) });
  }

  /** The schema id values for `topic` are encoded with, if any. */
  schemaIdOf(topic: string): number | undefined {
    return this.byTopic.get(topic)?.id;
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

  /** How many schema-by-id lookups this codec made (for metrics and tests). */
  get schemaLookupCount(): number {
    return this.schemaLookups;
  }

  /**
   * The writer schema registered under `schemaId`, looked up once and cached; concurrent callers
   * share one lookup. Throws DecodeError (`unknown_schema`, `schema_rejected`) when the id is the
   * data's fault (remembered for `unknownSchemaTtlMs`) and the registry's error when it is at fault.
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
    let body: StoredSchema | null;
    try {
      body = await this.source.schemaById(schemaId);
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
          `schema id ${schemaId} is not a usable Avro schema: ${errorText(error)}`,
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
        `Avro value with schema id ${parsed.schemaId}: ${errorText(error)}`,
        { schemaId: parsed.schemaId },
      );
    }
  }
}

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
