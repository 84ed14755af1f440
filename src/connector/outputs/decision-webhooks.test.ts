import { jest } from '@jest/globals';
import { WEBHOOK_EVENT_DECISION_FINISHED, type WebhookEvent } from '../../api/schemas.js';
import type { RecordFeed, ViewRecord } from '../../kafka/view.js';
import type { OutgoingMessage } from '../../kafka/producer.js';
import { silentLogger } from '../../observability/logger.js';
import { decodeDelivery, encodeDelivery, RecentDeliveries } from './decision-deliveries.js';
import { DecisionWebhooks, type DecisionEngine } from './decision-webhooks.js';

const WINDOW = 60_000;

function delivery(
  submissionId: string,
  version = 1,
  type = WEBHOOK_EVENT_DECISION_FINISHED,
  tenantId = 't',
): WebhookEvent {
  return {
    type,
    version,
    tenant_id: tenantId,
    payload: { id: submissionId, status: 'SUCCESS', analysis_time: '2025-01-01T00:00:00Z', query_id: null },
  } as WebhookEvent;
}

class FakeFeed implements RecordFeed {
  push: (r: ViewRecord) => void = () => undefined;
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async caughtUp(): Promise<void> {}
}

class FakeEngine implements DecisionEngine {
  ready: string[] = [];
  /** The tenant id each call was given, in the same order. */
  tenantIds: Array<string | null> = [];
  decisionReady(submissionId: string, tenantId: string | null): void {
    this.ready.push(submissionId);
    this.tenantIds.push(tenantId);
  }
}

function setup(options: { engine?: boolean; now?: () => number } = {}) {
  const feed = new FakeFeed();
  const engine = new FakeEngine();
  const now = options.now ?? (() => 1_000_000);
  const deliveries = new RecentDeliveries(WINDOW, now);
  const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
  let failSend = false;
  let slowSend: Promise<void> | null = null;
  const service = new DecisionWebhooks({
    openFeed: (onRecord) => {
      feed.push = onRecord;
      return feed;
    },
    sender: {
      send: async (topic, message) => {
        if (slowSend) await slowSend;
        if (failSend) throw new Error('kafka down');
        sent.push({ topic, message });
      },
    },
    deliveries,
    topic: 'hooks',
    logger: silentLogger,
    now,
    ...(options.engine === false ? {} : { engine }),
  });
  /** What another instance's receiver wrote, as this instance's tail reads it. */
  const fromTopic = (submissionId: string, webhookId: string, receivedAt = now(), tenantId?: string) =>
    feed.push({
      key: submissionId,
      value: encodeDelivery({
        webhook_id: webhookId,
        submission_id: submissionId,
        type: WEBHOOK_EVENT_DECISION_FINISHED,
        version: 1,
        received_at: receivedAt,
        ...(tenantId !== undefined ? { tenant_id: tenantId } : {}),
      }),
      partition: 0,
      offset: '0',
    });
  return {
    service,
    engine,
    deliveries,
    sent,
    fromTopic,
    failSends: (v: boolean) => (failSend = v),
    holdSends: (p: Promise<void> | null) => (slowSend = p),
  };
}

