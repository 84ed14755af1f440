/**
 * The webhook topic's cleanup on the real broker: created with a window tied to the deadline, and an
 * existing topic of the former kind (compacted only) reported with the settings that fix it.
 */
import { jest } from '@jest/globals';
import { prefixedTopics } from '../../src/config/index.js';
import { webhookTopicConfigs } from '../../src/connector/outputs/decision-deliveries.js';
import { ensureTopology } from '../../src/connector/topology.js';
import { KafkaClient, type KafkaAdmin } from '../../src/kafka/index.js';
import type { Logger } from '../../src/observability/logger.js';
import { silentLogger } from '../../src/observability/logger.js';
import { Registry } from '../../src/serde/registry.js';
import { REGISTRY_URL } from '../harness/e2e.js';
import { uniqueName } from '../harness/topics.js';

jest.setTimeout(60_000);

const kafka = new KafkaClient({
  brokers: (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(','),
  clientId: 'docstream-webhook-topic-test',
});
const registry = new Registry({ url: REGISTRY_URL });
let admin: KafkaAdmin;
const made: string[] = [];

/** A logger that keeps its warnings (message and topic). */
function warnings(): { logger: Logger; seen: Array<{ topic: unknown; msg: string }> } {
  const seen: Array<{ topic: unknown; msg: string }> = [];
  const logger = Object.assign(Object.create(silentLogger) as Logger, {
    warn: (obj: { topic?: unknown }, msg: string) => void seen.push({ topic: obj.topic, msg }),
  });
  return { logger, seen };
}

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
});

afterAll(async () => {
  await admin.deleteTopics(made).catch(() => undefined);
  await admin.disconnect();
});

describe('the webhook topic', () => {
  it('is created compact,delete with a retention of one deadline window, and found as expected again', async () => {
    const topics = prefixedTopics(uniqueName('whtopic'), 1);
    made.push(...Object.values(topics).filter((v): v is string => typeof v === 'string'));
    const deadlineMs = 120_000;
    const first = warnings();
    await ensureTopology(admin, registry, topics, first.logger, { deadlineMs });
    const described = await admin.describeTopic(topics.webhooks, [
      'cleanup.policy',
      'retention.ms',
      'segment.ms',
    ]);
    expect(described.configs).toEqual(webhookTopicConfigs(deadlineMs));
    expect(described.configs['cleanup.policy']).toBe('compact,delete');
    expect(Number(described.configs['retention.ms'])).toBeGreaterThan(deadlineMs);
    const again = warnings();
    await ensureTopology(admin, registry, topics, again.logger, { deadlineMs });
    expect([...first.seen, ...again.seen]).toEqual([]);
  });

  it('warns about an existing compacted-only webhook topic, naming the settings that bound it', async () => {
    const topics = prefixedTopics(uniqueName('whtopic-old'), 1);
    made.push(...Object.values(topics).filter((v): v is string => typeof v === 'string'));
    await admin.ensureTopics([
      { topic: topics.webhooks, numPartitions: 1, configs: { 'cleanup.policy': 'compact' } },
    ]);
    const { logger, seen } = warnings();
    await ensureTopology(admin, registry, topics, logger, { deadlineMs: 60_000 });
    const about = seen.filter((w) => w.topic === topics.webhooks);
    expect(about.length).toBeGreaterThan(0);
    expect(about[0]!.msg).toContain('cleanup.policy is compact, expected compact,delete');
    expect(about[0]!.msg).toContain('cleanup.policy=[compact,delete]');
    expect(about[0]!.msg).toContain('retention.ms=360000');
  });
});
