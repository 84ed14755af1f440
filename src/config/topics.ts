import { CONFIG_SPEC, type Config } from './spec.js';

const TOPIC_KEYS = [
  'arrived',
  'fraud',
  'quality',
  'classification',
  'decision',
  'dlq',
  'feedback',
  'state',
  'webhooks',
  'redrives',
] as const;

/**
 * Every topic docstream uses, under one prefix (`<prefix>.documents.arrived`, ...): a namespace of its
 * own for a demo run, a test or a benchmark, so runs never read each other's records.
 */
export function prefixedTopics(prefix: string, partitions: number): Config['topics'] {
  const names = Object.fromEntries(
    TOPIC_KEYS.map((key) => [key, `${prefix}.${CONFIG_SPEC.topics[key].default as string}`]),
  ) as Record<(typeof TOPIC_KEYS)[number], string>;
  return { ...names, outputPartitions: partitions, replicationFactor: 1 };
}