describe('DecisionWebhooks', () => {
  it('ignores other event types and records nothing', async () => {
    const { service, sent, engine } = setup();
    expect(await service.handler(delivery('sub-1', 1, 'documents.other'), 'wh-1')).toBe('ignored');
    expect(sent).toEqual([]);
    expect(engine.ready).toEqual([]);
  });

  it('records a verified delivery in the webhook topic keyed by submission, then tells the engine', async () => {
    const { service, sent, engine } = setup();
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.topic).toBe('hooks');
    expect(sent[0]!.message.key).toBe('sub-1');
    expect(decodeDelivery(sent[0]!.message.value as Buffer)).toEqual({
      webhook_id: 'wh-1',
      submission_id: 'sub-1',
      type: WEBHOOK_EVENT_DECISION_FINISHED,
      version: 1,
      received_at: 1_000_000,
      tenant_id: 't',
    });
    // Told on arrival, and again once recorded (the first delivery of the submission in the window),
    // with the tenant id the event names.
    expect(engine.ready).toEqual(['sub-1', 'sub-1']);
    expect(engine.tenantIds).toEqual(['t', 't']);
  });

  it('records an empty tenant_id as none: the engine is told null, the record has no tenant_id', async () => {
    const { service, sent, engine } = setup();
    expect(await service.handler(delivery('sub-1', 1, WEBHOOK_EVENT_DECISION_FINISHED, ''), 'wh-1')).toBe(
      'accepted',
    );
    expect(decodeDelivery(sent[0]!.message.value as Buffer)).not.toHaveProperty('tenant_id');
    expect(JSON.parse((sent[0]!.message.value as Buffer).toString())).not.toHaveProperty('tenant_id');
    expect(engine.tenantIds).toEqual([null, null]);
  });

  it("passes on the tenant id of other instances' records, and null for records without one", () => {
    const { fromTopic, engine } = setup();
    fromTopic('sub-1', 'wh-1', undefined, 'acme-id');
    fromTopic('sub-2', 'wh-2');
    expect(engine.ready).toEqual(['sub-1', 'sub-2']);
    expect(engine.tenantIds).toEqual(['acme-id', null]);
  });

  it('tells the engine again of a delivery naming a tenant id not seen for its submission', () => {
    const { fromTopic, engine, deliveries } = setup();
    fromTopic('sub-1', 'wh-1', undefined, 'globex-id');
    fromTopic('sub-1', 'wh-2', undefined, 'globex-id');
    fromTopic('sub-1', 'wh-3', undefined, 'acme-id');
    expect(engine.tenantIds).toEqual(['globex-id', 'acme-id']);
    expect(deliveries.tenantIdsOf('sub-1')).toEqual(['globex-id', 'acme-id']);
    expect(deliveries.tenantIdsOf('sub-2')).toBeUndefined();
  });

  it('answers only after Kafka acknowledged the record', async () => {
    const { service, holdSends, engine } = setup();
    let release: () => void = () => undefined;
    holdSends(new Promise<void>((r) => (release = r)));
    let answered = false;
    const outcome = service.handler(delivery('sub-1'), 'wh-1').then((o) => {
      answered = true;
      return o;
    });
    // Fake time moves on (promise jobs and setImmediate stay real): still no answer without the ack.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      await jest.advanceTimersByTimeAsync(1000);
    } finally {
      jest.useRealTimers();
    }
    expect(answered).toBe(false);
    // This instance's engine need not wait for the record to fetch the decision.
    expect(engine.ready).toEqual(['sub-1']);
    holdSends(null);
    release();
    expect(await outcome).toBe('accepted');
  });

  it('fails (so the sender retries) when Kafka does not acknowledge, and accepts the retry', async () => {
    const { service, failSends, engine, sent } = setup();
    failSends(true);
    await expect(service.handler(delivery('sub-1'), 'wh-1')).rejects.toThrow('kafka down');
    failSends(false);
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
    expect(sent).toHaveLength(1);
    // Told at each attempt; its engine fetches once (engine.test.ts).
    expect(engine.ready).toEqual(['sub-1', 'sub-1', 'sub-1']);
  });

  it('answers duplicate for the same webhook id, and for the same submission, type and version', async () => {
    const { service, sent, engine } = setup();
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('accepted');
    expect(await service.handler(delivery('sub-1'), 'wh-1')).toBe('duplicate');
    expect(await service.handler(delivery('sub-1'), 'wh-2')).toBe('duplicate');
    expect(await service.handler(delivery('sub-1', 2), 'wh-3')).toBe('accepted');
    expect(sent).toHaveLength(2);
    // Duplicates are not passed on; a new version is (the engine fetches a decision once anyway).
    expect(engine.ready).toEqual(['sub-1', 'sub-1', 'sub-1']);
  });

  it('lets a concurrent duplicate wait for the first delivery instead of recording twice', async () => {
    const { service, sent } = setup();
    const outcomes = await Promise.all([
      service.handler(delivery('sub-1'), 'wh-1'),
      service.handler(delivery('sub-1'), 'wh-2'),
    ]);
    expect(outcomes.sort()).toEqual(['accepted', 'duplicate']);
    expect(sent).toHaveLength(1);
  });

  it('tells the engine of deliveries other instances received, once per submission', () => {
    const { fromTopic, engine } = setup();
    fromTopic('sub-1', 'wh-1');
    fromTopic('sub-1', 'wh-1');
    fromTopic('sub-1', 'wh-2');
    fromTopic('sub-2', 'wh-3');
    expect(engine.ready).toEqual(['sub-1', 'sub-2']);
  });

  it('knows deliveries other instances received: a new webhook id for the same event is a duplicate', async () => {
    const { service, fromTopic, sent } = setup({ engine: false });
    fromTopic('sub-1', 'wh-1');
    expect(await service.handler(delivery('sub-1'), 'wh-9')).toBe('duplicate');
    expect(sent).toEqual([]);
  });

  it('skips deliveries older than the window when reading the topic', () => {
    const { fromTopic, engine, deliveries } = setup();
    fromTopic('sub-old', 'wh-1', 1_000_000 - WINDOW - 1);
    expect(engine.ready).toEqual([]);
    expect(deliveries.has('sub-old')).toBe(false);
  });

  it('refuses a record of the topic that is not a delivery with a typed error (the tail logs and skips it)', () => {
    const { engine } = setup();
    expect(() => decodeDelivery(Buffer.from('not json'))).toThrow(
      expect.objectContaining({ code: 'webhook_record_invalid' }),
    );
    expect(() => decodeDelivery(Buffer.from(JSON.stringify({ webhook_id: 'x' })))).toThrow(
      'webhook record is not a delivery',
    );
    expect(engine.ready).toEqual([]);
  });

  it('reads the records of the former compacted dedupe log (handled_at)', () => {
    const value = Buffer.from(
      JSON.stringify({ webhook_id: 'w', submission_id: 's', type: 't', version: 0, handled_at: 5 }),
    );
    expect(decodeDelivery(value)).toMatchObject({ submission_id: 's', received_at: 5 });
  });

  it('reads records written before the tenant id was carried: they name none', () => {
    const value = Buffer.from(
      JSON.stringify({ v: 1, webhook_id: 'w', submission_id: 's', type: 't', version: 0, received_at: 5 }),
    );
    expect(decodeDelivery(value)).toEqual({
      webhook_id: 'w',
      submission_id: 's',
      type: 't',
      version: 0,
      received_at: 5,
    });
    const recent = new RecentDeliveries(WINDOW, () => 5);
    recent.add(decodeDelivery(value));
    expect(recent.tenantIdsOf('s')).toEqual([null]);
  });
});

describe('RecentDeliveries', () => {
  it('forgets deliveries once they are older than the window', () => {
    let now = 0;
    const recent = new RecentDeliveries(1000, () => now);
    const d = (submission_id: string, at: number) => ({
      webhook_id: `wh-${submission_id}`,
      submission_id,
      type: 't',
      version: 0,
      received_at: at,
    });
    expect(recent.add(d('a', 0))).toBe(true);
    now = 600;
    expect(recent.add(d('b', 600))).toBe(true);
    now = 1200;
    expect(recent.add(d('c', 1200))).toBe(true);
    expect(recent.has('a')).toBe(false);
    expect(recent.has('b')).toBe(true);
    expect(recent.size).toBe(2);
    // A later delivery of a known submission keeps it for another window.
    expect(recent.add({ ...d('b', 1500), webhook_id: 'again' })).toBe(false);
    now = 2400;
    expect(recent.add(d('e', 2400))).toBe(true);
    expect(recent.has('b')).toBe(true);
    expect(recent.has('c')).toBe(false);
  });
});
