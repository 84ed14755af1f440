/**
 * `docstream send <file|url>`: publishes one arrival event for a blob to the input topic, Avro in the
 * Confluent wire format through the registry as a producer would (or JSON with --format json), so that a
 * running connector can be tried without writing a producer. The event is checked against the event
 * contract exactly as the connector reads it before anything is sent; a local file also gets its
 * size, sha256 and type as hints, and a warning when the configuration's `blobs.*` would refuse it.
 */
import { egressOf } from '../../config/egress.js';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { fileTypeFromFile } from 'file-type';
import { PIPELINES, type PipelineConfiguration } from '../../api/schemas.js';
import { BlobError, createBlobSource } from '../../blobs/index.js';
import type { Config } from '../../config/index.js';
import { kafkaClientOf } from '../../kafka/client-from-config.js';
import { registryOf } from '../../serde/registry-from-config.js';
import { silentLogger } from '../../observability/logger.js';
import { decodeDocumentArrived, type DocumentArrived } from '../../serde/input.js';
import { readCharacteristics } from './analyze.js';
import { addConfigOption, configArgs, configOf, type ConfigFlags } from '../config-option.js';
import { examples } from '../help.js';
import { printWarning } from '../messages.js';
import { printResult, UsageError } from './api-options.js';
import { INPUT_VALUE_SCHEMA } from '../../connector/topology.js';
import { topicNotAuthorized } from '../../kafka/admin.js';

interface SendFlags extends ConfigFlags {
  topic?: string;
  eventId?: string;
  key?: string;
  queryId?: string;
  pipeline: PipelineConfiguration;
  decision?: boolean;
  characteristics?: string;
  attribute: Record<string, string>;
  reprocess?: boolean;
  format: 'avro' | 'json';
  json?: boolean;
}

