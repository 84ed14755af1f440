/**
 * `docstream run`: one member of the consumer group. It consumes arrival and feedback events, admits
 * each document through the engine (durable before its offset moves), commits the highest safe offsets,
 * pauses input when full, resumes the unfinished documents of every partition it is given, and shuts
 * down cleanly.
 */
import type { Config } from '../config/index.js';
import { DocumentAnalysisClient } from '../client/client.js';
import { createBlobSource } from '../blobs/index.js';
import { KafkaClient } from '../kafka/client.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import type { KafkaProducer } from '../kafka/producer.js';
import type { BatchControl, IncomingBatch, IncomingMessage, KafkaConsumer } from '../kafka/consumer.js';
import { CoalescingSender } from '../kafka/coalescer.js';
import { Registry } from '../serde/registry.js';
import { decodeDocumentArrived, decodeFeedbackEvent } from '../serde/input.js';
import type { Logger } from '../observability/logger.js';
import { ConnectorMetrics } from '../observability/metrics.js';
import { apiPort } from './api-port.js';
import { parseAwaitedOverride } from './awaited.js';
import { DocumentEngine } from './engine.js';
import { OffsetTracker } from './offsets.js';
import { KafkaOutput } from './output.js';
import { PollScheduler } from '../util/scheduler.js';
import { StateStore } from './state-store.js';
import type { Awaitable, SourceRecord } from './types.js';
import { startWebhookReceiver, type WebhookReceiver } from '../webhooks/receiver.js';
import { WebhookService } from '../webhooks/service.js';
import { WebhookVerifier } from '../webhooks/verify.js';

export interface ConnectorOptions {
  config: Config;
  logger: Logger;
  metrics?: ConnectorMetrics;
  /** false: serve only the webhook receiver (`docstream webhooks`), consume no input. Default true. */
  consume?: boolean;
}

const RESULT_SCHEMAS = {
  fraud: 'FraudResult',
  quality: 'QualityResult',
  classification: 'ClassificationResult',
  decision: 'DecisionResult',
} as const;

export class Connector {
  readonly metrics: ConnectorMetrics;
  readonly engine: DocumentEngine;
  readonly client: DocumentAnalysisClient;
  private readonly kafka: KafkaClient;
  private readonly admin: KafkaAdmin;
  private readonly producer: KafkaProducer;
  private readonly registry: Registry;
  private readonly state: StateStore;
  private readonly scheduler = new PollScheduler();
  private readonly blobs: ReturnType<typeof createBlobSource>;
  private readonly output: KafkaOutput;
  private readonly sender: CoalescingSender;
  private webhooks: WebhookService | null = null;
  private receiver: WebhookReceiver | null = null;
  private consumer: KafkaConsumer | null = null;
  private readonly trackers = new Map<string, OffsetTracker>();
  /** Per input partition: a promise resolved once its state is read and its unfinished work resumed. */
  private readonly prepared = new Map<number, Promise<void>>();
  private admitting = 0;
  private inputPaused = false;
  private commitTimer: NodeJS.Timeout | null = null;
  private lagTimer: NodeJS.Timeout | null = null;
  private stopping: Promise<void> | null = null;
  private started = false;
  private readonly log: Logger;

