/**
 * `docstream run`: one member of the consumer group. Has its parts and its loop assembled (`wiring.ts`,
 * the one place that builds them), prepares the
 * topics and schemas (`topology.ts`), starts the state reader (each partition's state is restored when
 * it is assigned), the consumer loop (`consumer-loop.ts`), the tail of decision webhook deliveries
 * and the receiver when enabled, and shuts down cleanly.
 */
import { documentTraces, NO_TRACES, type DocumentTraces } from '../observability/tracing.js';
import { DOCSTREAM_VERSION } from '../version.js';
import type { Config } from '../config/index.js';
import type { DocumentAnalysisClient } from '../client/client.js';
import type { KafkaConsumer } from '../kafka/consumer.js';
import { rejoinBarrierInstalled } from '../kafka/rejoin-barrier.js';
import { TopicView } from '../kafka/view.js';
import type { Logger } from '../observability/logger.js';
import { ConnectorMetrics } from '../observability/metrics.js';
import { errorText } from '../observability/redact.js';
import { startWebhookReceiver, type WebhookReceiver } from '../webhooks/receiver.js';
import { WebhookVerifier } from '../webhooks/verify.js';
import { outcomeWithin, within } from '../util/within.js';
import type { ConsumerLoop } from './consumer/consumer-loop.js';
import { DecisionWebhooks } from './outputs/decision-webhooks.js';
import type { DocumentEngine } from './document/engine.js';
import type { GroupShare } from './consumer/group-share.js';
import { ReadingPace, updateLag, type LagSources } from './consumer/lag.js';
import { decideStart, parseStartFrom } from './first-contact.js';
import { ensureTopology } from './topology.js';
import { buildLoop, buildParts, type ConnectorParts } from './wiring.js';
import { MembershipLease } from './consumer/membership-lease.js';
import { READER_GROUP_PREFIXES } from '../kafka/reader-groups.js';

export interface ConnectorOptions {
  config: Config;
  logger: Logger;
  metrics?: ConnectorMetrics;
  /** Documents' traces; by default as `tracing.*` says (`observability/tracing.ts`). */
  traces?: DocumentTraces;
  /** false: serve only the webhook receiver (`docstream webhooks`), consume no input. Default true. */
  consume?: boolean;
  /**
   * The consumer gave up restarting after crashes in a row: the caller should stop and exit non-zero
   * so its supervisor restarts the process. Without it the connector stops itself.
   */
  onFatal?: (error: Error) => void;
  /**
   * Aborted when a stop is asked for during start-up (a SIGTERM while the state restores): start-up
   * ends after the step under way, stops what it started, and `start` rejects with `StartupStopped`.
   */
  stopDuringStartup?: AbortSignal;
}

export class Connector {
  readonly metrics: ConnectorMetrics;
  readonly engine: DocumentEngine;
  readonly client: DocumentAnalysisClient;
  private readonly parts: ConnectorParts;
  private readonly loop: ConsumerLoop;
  private webhooks: DecisionWebhooks | null = null;
  private receiver: WebhookReceiver | null = null;
  private consumer: KafkaConsumer | null = null;
  private lagTimer: NodeJS.Timeout | null = null;
  private readingOffsets = false;
  private ceilingWarnedAt = Number.NEGATIVE_INFINITY;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** Whether the group coordinator still answers this member (creates are held when not). */
  private lease: MembershipLease | null = null;
  private stopping: Promise<void> | null = null;
  private started = false;
  /** The input topic's partition count, read at start-up: the whole of the group's API share. */
  private inputPartitions = 1;
  private readonly log: Logger;
  private readonly groupShare: GroupShare;
  private readonly traces: DocumentTraces;

  private constructor(private readonly options: ConnectorOptions) {
    const { config, logger } = options;
    this.log = logger;
    this.metrics = options.metrics ?? new ConnectorMetrics();
    this.traces = options.traces ?? NO_TRACES;
    this.parts = buildParts(config, logger, this.metrics, this.traces);
    this.engine = this.parts.engine;
    this.client = this.parts.client;
    this.metrics.observeApi(this.client.limiter, this.client.health);
    const tenants = this.parts.tenants;
    if (tenants)
      this.metrics.observeTenants(
        tenants.clients,
        () => this.engine.inFlightByTenant(),
        () => this.engine.waitingByTenant(),
      );
    ({ loop: this.loop, groupShare: this.groupShare } = buildLoop(
      config,
      logger,
      this.metrics,
      this.parts,
      () => this.inputPartitions,
    ));
    this.client.health.onChange((available, since) => this.onApiHealth(available, since));
    this.metrics.observeKafka(() => this.kafkaReadiness().ok);
  }

