/**
 * The one table of docstream's topics: partitions, compaction and value schema of each. `boot`
 * creates and registers from it, `dlq redrive` creates its marker topic from it, and
 * `docstream topology` prints it; anything else that needs the list of topics reads it here.
 */
import type { Config } from '../config/index.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import type { Logger } from '../observability/logger.js';
import type { AvroSchemaName } from '../serde/avro-schemas.js';
import type { Registry } from '../serde/registry.js';
import { webhookTopicConfigs } from './outputs/decision-deliveries.js';

type Topics = Config['topics'];
export type TopicKey = keyof Omit<Topics, 'outputPartitions' | 'replicationFactor'>;

interface TopicSpec {
  key: TopicKey;
  /** `outputs`: topics.outputPartitions; `input`: as many as the input topic (co-partitioned). */
  partitions: 'outputs' | 'input' | 1;
  /** `compact`: compacted for good; `deliveries`: the webhook topic's window (`decision-deliveries.ts`). */
  cleanup: 'delete' | 'compact' | 'deliveries';
  /** The Avro value schema registered for the topic, when docstream writes Avro to it. */
  schema: AvroSchemaName | null;
  /** The user's topics: created only when missing (local use), before the others. */
  input: boolean;
}

const TOPOLOGY: readonly TopicSpec[] = [
  { key: 'arrived', partitions: 'outputs', cleanup: 'delete', schema: null, input: true },
  { key: 'feedback', partitions: 'outputs', cleanup: 'delete', schema: null, input: true },
  { key: 'fraud', partitions: 'outputs', cleanup: 'delete', schema: 'FraudResult', input: false },
  { key: 'quality', partitions: 'outputs', cleanup: 'delete', schema: 'QualityResult', input: false },
  {
    key: 'classification',
    partitions: 'outputs',
    cleanup: 'delete',
    schema: 'ClassificationResult',
    input: false,
  },
  { key: 'decision', partitions: 'outputs', cleanup: 'delete', schema: 'DecisionResult', input: false },
  { key: 'dlq', partitions: 'outputs', cleanup: 'delete', schema: 'DeadLetter', input: false },
  { key: 'webhooks', partitions: 1, cleanup: 'deliveries', schema: null, input: false },
  { key: 'state', partitions: 'input', cleanup: 'compact', schema: null, input: false },
];

/** The topic of `docstream dlq redrive`'s markers: created by that command, not by `run`. */
const REDRIVES: TopicSpec = {
  key: 'redrives',
  partitions: 1,
  cleanup: 'compact',
  schema: null,
  input: false,
};

/** The value schema producers of the input topic write (`docstream send` registers it). */
export const INPUT_VALUE_SCHEMA: AvroSchemaName = 'DocumentArrived';

export interface TopicRequest {
  topic: string;
  numPartitions: number;
  replicationFactor: number;
  configs?: Record<string, string>;
}

function requestOf(spec: TopicSpec, t: Topics, deadlineMs: number, inputPartitions: number): TopicRequest {
  const configs = configsOf(spec, deadlineMs);
  return {
    topic: t[spec.key],
    numPartitions:
      spec.partitions === 'outputs'
        ? t.outputPartitions
        : spec.partitions === 'input'
          ? inputPartitions
          : spec.partitions,
    replicationFactor: t.replicationFactor,
    ...(configs ? { configs } : {}),
  };
}

/** The create request of the redrive marker topic. */
export function redrivesTopicRequest(t: Topics): TopicRequest {
  return requestOf(REDRIVES, t, 0, 0);
}

export interface TopologyTopic extends TopicRequest {
  key: TopicKey;
  /** `run` creates it when missing (the inputs: for local use); `dlq redrive`, the marker topic. */
  createdBy: 'run' | 'dlq redrive';
  input: boolean;
  /** Co-partitioned with the input topic: its partitions are the input's. */
  coPartitioned: boolean;
  /** The Avro value schema docstream registers for it (subject `<topic>-value`). */
  schema: AvroSchemaName | null;
}

/** The table as data (partitions and cleanup by kind), for what cannot call this module: the Helm chart. */
export function topologyTable(): ReadonlyArray<
  Pick<TopicSpec, 'key' | 'partitions' | 'cleanup'> & { createdBy: TopologyTopic['createdBy'] }