  private constructor(private readonly options: ConnectorOptions) {
    const { config, logger } = options;
    this.log = logger;
    this.metrics = options.metrics ?? new ConnectorMetrics();
    this.kafka = new KafkaClient({
      brokers: config.kafka.brokers,
      clientId: config.kafka.clientId,
      ssl: config.kafka.ssl,
      ...(config.kafka.saslMechanism !== 'none'
        ? {
            sasl: {
              mechanism: config.kafka.saslMechanism,
              username: config.kafka.saslUsername,
              password: config.kafka.saslPassword,
            },
          }
        : {}),
      logger,
    });
    this.admin = this.kafka.admin();
    this.producer = this.kafka.producer();
    this.registry = new Registry({
      url: config.registry.url,
      logger,
      ...(config.registry.username
        ? { username: config.registry.username, password: config.registry.password }
        : {}),
    });
    this.state = new StateStore(this.kafka, this.admin, config.topics.state, logger);
    this.client = new DocumentAnalysisClient({
      ...(config.api.cell ? { cell: config.api.cell } : { baseUrl: config.api.baseUrl }),
      ...(config.api.tokenUrl ? { tokenUrl: config.api.tokenUrl } : {}),
      ...(Object.keys(config.api.cells as object).length > 0
        ? { cells: config.api.cells as Record<string, { baseUrl: string; tokenUrl: string }> }
        : {}),
      clientId: config.api.clientId,
      clientSecret: config.api.clientSecret,
      rateLimit: { ratePerSecond: config.api.ratePerSecond },
      retry: { attempts: config.api.retryAttempts, maxTotalMs: config.api.retryMaxTotalMs },
      timeoutMs: config.api.timeoutMs,
      logger,
      onCall: (call) =>
        this.metrics.recordCall({
          endpoint: `${call.method} ${call.endpoint}`,
          status: call.status,
          retried: call.retried,
        }),
    });
    this.blobs = createBlobSource(config.blobs, { logger });
    this.sender = new CoalescingSender(this.producer);
    this.output = new KafkaOutput(
      this.sender,
      this.registry,
      {
        fraud: config.topics.fraud,
        quality: config.topics.quality,
        classification: config.topics.classification,
        decision: config.topics.decision,
        dlq: config.topics.dlq,
        state: config.topics.state,
      },
      (state) => this.state.apply(state),
    );
    const c = config.connector;
    this.engine = new DocumentEngine(
      {
        api: apiPort(this.client, { withMetadata: c.withMetadata }),
        blobs: this.blobs,
        out: this.output,
        scheduler: this.scheduler,
        logger,
      },
      {
        maxInFlight: c.maxInFlight,
        pollInitialMs: c.pollInitialMs,
        pollMaxMs: c.pollMaxMs,
        deadlineMs: c.deadlineMs,
        decisionPolling: c.decisionPolling,
        deleteAfterPublish: c.deleteAfterPublish,
        attachReportUrl: c.attachReportUrl,
        awaitedOverride: parseAwaitedOverride(c.awaitedResults),
      },
      {
        onPublished: (kind: Awaitable) => this.metrics.resultsPublished.inc({ kind }),
        onFinished: (state, outcome) => {
          if (outcome === 'failed') return;
          this.metrics.completed.inc({ outcome });
          if (outcome === 'done')
            this.metrics.stageDuration.observe(
              { stage: 'end_to_end' },
              (Date.now() - state.created_at) / 1000,
            );
        },
        onDeadLetter: (stage, code) => this.metrics.failed.inc({ stage, reason: code }),
        onStage: (stage, ms) => this.metrics.stageDuration.observe({ stage }, ms / 1000),
        onRoom: () => this.maybeResume(),
      },
    );
  }

  /** Connects, prepares topics and schemas, reads the state, and starts consuming. */
  static async start(options: ConnectorOptions): Promise<Connector> {
    const connector = new Connector(options);
    try {
      await connector.boot();
    } catch (err) {
      await connector.stop().catch(() => undefined);
      throw err;
    }
    return connector;
  }

  private get topics(): Config['topics'] {
    return this.options.config.topics;
  }

