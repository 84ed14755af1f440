import { WEBHOOK_EVENT_DECISION_FINISHED, type WebhookEvent } from '../api/schemas.js';
import type { RecordFeed, ViewRecord } from '../kafka/view.js';
import type { OutgoingMessage } from '../kafka/producer.js';
import { silentLogger } from '../observability/logger.js';
import { DecisionWebhooks, type DecisionEngine } from './decision-webhooks.js';
import type { DocumentState } from './state/codec.js';
import type { DocumentIdentity } from './types.js';

function delivery(submissionId: string, version = 1, type = WEBHOOK_EVENT_DECISION_FINISHED): WebhookEvent {
  return {
    type,
    version,
    tenant_id: 't',
    payload: { id: submissionId, status: 'SUCCESS', analysis_time: '2025-01-01T00:00:00Z', query_id: null },
  } as WebhookEvent;
}

class FakeFeed implements RecordFeed {
  push: (r: ViewRecord) => void = () => undefined;
  caughtUpCalls = 0;
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async caughtUp(): Promise<void> {
    this.caughtUpCalls += 1;
  }
}

class FakeEngine implements DecisionEngine {
  running = new Set<string>();
  delivered: string[] = [];
  elsewhere: string[] = [];
  async deliverDecision(submissionId: string): Promise<boolean> {
    if (!this.running.has(submissionId)) return false;
    this.delivered.push(submissionId);
    return true;
  }
  async decisionPublishedElsewhere(submissionId: string): Promise<void> {
    this.elsewhere.push(submissionId);
  }
}

function setup(options: { engine?: boolean } = {}) {
  const feed = new FakeFeed();
  const engine = new FakeEngine();
  const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
  const published: Array<{ doc: DocumentIdentity; body: Record<string, unknown>; source: unknown }> = [];
  const states = new Map<string, DocumentState>();
  let getDecisionCalls = 0;
  let failSend = false;
  const service = new DecisionWebhooks({
    openFeed: (onRecord) => {
      feed.push = onRecord;
      return feed;
    },
    sender: {
      send: async (topic, message) => {
        if (failSend) throw new Error('kafka down');
        sent.push({ topic, message });
      },
    },
    output: {
      publishResult: async (_kind, doc, body, extra) => {
        published.push({ doc, body, source: extra?.source });
      },
    },
    api: {
      getDecision: async (id) => {
        getDecisionCalls += 1;
        return { decision: 'ACCEPT', id };
      },
    },
    state: {
      bySubmission: (id) => states.get(id),
      caughtUp: () => feed.caughtUp(),
    },
    topic: 'hooks',
    logger: silentLogger,
    ...(options.engine === false ? {} : { engine }),
  });
  return {
    service,
    feed,
    engine,
    sent,
    published,
    states,
    calls: () => getDecisionCalls,
    failSends: (v: boolean) => (failSend = v),
  };
}

const known = {
  event_id: 'evt-1',
  submission_id: 'sub-1',
  query_id: 'q',
  attributes: { a: 'b' },
  traceparent: null,
} as unknown as DocumentState;

describe('DecisionWebhooks', () => {
  it('ignores other event types', async () => {
    const { service, calls } = setup();
    expect(await service.handler(delivery('sub-1', 1, 'documents.other'), 'wh-1')).toBe('ignored');
    expect(calls()).toBe(0);
  });

  it('hands the decision to the engine when this instance runs the document, then records the delivery', async () => {
    const { service, engine, sent, published } = setup();
    engine.running.add('sub-1');
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
    expect(engine.delivered).toEqual(['sub-1']);
    expect(published).toEqual([]);
    expect(sent.map((s) => [s.topic, s.message.key])).toEqual([
      ['hooks', 'id:wh-1'],
      ['hooks', `sub:sub-1:${WEBHOOK_EVENT_DECISION_FINISHED}:1`],
    ]);
  });

  it('publishes the decision itself for a document another instance owns, found in the shared state', async () => {
    const { service, published, states } = setup();
    states.set('sub-1', known);
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
    expect(published).toEqual([
      {
        doc: {
          submission_id: 'sub-1',
          event_id: 'evt-1',
          query_id: 'q',
          attributes: { a: 'b' },
          traceparent: null,
        },
        body: { decision: 'ACCEPT', id: 'sub-1' },
        source: 'webhook',
      },
    ]);
  });

  it('ignores a submission docstream has no record of, after reading the state to its end', async () => {
    const { service, feed, sent } = setup({ engine: false });
    expect(await service.handler(delivery('sub-x'), 'wh-1')).toBe('ignored');
    expect(feed.caughtUpCalls).toBe(1);
    expect(sent).toEqual([]);
  });

  it('answers duplicate for the same webhook id, and for the same submission, type and version', async () => {
    const { service, states, calls } = setup();
    states.set('sub-1', known);
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('duplicate');
    expect(await service.handler(delivery('sub-1'), 'wh-2')).toBe('duplicate');
    expect(await service.handler(delivery('sub-1', 2), 'wh-3')).toBe('accepted');
    expect(calls()).toBe(2);
  });

  it('lets a concurrent duplicate wait for the first delivery instead of publishing twice', async () => {
    const { service, states, published } = setup();
    states.set('sub-1', known);
    const outcomes = await Promise.all([
      service.handler(delivery('sub-1'), 'wh-1'),
      service.handler(delivery('sub-1'), 'wh-2'),
    ]);
    expect(outcomes.sort()).toEqual(['accepted', 'duplicate']);
    expect(published).toHaveLength(1);
  });

  it('fails (so the sender retries) when Kafka does not acknowledge, and accepts the retry', async () => {
    const { service, states, failSends } = setup();
    states.set('sub-1', known);
    failSends(true);
    await expect(service.handler(delivery('sub-1'), 'wh-1')).rejects.toThrow('kafka down');
    failSends(false);
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
  });

  it('learns deliveries handled by other instances from the shared topic', async () => {
    const { service, feed, engine, calls, states } = setup();
    states.set('sub-1', known);
    const record = (key: string) =>
      feed.push({
        key,
        value: Buffer.from(
          JSON.stringify({ webhook_id: 'wh-1', submission_id: 'sub-1', type: 't', version: 1 }),
        ),
        partition: 0,
        offset: '0',
      });
    record('id:wh-1');
    record(`sub:sub-1:${WEBHOOK_EVENT_DECISION_FINISHED}:1`);
    await Promise.resolve();
    expect(engine.elsewhere).toEqual(['sub-1']);
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('duplicate');
    expect(await service.handler(delivery('sub-1'), 'wh-9')).toBe('duplicate');
    expect(calls()).toBe(0);
    // A tombstone forgets the webhook id.
    feed.push({ key: 'id:wh-1', value: null, partition: 0, offset: '1' });
    expect(await service.handler(delivery('sub-1', 5), 'wh-1')).toBe('accepted');
  });
});