  /**
   * Whether Kafka serves this member: its consumer is in its group and the state topic takes the
   * records of new submissions. While not, no submission is created (`create-gate.ts`).
   */
  kafkaReadiness(): { ok: boolean; detail?: string } {
    if (!this.started || this.stopping) return { ok: false, detail: 'not consuming' };
    if (this.consumer && !this.consumer.healthy())
      return {
        ok: false,
        detail: `the consumer left its group and is restarting: no new submission is created, ${this.engine.inFlight} documents in flight wait`,
      };
    const reason = this.engine.gate.kafkaUnavailableReason;
    if (reason !== null)
      return {
        ok: false,
        detail: `${reason}: input paused, no new submission is created, ${this.engine.inFlight} documents in flight wait`,
      };
    return { ok: true };
  }

  /**
   * The API stopped answering (or answers again). Unavailable: no new document is admitted (the input
   * pauses, as for a registry outage) while the documents in flight wait for it at the client's gate;
   * the client probes it and the input resumes by itself once it answers.
   */
  private onApiHealth(available: boolean, since: number): void {
    const health = this.client.health;
    const waiting = this.engine.inFlight;
    if (available) {
      const seconds = Math.round((performance.now() - since) / 100) / 10;
      this.log.info({ unavailable_s: seconds, documents_waiting: waiting }, 'the API answers again');
      return;
    }
    this.log.warn(
      { documents_waiting: waiting },
      'the API is failing (5xx, no answer, or its token endpoint is down): no new document is admitted until it answers; documents in flight wait (until their deadline)',
    );
    this.loop.pauseFor(new Error('the API is unavailable'), {
      isOutage: () => false,
      probe: () => health.whenAvailable(),
      initialDelayMs: 100,
      onChange: (paused) => this.metrics.inputPausedByApi.set(paused ? 1 : 0),
    });
  }

  /**
   * Said at most every 10 minutes: this instance's share of api.ratePerSecond is well above the limit
   * the API granted at its last 429 (so each burst above it costs 429s, and other clients of the
   * account compete for less than the configuration suggests).
   */
  private warnIfCeilingTooHigh(): void {
    const limiter = this.client.limiter;
    const found = limiter.limitFound();
    const now = performance.now();
    if (found === undefined || found * 2 > limiter.currentCeiling() || now - this.ceilingWarnedAt < 600_000)
      return;
    this.ceilingWarnedAt = now;
    const { owned, total } = limiter.share();
    const groupFound = owned > 0 ? Math.round((found * total) / owned) : Math.round(found);
    this.log.warn(
      {
        setting: 'api.ratePerSecond',
        configured: this.options.config.api.ratePerSecond,
        instance_share_per_second: Math.round(limiter.currentCeiling()),
        api_granted_per_second: Math.round(found),
      },
      `api.ratePerSecond (${this.options.config.api.ratePerSecond}/s) is well above what the API grants (about ${groupFound}/s for the group): set api.ratePerSecond near ${groupFound}`,
    );
  }