  private async boot(): Promise<void> {
    const { config } = this.options;
    const t = this.topics;
    await this.admin.connect();
    const outputs = { numPartitions: t.outputPartitions, replicationFactor: t.replicationFactor };
    // The input and feedback topics belong to the user; they are created only when missing (local use).
    await this.admin.ensureTopics([
      { topic: t.arrived, ...outputs },
      { topic: t.feedback, ...outputs },
    ]);
    const inputPartitions = await this.admin.partitionCount(t.arrived);
    const ensured = await this.admin.ensureTopics([
      { topic: t.fraud, ...outputs },
      { topic: t.quality, ...outputs },
      { topic: t.classification, ...outputs },
      { topic: t.decision, ...outputs },
      { topic: t.dlq, ...outputs },
      {
        topic: t.webhooks,
        numPartitions: 1,
        replicationFactor: t.replicationFactor,
        configs: { 'cleanup.policy': 'compact' },
      },
      {
        topic: t.state,
        numPartitions: inputPartitions,
        replicationFactor: t.replicationFactor,
        configs: { 'cleanup.policy': 'compact' },
      },
    ]);
    for (const m of ensured.mismatches) this.log.warn({ topic: m.topic }, m.problem);
    const statePartitions = await this.admin.partitionCount(t.state);
    if (statePartitions < inputPartitions) {
      throw new Error(
        `state topic ${t.state} has ${statePartitions} partitions but ${t.arrived} has ${inputPartitions}: ` +
          'they must be co-partitioned (add partitions to the state topic)',
      );
    }
    for (const [kind, schema] of Object.entries(RESULT_SCHEMAS)) {
      await this.registry.registerValueSchema(t[kind as Awaitable], schema);
    }
    await this.registry.registerValueSchema(t.dlq, 'DeadLetter');
    await this.producer.connect();
    await this.state.start();
    await this.state.caughtUp();
    this.log.info({ documents: this.state.size }, 'state loaded');
    if (config.webhooks.enabled || this.options.consume === false) await this.startWebhooks();
    if (this.options.consume === false) {
      this.started = true;
      return;
    }

    const consumer = this.kafka.consumer({
      groupId: config.kafka.groupId,
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
      heartbeatIntervalMs: config.kafka.heartbeatIntervalMs,
    });
    this.consumer = consumer;
    consumer.onGroupJoin((join) => {
      const removed = join.removed[t.arrived] ?? [];
      if (removed.length > 0) {
        this.engine.revoke(removed);
        for (const p of removed) {
          this.trackers.get(t.arrived)?.drop(p);
          this.prepared.delete(p);
        }
      }
      for (const p of join.removed[t.feedback] ?? []) this.trackers.get(t.feedback)?.drop(p);
      for (const p of join.added[t.arrived] ?? []) this.prepare(p);
      this.log.info({ assignment: join.assignment }, 'partitions assigned');
      // A fresh assignment starts unpaused; the next batch pauses again if the instance is still full.
      this.inputPaused = false;
      consumer.resume(t.arrived, join.assignment[t.arrived] ?? []);
    });
    consumer.onRebalancing(() => void this.commit());
    consumer.onCrash((crash) =>
      this.log.error({ err: crash.error.message, restart: crash.restart }, 'consumer crashed'),
    );
    await consumer.connect();
    await consumer.subscribe([t.arrived, t.feedback], { fromBeginning: true });
    await consumer.run((batch, control) => this.onBatch(batch, control), {
      autoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, Math.min(4, inputPartitions)),
    });
    this.commitTimer = setInterval(() => void this.commit(), config.connector.commitIntervalMs);
    this.lagTimer = setInterval(() => void this.updateLag(), 5000);
    this.commitTimer.unref();
    this.lagTimer.unref();
    this.started = true;
  }

  private async startWebhooks(): Promise<void> {
    const w = this.options.config.webhooks;
    if (w.secrets.length === 0)
      throw new Error('webhooks.secrets: at least one whsec_ signing secret is required');
    this.webhooks = new WebhookService({
      kafka: this.kafka,
      admin: this.admin,
      sender: this.sender,
      output: this.output,
      client: this.client,
      state: this.state,
      topic: this.topics.webhooks,
      logger: this.log,
      ...(this.options.consume === false ? {} : { engine: this.engine }),
    });
    await this.webhooks.start();
    this.receiver = await startWebhookReceiver({
      host: w.host,
      port: w.port,
      path: w.path,
      maxBodyBytes: w.maxBodyBytes,
      verifier: new WebhookVerifier(w.secrets, w.toleranceSeconds),
      handler: this.webhooks.handler,
      logger: this.log,
      onOutcome: (outcome) => this.metrics.webhooks.inc({ outcome }),
    });
    this.log.info({ url: this.receiver.url }, 'webhook receiver listening');
  }

  /** Where the webhook receiver listens, when it runs. */
  get webhookUrl(): string | null {
    return this.receiver?.url ?? null;
  }

  /** True once consuming; with at least one partition assigned when `assigned` is asked for. */
  isReady(): { kafka: boolean; assigned: number } {
    const assignment = this.consumer?.currentAssignment() ?? {};
    return {
      kafka: this.started && !this.stopping,
      assigned: (assignment[this.topics.arrived] ?? []).length,
    };
  }

  private tracker(topic: string): OffsetTracker {
    let t = this.trackers.get(topic);
    if (!t) {
      t = new OffsetTracker();
      this.trackers.set(topic, t);
    }
    return t;
  }

  /** Reads every state record of a newly assigned partition, then resumes its unfinished documents. */
  private prepare(partition: number): Promise<void> {
    let p = this.prepared.get(partition);
    if (!p) {
      p = this.state.caughtUp([partition]).then(() => {
        const unfinished = this.state.unfinished(partition);
        for (const s of unfinished) this.engine.resume(s);
        if (unfinished.length > 0)
          this.log.info({ partition, documents: unfinished.length }, 'resumed unfinished documents');
      });
      p.catch((err: unknown) => {
        this.prepared.delete(partition);
        this.log.warn({ partition, err: (err as Error).message }, 'preparing a partition failed; will retry');
      });
      this.prepared.set(partition, p);
    }
    return p;
  }

  private async onBatch(batch: IncomingBatch, control: BatchControl): Promise<void> {
    if (batch.topic === this.topics.feedback) return this.onFeedbackBatch(batch, control);
    await this.prepare(batch.partition);
    const offsets = this.tracker(batch.topic).partition(batch.partition);
    const max = this.options.config.connector.maxInFlight;
    const admissions: Array<Promise<void>> = [];
    let last: string | null = null;
    const heartbeat = setInterval(() => void control.heartbeat().catch(() => undefined), 1000);
    try {
      for (const message of batch.messages) {
        if (!control.isRunning() || control.isStale() || this.stopping) break;
        if (this.engine.inFlight + this.admitting >= max) {
          this.pauseInput();
          break;
        }
        offsets.track(message.offset);
        last = message.offset;
        this.admitting += 1;
        admissions.push(
          this.admitRecord(message)
            .then(() => offsets.complete(message.offset))
            .finally(() => {
              this.admitting -= 1;
            }),
        );
      }
      const settled = await Promise.allSettled(admissions);
      const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      // Nothing after an unrecorded record may be taken: the batch is fetched again from the last
      // resolved offset, and the records already recorded are recognised by their state.
      if (failure) throw failure.reason;
      if (last !== null) control.resolveOffset(last);
    } finally {
      clearInterval(heartbeat);
    }
  }

  private sourceOf(message: IncomingMessage): SourceRecord {
    return {
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
      key: message.key,
      value: message.value,
      traceparent: message.headers.traceparent?.toString('utf8') ?? null,
    };
  }

  private async admitRecord(message: IncomingMessage): Promise<void> {
    const source = this.sourceOf(message);
    const decoded = await decodeDocumentArrived(message.value, this.registry);
    if (!decoded.ok) {
      await this.output.deadLetter({
        source,
        event_id: decoded.event_id,
        submission_id: null,
        stage:
          decoded.code === 'schema_invalid' || decoded.code === 'characteristics_too_large'
            ? 'validate'
            : 'decode',
        error_code: decoded.code,
        message: decoded.message,
        http_status: null,
        attempts: 1,
        attributes: decoded.attributes,
      });
      this.metrics.failed.inc({ stage: 'decode', reason: decoded.code });
      return;
    }
    const event = decoded.event;
    const outcome = await this.engine.admit(source, event, this.state.get(event.event_id));
    this.metrics.inFlight.set(this.engine.inFlight);
    this.log.debug(
      { event_id: event.event_id, outcome, partition: message.partition, offset: message.offset },
      'admitted',
    );
  }

  private async onFeedbackBatch(batch: IncomingBatch, control: BatchControl): Promise<void> {
    const offsets = this.tracker(batch.topic).partition(batch.partition);
    for (const message of batch.messages) {
      if (!control.isRunning() || control.isStale() || this.stopping) break;
      offsets.track(message.offset);
      const source = this.sourceOf(message);
      const decoded = await decodeFeedbackEvent(message.value, this.registry);
      if (!decoded.ok) {
        await this.output.deadLetter({
          source,
          event_id: decoded.event_id,
          submission_id: null,
          stage: 'feedback',
          error_code: decoded.code,
          message: decoded.message,
          http_status: null,
          attempts: 1,
          attributes: decoded.attributes,
        });
      } else {
        try {
          await this.client.putFeedback(decoded.event.submission_id, decoded.event.feedback);
        } catch (err) {
          const e = err as { status?: number; message: string; retriable?: boolean };
          if (e.retriable && e.status !== 404) throw err;
          await this.output.deadLetter({
            source,
            event_id: decoded.event.event_id,
            submission_id: decoded.event.submission_id,
            stage: 'feedback',
            error_code: e.status ? `api_${e.status}` : 'feedback_failed',
            message: e.message,
            http_status: e.status ?? null,
            attempts: 1,
            attributes: decoded.event.attributes,
          });
          this.metrics.failed.inc({
            stage: 'feedback',
            reason: e.status ? `api_${e.status}` : 'feedback_failed',
          });
        }
      }
      offsets.complete(message.offset);
      control.resolveOffset(message.offset);
      await control.heartbeat();
    }
  }

  private pauseInput(): void {
    if (this.inputPaused || !this.consumer) return;
    this.inputPaused = true;
    this.consumer.pause(this.topics.arrived, this.consumer.currentAssignment()[this.topics.arrived] ?? []);
    this.log.debug({ inFlight: this.engine.inFlight }, 'input paused: in-flight limit reached');
  }

  private maybeResume(): void {
    this.metrics.inFlight.set(this.engine.inFlight);
    if (!this.inputPaused || !this.consumer || this.stopping) return;
    const max = this.options.config.connector.maxInFlight;
    // Hysteresis: resume once a tenth of the slots are free, not at every single free slot.
    if (this.engine.inFlight + this.admitting > max - Math.max(1, Math.floor(max / 10))) return;
    this.inputPaused = false;
    this.consumer.resume(this.topics.arrived, this.consumer.currentAssignment()[this.topics.arrived] ?? []);
  }

  /** Commits the highest safe offset of every assigned partition that moved. */
  async commit(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    const assignment = consumer.currentAssignment();
    for (const [topic, tracker] of this.trackers) {
      const owned = new Set(assignment[topic] ?? []);
      const entries = tracker.toCommit().filter((e) => owned.has(e.partition));
      if (entries.length === 0) continue;
      try {
        await consumer.commitOffsets(
          entries.map((e) => ({ topic, partition: e.partition, offset: e.offset })),
        );
        tracker.markCommitted(entries);
      } catch (err) {
        // A rebalance in progress: the next owner starts from the last committed offset and
        // recognises recorded documents by their state, so nothing is lost or submitted twice.
        this.log.debug({ err: (err as Error).message }, 'commit failed; will retry');
      }
    }
  }

  private async updateLag(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    try {
      const topic = this.topics.arrived;
      const owned = consumer.currentAssignment()[topic] ?? [];
      const [ends, committed] = await Promise.all([
        this.admin.topicOffsets(topic),
        this.admin.groupOffsets(this.options.config.kafka.groupId, topic),
      ]);
      this.metrics.consumerLag.reset();
      for (const { partition, high } of ends) {
        if (!owned.includes(partition)) continue;
        const at = committed.get(partition) ?? '0';
        this.metrics.consumerLag.set(
          { topic, partition: String(partition) },
          Number(BigInt(high) - BigInt(at)),
        );
      }
      this.metrics.limiterRate.set(this.client.limiter.currentRate());
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'lag update failed');
    }
  }

  /** Stops fetching, lets running steps settle, commits what is safe, and disconnects. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.commitTimer) clearInterval(this.commitTimer);
      if (this.lagTimer) clearInterval(this.lagTimer);
      const timeout = this.options.config.connector.shutdownTimeoutMs;
      if (this.consumer) await this.consumer.stop().catch(() => undefined);
      await this.receiver?.close();
      await this.engine.stop(timeout);
      this.scheduler.stop();
      await this.webhooks?.stop().catch(() => undefined);
      await this.commit();
      await this.consumer?.disconnect().catch(() => undefined);
      await this.state.stop().catch(() => undefined);
      await this.producer.disconnect().catch(() => undefined);
      await this.admin.disconnect().catch(() => undefined);
      this.blobs.close();
    })();
    return this.stopping;
  }
}