> {
  return [...TOPOLOGY, REDRIVES].map((spec) => ({
    key: spec.key,
    partitions: spec.partitions,
    cleanup: spec.cleanup,
    createdBy: spec === REDRIVES ? 'dlq redrive' : 'run',
  }));
}

/** Every topic docstream uses, as it would create them: the input topic taken as `inputPartitions`. */
export function topologyTopics(t: Topics, deadlineMs: number, inputPartitions: number): TopologyTopic[] {
  return [...TOPOLOGY, REDRIVES].map((spec) => ({
    ...requestOf(spec, t, deadlineMs, inputPartitions),
    key: spec.key,
    createdBy: spec === REDRIVES ? 'dlq redrive' : 'run',
    input: spec.input,
    coPartitioned: spec.partitions === 'input',
    schema: spec.schema,
  }));
}

function configsOf(spec: TopicSpec, deadlineMs: number): Record<string, string> | undefined {
  if (spec.cleanup === 'compact') return { 'cleanup.policy': 'compact' };
  if (spec.cleanup === 'deliveries') return webhookTopicConfigs(deadlineMs);
  return undefined;
}

/** One topic as docstream creates it: its name, partitions, replication and configs, and its schema. */
export interface PlannedTopic {
  key: TopicKey;
  topic: string;
  numPartitions: number;
  replicationFactor: number;
  configs?: Record<string, string>;
  /** The Avro value schema registered under `<topic>-value`, when docstream writes Avro to it. */
  schema: AvroSchemaName | null;
  /** The user's topics (the inputs): created only when missing, for local use. */
  input: boolean;
}

/** Every topic of the table as `ensureTopology` creates it, for an input topic of `inputPartitions`. */
export function plannedTopics(t: Topics, deadlineMs: number, inputPartitions: number): PlannedTopic[] {
  return TOPOLOGY.map((spec) => ({
    key: spec.key,
    ...requestOf(spec, t, deadlineMs, inputPartitions),
    schema: spec.schema,
    input: spec.input,
  }));
}

/**
 * Creates the topics that are missing and registers the value schemas (with `autoRegister` false,
 * takes the ids already registered and fails naming the first subject that lacks its schema,
 * before anything is consumed). Returns the input topic's
 * partition count; fails when the state topic is not co-partitioned with it. An existing topic whose
 * partitions or configs differ is left as it is, with a warning naming the difference.
 */
export async function ensureTopology(
  admin: KafkaAdmin,
  registry: Registry,
  t: Topics,
  log: Logger,
  options: { deadlineMs: number; autoRegister?: boolean },
): Promise<number> {
  const request = (spec: TopicSpec, inputPartitions: number) =>
    requestOf(spec, t, options.deadlineMs, inputPartitions);
  await admin.ensureTopics(TOPOLOGY.filter((s) => s.input).map((s) => request(s, 0)));
  const inputPartitions = await admin.partitionCount(t.arrived);
  const ensured = await admin.ensureTopics(
    TOPOLOGY.filter((s) => !s.input).map((s) => request(s, inputPartitions)),
  );
  for (const m of ensured.mismatches) {
    // The webhook topic of docstream ≤ 0.1 was compacted only: it would grow by every delivery forever.
    const fix =
      m.topic === t.webhooks
        ? `; set ${Object.entries(webhookTopicConfigs(options.deadlineMs))
            .map(([k, v]) => `${k}=${v.includes(',') ? `[${v}]` : v}`)
            .join(
              ' ',
            )} (kafka-configs.sh --alter --entity-type topics --entity-name ${m.topic} --add-config ...)`
        : '';
    log.warn({ topic: m.topic }, `${m.problem}${fix}`);
  }
  const statePartitions = await admin.partitionCount(t.state);
  if (statePartitions < inputPartitions) {
    throw new Error(
      `state topic ${t.state} has ${statePartitions} partitions but ${t.arrived} has ${inputPartitions}: ` +
        'they must be co-partitioned (add partitions to the state topic)',
    );
  }
  for (const spec of TOPOLOGY) {
    if (!spec.schema) continue;
    if (options.autoRegister === false) await registry.useRegisteredValueSchema(t[spec.key], spec.schema);
    else await registry.registerValueSchema(t[spec.key], spec.schema);
  }
  return inputPartitions;
}