  /** Connects, prepares topics and schemas, reads the state, and starts consuming. */
  static async start(options: ConnectorOptions): Promise<Connector> {
    const t = options.config.tracing;
    const traces =
      options.traces ??
      (await documentTraces(
        {
          enabled: t.enabled,
          endpoint: t.endpoint,
          sampleRatio: t.sampleRatio,
          serviceName: 'docstream',
          serviceVersion: DOCSTREAM_VERSION,
        },
        options.logger,
      ));
    const connector = new Connector({ ...options, traces });
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

  /** Start-up in order; each step's failure names the step (`StartupError`). */
  private async boot(): Promise<void> {
    const tenants = this.parts.tenants;
    if (tenants) {
      await step('reading the tenant directory', () => tenants.source.load());
      tenants.source.start();
    }
    await this.prepareKafka();
    this.checkStopDuringStartup();
    await this.startReaders();
    this.checkStopDuringStartup();
    const { config } = this.options;
    if (config.webhooks.enabled || this.options.consume === false) await this.startReceiver();
    if (this.options.consume !== false) {
      this.checkStopDuringStartup();
      await this.startConsuming();
      this.startOffsetReadings();
    }
    this.started = true;
  }

  private checkStopDuringStartup(): void {
    if (this.options.stopDuringStartup?.aborted) throw new StartupStopped();
  }

  /**
   * Connects to Kafka, creates or checks the topics and schemas, connects the producer and reads the
   * message limits the broker applies to the output topics.
   */
  private async prepareKafka(): Promise<void> {
    const { config } = this.options;
    const { admin, registry, producer } = this.parts;
    const t = this.topics;
    await step('connecting to Kafka', () => admin.connect());
    this.inputPartitions = await step('preparing topics and schemas', () =>
      ensureTopology(admin, registry, t, this.log, {
        deadlineMs: config.connector.deadlineMs,
        autoRegister: config.registry.autoRegister,
      }),
    );
    await step('connecting the producer', () => producer.connect());
    // A message over the broker's limit fails at once, and ends in a (cut) dead letter. Without the
    // right to describe configs, kafka.maxMessageBytes stands for every topic.
    try {
      producer.setTopicLimits(
        await admin.maxMessageBytes([t.state, t.dlq, t.fraud, t.quality, t.classification, t.decision]),
      );
    } catch (err) {
      this.log.warn(
        { err: (err as Error).message, maxMessageBytes: config.kafka.maxMessageBytes },
        'could not read max.message.bytes of the topics; using kafka.maxMessageBytes',
      );
    }
  }

  /**
   * The state reader, the input re-reader and the recent decision deliveries: every instance reads
   * the deliveries before it resumes a document (whichever instance received them). Finished
   * documents expire from the state on a timer.
   */
  private async startReaders(): Promise<void> {
    const { state, inputReader } = this.parts;
    const deliveries = this.startDeliveries();
    deliveries.catch(() => undefined);
    await step('starting the state reader', async () => {
      await state.start();
      await inputReader.start();
    });
    await step('reading the recent decision deliveries', () => deliveries);
    this.expiryTimer = setInterval(() => {
      const expired = state.expire();
      if (expired > 0) this.log.info({ documents: expired }, 'finished documents expired from the state');
    }, this.options.config.state.expiryIntervalMs);
    this.expiryTimer.unref();
  }

  /** Joins the consumer group and starts the loop, with the group's events wired to it. */
  private async startConsuming(): Promise<void> {
    const { config } = this.options;
    const t = this.topics;
    const consumer = this.parts.kafka.consumer({
      groupId: config.kafka.groupId,
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
      heartbeatIntervalMs: config.kafka.heartbeatIntervalMs,
      assignor: config.kafka.assignor,
      // Where `docstream status` finds this member's /metrics (none when the port is picked at random).
      ...(config.http.port > 0 ? { advertised: `${config.http.host}:${config.http.port}` } : {}),
    });
    this.consumer = consumer;
    this.loop.attach(consumer);
    // Creates only while the coordinator keeps answering this member (`membership-lease.ts`).
    const gate = this.parts.engine.gate;
    this.lease = new MembershipLease({
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
      hold: () => gate.membershipUnsure(true),
      resume: () => gate.membershipUnsure(false),
      logger: this.log,
    });
    consumer.onHeartbeat(() => this.lease?.renewed());
    consumer.onGroupJoin((join) => {
      if (join.memberId !== '') this.lease?.renewed();
      this.loop.onGroupJoin(join);
    });
    this.lease.start();
    // Before the consumer gives its partitions up, the submissions created for them are recorded and
    // the offsets that made durable committed. Without the barrier (another kafkajs version) a
    // rebalance's notice is the last moment to commit.
    consumer.onBeforeRejoin(() => this.loop.beforeRejoin(config.connector.revocationTimeoutMs));
    if (!rejoinBarrierInstalled()) consumer.onRebalancing(() => this.loop.onRebalanceNotice());
    consumer.onCrash((crash) =>
      this.log.error({ err: crash.error.message, restart: crash.restart }, 'consumer crashed'),
    );
    consumer.onRestart((r) => {
      this.metrics.consumerRestarts.inc();
      this.log.warn(
        { attempt: r.attempt, delayMs: r.delayMs, restarts: r.restarts },
        'restarting the consumer',
      );
    });
    consumer.onFatal((error) => {
      this.log.fatal({ err: error.message }, 'the consumer gave up restarting');
      if (this.options.onFatal) this.options.onFatal(error);
      else this.stop().catch((err: unknown) => this.log.error({ err: errorText(err) }, 'stop failed'));
    });
    const start = await step('deciding where the group starts on the input', () =>
      decideStart({
        admin: this.parts.admin,
        groupId: config.kafka.groupId,
        topic: t.arrived,
        startFrom: parseStartFrom(config.connector.startFrom, config.connector.firstStartBacklogLimit),
        logger: this.log,
      }),
    );
    await step('joining the consumer group', async () => {
      await consumer.connect();
      await consumer.subscribe([t.arrived], { fromBeginning: start.fromBeginning });
      await consumer.subscribe([t.feedback], { fromBeginning: true });
    });
    await consumer.run(this.loop.onBatch, {
      autoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, Math.min(4, this.inputPartitions)),
    });
  }

