/**
 * Prometheus metrics of one connector instance (prom-client), on its own registry so that several
 * instances in one process (tests) do not collide. Names follow Prometheus conventions: a
 * `docstream_` prefix, `_total` for counters, `_seconds` for durations.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

interface LimiterReading {
  currentRate(): number;
  currentCeiling(): number;
  limitFound(): number | undefined;
}

interface TenantReading {
  names(): string[];
  limiter(tenant: string): LimiterReading | undefined;
}

interface HealthReading {
  readonly available: boolean;
}

export class ConnectorMetrics {
  readonly registry = new Registry();

  readonly inFlight = new Gauge({
    name: 'docstream_documents_in_flight',
    help: 'Documents admitted and not finished on this instance',
    registers: [this.registry],
  });

  /** The configured connector.maxInFlight, so that dashboards and alerts compare in-flight with it. */
  readonly inFlightLimit = new Gauge({
    name: 'docstream_documents_in_flight_limit',
    help: 'Most documents this instance processes at once (connector.maxInFlight)',
    registers: [this.registry],
  });

  readonly completed = new Counter({
    name: 'docstream_documents_completed_total',
    help: 'Documents whose results were all published (outcome: done or replayed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly failed = new Counter({
    name: 'docstream_documents_failed_total',
    help: 'Documents sent to the dead-letter topic, by stage and reason',
    labelNames: ['stage', 'reason'] as const,
    registers: [this.registry],
  });

  readonly resultsPublished = new Counter({
    name: 'docstream_results_published_total',
    help: 'Result events published, by result kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly stageDuration = new Histogram({
    name: 'docstream_stage_duration_seconds',
    help: 'Duration of each stage of a document (blob, create, upload, result wait, end to end)',
    labelNames: ['stage'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly apiCalls = new Counter({
    name: 'docstream_api_calls_total',
    help: 'API calls (each HTTP attempt), by endpoint and status (0 = no response)',
    labelNames: ['endpoint', 'status'] as const,
    registers: [this.registry],
  });

  readonly apiRetries = new Counter({
    name: 'docstream_api_retries_total',
    help: 'API call attempts that were retries, by endpoint',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'docstream_api_rate_limited_total',
    help: 'Responses with HTTP 429',
    registers: [this.registry],
  });

  /** The API client's limiter and health, read when the metrics are collected (`observeApi`). */
  private limiter: LimiterReading | undefined;
  private health: HealthReading | undefined;

  readonly apiAvailable: Gauge = new Gauge({
    name: 'docstream_api_available',
    help: '1 while the API answers; 0 while it fails (5xx, no answer, token endpoint down): input paused, calls wait',
    registers: [this.registry],
    collect: () => {
      if (this.health) this.apiAvailable.set(this.health.available ? 1 : 0);
    },
  });

  readonly limitFound: Gauge = new Gauge({
    name: 'docstream_api_limit_found',
    help: "The API's rate limit as this instance found it at its last 429 (calls per second accepted then); 0 before any 429",
    registers: [this.registry],
    collect: () => {
      if (this.limiter) this.limitFound.set(this.limiter.limitFound() ?? 0);
    },
  });

  readonly limiterRate: Gauge = new Gauge({
    name: 'docstream_api_limiter_rate',
    help: 'Current rate of the adaptive API rate limiter (below its ceiling after 429s), in calls per second',
    registers: [this.registry],
    collect: () => {
      if (this.limiter) this.limiterRate.set(this.limiter.currentRate());
    },
  });

  readonly limiterCeiling: Gauge = new Gauge({
    name: 'docstream_api_limiter_ceiling',
    help: "Ceiling of the API rate limiter: this instance's share of the group's api.ratePerSecond, in calls per second",
    registers: [this.registry],
    collect: () => {
      if (this.limiter) this.limiterCeiling.set(this.limiter.currentCeiling());
    },
  });

  /** The tenants' clients, read when the metrics are collected (`observeTenants`). */
  private tenants: TenantReading | undefined;

  readonly tenantApiCalls = new Counter({
    name: 'docstream_tenant_api_calls_total',
    help: "API calls (each HTTP attempt) of a tenant's application, by tenant, endpoint and status (0 = no response); the tenants are the directory's",
    labelNames: ['tenant', 'endpoint', 'status'] as const,
    registers: [this.registry],
  });

  readonly tenantLimiterRate: Gauge = new Gauge({
    name: 'docstream_tenant_limiter_rate',
    help: "Current rate of a tenant application's adaptive API rate limiter, in calls per second",
    labelNames: ['tenant'] as const,
    registers: [this.registry],
    collect: () => {
      if (!this.tenants) return;
      this.tenantLimiterRate.reset();
      for (const name of this.tenants.names()) {
        const limiter = this.tenants.limiter(name);
        if (limiter) this.tenantLimiterRate.set({ tenant: name }, limiter.currentRate());
      }
    },
  });

  /** Documents running here by tenant, read when the metrics are collected. */
  private tenantDocuments: (() => ReadonlyMap<string, number>) | undefined;
  /** New documents waiting for their tenant's share of the slots, by tenant. */
  private tenantWaiting: (() => ReadonlyMap<string, number>) | undefined;

  readonly tenantWaitingGauge: Gauge = new Gauge({
    name: 'docstream_tenant_documents_waiting',
    help: 'New documents of a tenant waiting for its share of connector.maxInFlight (tenants.maxInFlightShare) on this instance, holding no slot',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
    collect: () => {
      if (!this.tenants) return;
      const waiting = this.tenantWaiting?.() ?? new Map<string, number>();
      this.tenantWaitingGauge.reset();
      for (const name of this.tenants.names())
        this.tenantWaitingGauge.set({ tenant: name }, waiting.get(name) ?? 0);
    },
  });

  readonly tenantInFlight: Gauge = new Gauge({
    name: 'docstream_tenant_documents_in_flight',
    help: "Documents of a tenant admitted and not finished on this instance (a tenant's share of connector.maxInFlight)",
    labelNames: ['tenant'] as const,
    registers: [this.registry],
    collect: () => {
      if (!this.tenants) return;
      const running = this.tenantDocuments?.() ?? new Map<string, number>();
      this.tenantInFlight.reset();
      for (const name of new Set([...this.tenants.names(), ...running.keys()]))
        this.tenantInFlight.set({ tenant: name }, running.get(name) ?? 0);
    },
  });

  readonly tenantCount: Gauge = new Gauge({
    name: 'docstream_tenants',
    help: 'Tenants in the tenant directory (tenants.directoryFile) now',
    registers: [this.registry],
    collect: () => {
      if (this.tenants) this.tenantCount.set(this.tenants.names().length);
    },
  });

  readonly consumerLag = new Gauge({
    name: 'docstream_consumer_lag',
    help: 'Records between the committed offset and the end of each assigned input partition',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });

  readonly webhooks = new Counter({
    name: 'docstream_webhooks_received_total',
    help: 'Webhook deliveries received, by outcome (accepted, duplicate, refused reason)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveriesRefused = new Counter({
    name: 'docstream_webhook_deliveries_refused_total',
    help: 'Webhook deliveries not acted on for a document run here (once per delivery and document), by reason (tenant_mismatch: it names another tenant id than the directory gives the document tenant)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly consumerRestarts = new Counter({
    name: 'docstream_consumer_restarts_total',
    help: 'Restarts of the Kafka consumer after a crash',
    registers: [this.registry],
  });

  readonly deadLettersUnwritable = new Counter({
    name: 'docstream_dead_letters_unwritable_total',
    help: 'Dead letters too large to write even without the original record (logged, then skipped)',
    labelNames: ['stage', 'reason'] as const,
    registers: [this.registry],
  });

  readonly transactionDuration = new Histogram({
    name: 'docstream_transaction_duration_seconds',
    help: 'exactly-once: time from a transaction taking its records to its commit',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly transactionRecords = new Counter({
    name: 'docstream_transaction_records_total',
    help: 'exactly-once: records committed in transactions (divide by the duration count for records per transaction)',
    registers: [this.registry],
  });

  readonly inputPausedByRegistry = new Gauge({
    name: 'docstream_input_paused_registry',
    help: '1 while the input is paused because the schema registry is unavailable',
    registers: [this.registry],
  });

  readonly inputPausedByApi = new Gauge({
    name: 'docstream_input_paused_api',
    help: '1 while the input is paused because the API is unavailable',
    registers: [this.registry],
  });

  private kafkaReading: (() => boolean) | undefined;

  readonly kafkaAvailable: Gauge = new Gauge({
    name: 'docstream_kafka_available',
    help: "1 while Kafka takes this instance's writes and its consumer is in its group; 0 while not (no new submission is created, documents in flight wait)",
    registers: [this.registry],
    collect: () => {
      if (this.kafkaReading) this.kafkaAvailable.set(this.kafkaReading() ? 1 : 0);
    },
  });

  readonly inputPausedByKafka = new Gauge({
    name: 'docstream_input_paused_kafka',
    help: '1 while the input is paused because Kafka does not take the state records of new submissions',
    registers: [this.registry],
  });

  readonly submissionsLeftEmpty = new Counter({
    name: 'docstream_submissions_left_empty_total',
    help: 'Submissions created whose state could not be recorded before their partition was released: the next owner submits the document again and this submission is never analysed',
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false)
      collectDefaultMetrics({ register: this.registry, prefix: 'docstream_' });
  }

  /** The API gauges show this limiter's rate, ceiling and limit found, and the health, as they are when scraped. */
  observeApi(limiter: LimiterReading, health?: HealthReading): void {
    this.limiter = limiter;
    this.health = health;
  }

  /** The tenant gauges show these clients as they are when scraped. */
  observeTenants(
    tenants: TenantReading,
    documents?: () => ReadonlyMap<string, number>,
    waiting?: () => ReadonlyMap<string, number>,
  ): void {
    this.tenants = tenants;
    this.tenantDocuments = documents;
    this.tenantWaiting = waiting;
  }

  /**
   * A tenant application's call. The tenant label is bounded by the directory: only its tenants
   * have clients (a removed tenant's series stays until the process restarts).
   */
  recordTenantCall(tenant: string, endpoint: string, status: number | undefined): void {
    this.tenantApiCalls.inc({ tenant, endpoint, status: String(status ?? 0) });
  }

  /** The Kafka gauge shows this reading as it is when scraped. */
  observeKafka(available: () => boolean): void {
    this.kafkaReading = available;
  }

  /** Wires the API client's per-attempt hook to the counters. */
  recordCall(call: { endpoint: string; status: number | undefined; retried: boolean }): void {
    const status = call.status ?? 0;
    this.apiCalls.inc({ endpoint: call.endpoint, status: String(status) });
    if (call.retried) this.apiRetries.inc({ endpoint: call.endpoint });
    if (status === 429) this.rateLimited.inc();
  }
}
