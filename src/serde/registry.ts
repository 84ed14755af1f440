/**
 * The registry as the connector and the CLI use it: docstream's value schemas registered (or looked
 * up) under `<topic>-value` through the registry client (`registry-client.ts`), and records encoded
 * and decoded in the Confluent wire format by the Avro codec (`avro-codec.ts`), whose writer
 * schemas come from that client. One object, so that a topic's schema id found at start-up is the
 * one its outputs are encoded with.
 */
import type { AvroSchemaName, AvroType } from './avro-schemas.js';
import { AvroCodec, type AvroCodecSettings } from './avro-codec.js';
import { RegistryClient, valueSubject, type RegistryClientSettings } from './registry-client.js';

export {
  DEFAULT_REGISTRY_URL,
  RegistryClient,
  RegistryError,
  RegistryUnavailableError,
  SchemaNotRegisteredError,
  valueSubject,
  type CompatibilityLevel,
} from './registry-client.js';
export { AvroCodec, DecodeError, EncodeError, MAGIC_BYTE, type DecodeErrorCode } from './avro-codec.js';

export type RegistrySettings = RegistryClientSettings & AvroCodecSettings;

export class Registry {
  readonly client: RegistryClient;
  readonly codec: AvroCodec;

  constructor(settings: RegistrySettings = {}) {
    this.client = new RegistryClient(settings);
    this.codec = new AvroCodec(this.client, settings);
  }

  get url(): string {
    return this.client.url;
  }

  /**
   * Registers the named schema as the value schema of `topic` (idempotent: an identical schema
   * gets its existing id) and encodes `topic`'s values with it from then on.
   */
  async registerValueSchema(topic: string, name: AvroSchemaName): Promise<number> {
    const id = await this.client.registerSchema(valueSubject(topic), name);
    this.codec.useTopicSchema(topic, id, name);
    return id;
  }

  /**
   * Takes the id under which the value subject of `topic` already holds the named schema, writing
   * nothing to the registry (registry.autoRegister false), and encodes `topic`'s values with it.
   * Throws SchemaNotRegisteredError, naming the subject, when the subject lacks the schema.
   */
  async useRegisteredValueSchema(topic: string, name: AvroSchemaName): Promise<number> {
    const id = await this.client.registeredSchemaId(valueSubject(topic), name);
    this.codec.useTopicSchema(topic, id, name);
    return id;
  }

  /** The schema id registered for `topic` by this instance, if any. */
  schemaIdOf(topic: string): number | undefined {
    return this.codec.schemaIdOf(topic);
  }

  /** Confluent wire format of `value` with the schema registered for `topic`. */
  encode(topic: string, value: unknown): Buffer {
    return this.codec.encode(topic, value);
  }

  /** The value of a wire-format buffer (see `AvroCodec.decode`). */
  decode(buffer: Buffer, reader?: AvroSchemaName): Promise<unknown> {
    return this.codec.decode(buffer, reader);
  }

  /** The writer schema registered under `schemaId` (see `AvroCodec.writerType`). */
  writerType(schemaId: number): Promise<AvroType> {
    return this.codec.writerType(schemaId);
  }

  /** Resolves when the registry answers; throws RegistryUnavailableError when it does not. */
  checkAvailable(): Promise<void> {
    return this.client.checkAvailable();
  }

  /** How many schema-by-id lookups this instance made (for metrics and tests). */
  get schemaLookupCount(): number {
    return this.codec.schemaLookupCount;
  }
}