function attribute(value: string, previous: Record<string, string>): Record<string, string> {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError('expected <key>=<value>');
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

export function registerSendCommand(program: Command): void {
  const command = program
    .command('send')
    .summary('Publish one arrival event for a document, to try a running connector.')
    .description(
      'Publish one arrival event for a document to the input topic, as a producer would (Avro through the ' +
        'schema registry), so that a running connector analyses it. A local file is sent as a file:// URL, ' +
        'which the connector reads only under blobs.fileRoots.',
    )
    .argument('<file|url>', 'a local file, or a file://, http(s):// or s3://bucket/key URL')
    .option('--topic <topic>', 'the input topic (default: topics.arrived of the configuration)')
    .option('--event-id <id>', 'the idempotency key (default: a new one, send-<time>-<random>)')
    .option('--key <key>', 'the record key (default: the event id)')
    .option('--query-id <id>', 'your id for the document, passed to the API (no personal data)')
    .addOption(
      new Option('--pipeline <pipeline>', 'which analyses to run').choices(PIPELINES).default('FRAUD_ONLY'),
    )
    .option('--decision', 'ask for an Adaptive Decision as well')
    .option('--characteristics <file.json>', 'submission characteristics to attach (JSON file)')
    .addOption(
      new Option('--attribute <key=value>', 'an attribute echoed into every output (repeatable)')
        .argParser(attribute)
        .default({}, 'none'),
    )
    .option('--reprocess', 'submit again even if this event id was analysed before')
    .addOption(
      new Option('--format <format>', 'how the event is encoded: Avro through the registry, or UTF-8 JSON')
        .choices(['avro', 'json'])
        .default('avro'),
    )
    .option('--json', 'print what was sent as JSON (for scripts)');
  addConfigOption(command).action((target: string, flags: SendFlags, self: Command) =>
    send(target, flags, self),
  );
  examples(
    command,
    'docstream send -c config/sandbox.json invoice.pdf',
    'docstream send -c prod.json s3://inbox/2026/invoice-17.pdf --pipeline QUALITY_ONLY --attribute tenant=acme',
    'docstream send -c prod.json --format json --json invoice.pdf',
  );
}

async function send(target: string, flags: SendFlags, command: Command): Promise<void> {
  const config = configOf(flags);
  const topic = flags.topic ?? config.topics.arrived;
  const blob = await blobOf(target);
  const eventId =
    flags.eventId ??
    `send-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}-${randomBytes(3).toString('hex')}`;
  const candidate = {
    event_id: eventId,
    blob,
    query_id: flags.queryId ?? null,
    pipeline_configuration: flags.pipeline,
    enable_decision: flags.decision === true,
    submission_characteristics: flags.characteristics
      ? await readCharacteristics(flags.characteristics)
      : null,
    attributes: flags.attribute,
    reprocess: flags.reprocess === true,
  };
  // The connector's own reading of the event: what it would dead-letter is refused here.
  const checked = await decodeDocumentArrived(Buffer.from(JSON.stringify(candidate)), {
    decode: () => Promise.reject(new Error('not Avro')),
  });
  if (!checked.ok)
    throw new UsageError(`the event would be dead-lettered (${checked.code}): ${checked.message}`);
  const warning = await blobRefusal(checked.event, config);
  if (warning) printWarning(command, warning);

  const kafka = kafkaClientOf(config);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const presence = await admin.topicPresence(topic);
    if (presence === 'not-authorized') throw topicNotAuthorized(topic, 'topics.arrived');
    if (presence === 'missing') {
      throw new Error(`topic ${topic} does not exist: \`docstream run\` creates it at start, or create it`);
    }
  } finally {
    await admin.disconnect();
  }
  let value: Buffer;
  let format: string;
  let schemaId: number | null = null;
  if (flags.format === 'json') {
    value = Buffer.from(JSON.stringify(candidate));
    format = 'JSON';
  } else {
    const registry = registryOf(config, silentLogger);
    schemaId = config.registry.autoRegister
      ? await registry.registerValueSchema(topic, INPUT_VALUE_SCHEMA)
      : await registry.useRegisteredValueSchema(topic, INPUT_VALUE_SCHEMA);
    value = registry.encode(topic, avroShape(checked.event));
    format = `Avro, schema id ${schemaId}`;
  }
  const producer = kafka.producer();
  await producer.connect();
  try {
    const [sent] = await producer.send(topic, [{ key: flags.key ?? eventId, value }]);
    const result = {
      event_id: eventId,
      topic,
      partition: sent?.partition ?? null,
      offset: sent?.baseOffset ?? null,
      format: flags.format,
      schema_id: schemaId,
    };
    printResult(
      flags.json,
      result,
      () =>
        `sent ${eventId} to ${topic} partition ${result.partition} offset ${result.offset} (${format})\n` +
        `follow it: docstream inspect ${eventId}${configArgs(flags)}\n`,
    );
  } finally {
    await producer.disconnect();
  }
}

/** The blob of the event: a URL as given, or a local file as a file:// URL with its hints. */
async function blobOf(target: string): Promise<DocumentArrived['blob']> {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
    return { url: target, content_type: null, size_bytes: null, sha256: null };
  }
  const file = path.resolve(target);
  const info = await stat(file).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`${target}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  });
  if (!info.isFile()) throw new UsageError(`${target}: not a regular file`);
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return {
    url: pathToFileURL(file).href,
    content_type: (await fileTypeFromFile(file))?.mime ?? null,
    size_bytes: info.size,
    sha256: hash.digest('hex'),
  };
}

/**
 * Why a connector with this configuration would refuse the blob (its own check), for a local file
 * only: an http(s) or s3 blob would be fetched to be checked, which is the connector's work.
 */
async function blobRefusal(event: DocumentArrived, config: Config): Promise<string | undefined> {
  if (!event.blob.url.startsWith('file:')) return undefined;
  const source = createBlobSource(config.blobs, { egress: egressOf(config.api) });
  try {
    const opened = await source.resolve(event.blob);
    await opened.cleanup();
    return undefined;
  } catch (error) {
    if (!(error instanceof BlobError)) throw error;
    return `a connector with this configuration will dead-letter it (${error.code}): ${error.message}`;
  } finally {
    source.close();
  }
}

/** The Avro shape of DocumentArrived: the characteristics as a JSON string (avro/DocumentArrived.avsc). */
function avroShape(event: DocumentArrived): Record<string, unknown> {
  return {
    ...event,
    submission_characteristics:
      event.submission_characteristics === null ? null : JSON.stringify(event.submission_characteristics),
  };
}