  /**
   * The group's committed offsets, read on a timer: the lag gauges, and (unless turned off) the
   * group's API share by the partitions that still have work, which wants a fresh reading.
   */
  private startOffsetReadings(): void {
    const { config } = this.options;
    const consumer = this.consumer!;
    const shareEvery = config.connector.groupShareIntervalMs;
    const lagSources: LagSources = {
      admin: this.parts.admin,
      assignment: () => consumer.currentAssignment(),
      topic: this.topics.arrived,
      groupId: config.kafka.groupId,
      metrics: this.metrics,
      logger: this.log,
      onOffsets: shareEvery > 0 ? (ends, committed) => this.groupShare.onOffsets(ends, committed) : undefined,
    };
    const readEvery = shareEvery > 0 ? shareEvery : 5000;
    // While the whole group is idle, one reading every 5 s (or the interval, if longer) is enough.
    const pace = new ReadingPace(Math.max(readEvery, 5000));
    this.lagTimer = setInterval(() => {
      this.warnIfCeilingTooHigh();
      if (this.readingOffsets) return;
      const now = performance.now();
      const seen = { batches: this.loop.batchesSeen, inFlight: this.engine.inFlight };
      if (!pace.due(now, seen)) return;
      this.readingOffsets = true;
      updateLag(lagSources)
        .then((groupIdle) => pace.read(now, seen, groupIdle))
        // The lag is read again at the next tick; meanwhile the metric keeps its last value.
        .catch((err: unknown) => this.log.debug({ err: errorText(err) }, 'consumer lag not read'))
        .finally(() => (this.readingOffsets = false));
    }, readEvery);
    this.lagTimer.unref();
  }

  /** Tails the webhook topic: the engine hears of every delivery, whichever instance received it. */
  private async startDeliveries(): Promise<void> {
    this.webhooks = new DecisionWebhooks({
      openFeed: (onRecord) =>
        new TopicView(
          this.parts.kafka,
          this.parts.admin,
          this.topics.webhooks,
          onRecord,
          this.log,
          READER_GROUP_PREFIXES.webhookView,
        ),
      sender: this.parts.sender,
      deliveries: this.parts.deliveries,
      topic: this.topics.webhooks,
      logger: this.log,
      ...(this.options.consume === false ? {} : { engine: this.engine }),
    });
    await this.webhooks.start();
  }

  private async startReceiver(): Promise<void> {
    const w = this.options.config.webhooks;
    if (w.secrets.length === 0)
      throw new Error('webhooks.secrets: at least one whsec_ signing secret is required');
    this.receiver = await startWebhookReceiver({
      host: w.host,
      port: w.port,
      path: w.path,
      maxBodyBytes: w.maxBodyBytes,
      verifier: new WebhookVerifier(w.secrets, w.toleranceSeconds),
      handler: this.webhooks!.handler,
      logger: this.log,
      onOutcome: (outcome) => this.metrics.webhooks.inc({ outcome }),
    });
    this.log.info({ url: this.receiver.url }, 'webhook receiver listening');
  }

  /** Where the webhook receiver listens, when it runs. */
  get webhookUrl(): string | null {
    return this.receiver?.url ?? null;
  }

  /**
   * True once consuming; with at least one partition assigned when `assigned` is asked for, and
   * `restored` once the state of every assigned input partition is caught up.
   */
  isReady(): { kafka: boolean; assigned: number; restored: boolean } {
    const assignment = this.consumer?.currentAssignment() ?? {};
    const assigned = assignment[this.topics.arrived] ?? [];
    return {
      // False while a crashed consumer waits for its restart (for good once it gave up), and while
      // the state topic does not take the records of new submissions.
      kafka: this.kafkaReadiness().ok,
      assigned: assigned.length,
      restored: this.parts.state.caughtUp(assigned),
    };
  }

  /** The input partitions assigned, the state partitions restored for them, and those holding documents. */
  statePartitions(): { assigned: number[]; owned: number[]; held: number[] } {
    const assigned = this.consumer?.currentAssignment()[this.topics.arrived] ?? [];
    return {
      assigned: [...assigned].sort((a, b) => a - b),
      owned: this.parts.state.owned(),
      held: this.parts.state.partitions.finished.partitionsHeld(),
    };
  }

