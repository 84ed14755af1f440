/**
 * The event contract's Avro schemas, read from the package's `avro/` directory.
 *
 * The `.avsc` files are the source of truth; the path is resolved from this module's own URL so it
 * works both from `src/serde/` (jest) and from `dist/serde/` (the built package ships `avro/`).
 */
import { readFileSync } from 'node:fs';
import avro from 'avsc';

export const AVRO_SCHEMA_NAMES = [
  'DocumentArrived',
  'FeedbackEvent',
  'FraudResult',
  'QualityResult',
  'ClassificationResult',
  'DecisionResult',
  'DeadLetter',
] as const;
export type AvroSchemaName = (typeof AVRO_SCHEMA_NAMES)[number];

export type AvroType = avro.Type;

const AVRO_DIR = new URL('../../avro/', import.meta.url);

const texts = new Map<AvroSchemaName, string>();
const types = new Map<AvroSchemaName, AvroType>();

/** The schema's text exactly as in its file, so the registry stores every `doc` and `default`. */
export function avroSchemaText(name: AvroSchemaName): string {
  let text = texts.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`${name}.avsc`, AVRO_DIR), 'utf8');
    texts.set(name, text);
  }
  return text;
}

export function avroSchemaJson(name: AvroSchemaName): Record<string, unknown> {
  return JSON.parse(avroSchemaText(name)) as Record<string, unknown>;
}

/** The parsed avsc type; logical types stay plain (timestamp-millis is a number of milliseconds). */
export function avroType(name: AvroSchemaName): AvroType {
  let type = types.get(name);
  if (type === undefined) {
    type = avro.Type.forSchema(avroSchemaJson(name) as avro.Schema);
    types.set(name, type);
  }
  return type;
}
