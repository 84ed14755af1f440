/**
 * The one table of docstream's topics: partitions, compaction and value schema of each. `boot`
 * creates and registers from it; anything else that needs the list of topics reads it here.
 */
import type { Config } from '../config/index.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import type { Logger } from '../observability/logger.js';
import type { AvroSchemaName } from '../serde/avro-schemas.js';
import type { Registry } from '../serde/registry.js';

type Topics = Config['topics'];

interface TopicSpec {
  key: keyof Omit<Topics, 'outputPartitions' | 'replicationFactor'>;
  /** `outputs`: topics.outputPartitions; `input`: as many as the input topic (co-partitioned). */
  partitions: 'outputs' | 'input' | 1;
  compact: boolean;
  /** The Avro value schema registered for the topic, when docstream writes Avro to it. */
  schema: AvroSchemaName | null;
  /** The user's topics: created only when missing (local use), before the others. */
  input: boolean;
}

const TOPOLOGY: readonly TopicSpec[] = [
  { key: 'arrived', partitions: 'outputs', compact: false, schema: null, input: true },
  { key: 'feedback', partitions: 'outputs', compact: false, schema: null, input: true },
  { key: 'fraud', partitions: 'outputs', compact: false, schema: 'FraudResult', input: false },
  { key: 'quality', partitions: 'outputs', compact: false, schema: 'QualityResult', input: false },
  {
    key: 'classification',
    partitions: 'outputs',
    compact: false,
    schema: 'ClassificationResult',
    input: false,
  },
  { key: 'decision', partitions: 'outputs', compact: false, schema: 'DecisionResult', input: false },
  { key: 'dlq', partitions: 'outputs', compact: false, schema: 'DeadLetter', input: false },
  { key: 'webhooks', partitions: 1, compact: true, schema: null, input: false },
  { key: 'state', partitions: 'input', compact: true, schema: null, input: false },
];

/**
 * Creates the topics that are missing and registers the value schemas. Returns the input topic's
 * partition count; fails when the state topic is not co-partitioned with it.
 */
export async function ensureTopology(
  admin: KafkaAdmin,
  registry: Registry,
  t: Topics,
  log: Logger,
): Promise<number> {
  const request = (spec: TopicSpec, inputPartitions: number) => ({
    topic: t[spec.key],
    numPartitions:
      spec.partitions === 'outputs' ? t.outputPartitions : spec.partitions === 'input' ? inputPartitions : 1,
    replicationFactor: t.replicationFactor,
    ...(spec.compact ? { configs: { 'cleanup.policy': 'compact' } } : {}),
  });
  await admin.ensureTopics(TOPOLOGY.filter((s) => s.input).map((s) => request(s, 0)));
  const inputPartitions = await admin.partitionCount(t.arrived);
  const ensured = await admin.ensureTopics(
    TOPOLOGY.filter((s) => !s.input).map((s) => request(s, inputPartitions)),
  );
  for (const m of ensured.mismatches) log.warn({ topic: m.topic }, m.problem);
  const statePartitions = await admin.partitionCount(t.state);
  if (statePartitions < inputPartitions) {
    throw new Error(
      `state topic ${t.state} has ${statePartitions} partitions but ${t.arrived} has ${inputPartitions}: ` +
        'they must be co-partitioned (add partitions to the state topic)',
    );
  }
  for (const spec of TOPOLOGY) {
    if (spec.schema) await registry.registerValueSchema(t[spec.key], spec.schema);
  }
  return inputPartitions;
}