  /** True while the input is paused because the schema registry or the API is unavailable. */
  get pausedForOutage(): boolean {
    return this.loop.pausedForOutage;
  }

  /**
   * Stops fetching, lets running steps settle, commits what is safe, and disconnects, all within
   * `connector.shutdownTimeoutMs`: what has not settled by then (a slow blob's admission, a step
   * half-way) is abandoned, its offset not committed; the next owner resumes it from the state.
   */
  /** Waits for one step of the stop within `ms`; one that fails or runs out of time is a warning. */
  private async stopStep(what: string, work: Promise<unknown> | undefined, ms: number): Promise<void> {
    const outcome = await outcomeWithin(work, ms);
    if (outcome.state === 'failed') this.log.warn({ err: errorText(outcome.err) }, `stop: ${what} failed`);
    if (outcome.state === 'late') this.log.warn(`stop: ${what} did not finish in time`);
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // No partition is given to this member in a rebalance that meets its stop (`assignSticky`).
      this.consumer?.markLeaving();
      this.loop.stop();
      const p = this.parts;
      // No create leaves from here on (one queued behind the rate limiter is refused, and the next
      // owner admits its record): a create sent later might find the state writer closed.
      p.engine.holdCreates();
      if (this.lagTimer) clearInterval(this.lagTimer);
      if (this.expiryTimer) clearInterval(this.expiryTimer);
      this.lease?.stop();
      const timeout = this.options.config.connector.shutdownTimeoutMs;
      const deadline = Date.now() + timeout;
      // The settling gets the budget but a reserve: the final commit and leaving the group come after it.
      const reserve = Math.min(5000, Math.floor(timeout / 4));
      const settleLeft = () => Math.max(0, deadline - reserve - Date.now());
      const left = () => Math.max(0, deadline - Date.now());
      // Still a member of the group until the final commit: the steps settle, and what they record
      // lands, while the partitions are this instance's (leaving first would hand them over while
      // results were still being published, and kafkajs refuses a commit once the consumer stopped).
      try {
        if (!(await within(this.loop.idle(), settleLeft()))) {
          this.log.warn('stop: admissions still under way are abandoned (their records are read again)');
        }
        // Every create sent has its state written before the flush and the final commit.
        const unrecorded = await p.engine.recordBeforeRevocation(settleLeft());
        if (unrecorded > 0)
          this.log.warn({ unrecorded }, 'stop: created submissions whose state could not be written in time');
        await within(this.receiver?.close(), settleLeft());
        await this.engine.stop(settleLeft());
        p.scheduler.stop();
        await within(this.webhooks?.stop(), settleLeft());
        // exactly-once: what the settled steps gathered is committed before the offsets. A flush
        // that fails or runs out of time is aborted; the next owner reads those records again.
        await this.stopStep('the exactly-once flush', p.transactions?.stop(), left());
        await this.stopStep('the final offset commit', this.loop.commit('stop'), left());
      } finally {
        // The consumer may leave the group now (its partitions move to the others).
        this.loop.release();
      }
      p.tenants?.source.stop();
      // Each part is given what is left; one that does not finish is left behind (the process exits).
      for (const part of [
        () => this.consumer?.stop(),
        () => this.consumer?.disconnect(),
        () => p.state.stop(),
        () => p.inputReader.stop(),
        () => p.producer.disconnect(),
        () => p.admin.disconnect(),
        // The spans of the documents just stopped go out before the process exits.
        () => this.traces.shutdown(left()),
      ]) {
        const outcome = await outcomeWithin(part(), left());
        if (outcome.state === 'failed')
          this.log.warn({ err: errorText(outcome.err) }, 'stop: a part failed to stop');
        if (outcome.state === 'late') {
          this.log.warn('stop: its time ran out before every part stopped');
          break;
        }
      }
      p.blobs.close();
    })();
    return this.stopping;
  }
}

/** Runs one start-up step; its failure names the step (the CLI prints it and exits non-zero). */
async function step<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new StartupError(what, err);
  }
}

/** A stop was asked for during start-up; what had started is stopped again. */
export class StartupStopped extends Error {
  constructor() {
    super('stopped during start-up');
    this.name = 'StartupStopped';
  }
}

/** A start-up step that failed for good (after the step's own retries). */
export class StartupError extends Error {
  constructor(
    readonly step: string,
    cause: unknown,
  ) {
    super(`start-up failed while ${step}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StartupError';
  }
}
