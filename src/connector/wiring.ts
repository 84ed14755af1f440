/**
 * The one place a connector is assembled from the configuration, top to bottom with no forward
 * reference: the clients (Kafka, registry, API, blobs), the output, the state and its writer, the
 * engine over them (`buildParts`), then the consumer loop with its group share, exactly-once state
 * adapter and outage policy (`buildLoop`), which listens to the engine's capacity-freed event.
 * `connector.ts` runs what is built here. The Kafka and registry clients come from
 * `kafka/client-from-config.ts` and `serde/registry-from-config.ts`, as the CLI's commands take
 * theirs, so that the commands and the connector connect alike.
 */
import { NO_TRACES, type DocumentTraces } from '../observability/tracing.js';
import { createBlobSource, DEFAULT_CONNECTIONS_PER_HOST } from '../blobs/index.js';
import { DocumentAnalysisClient } from '../client/client.js';
import type { Config } from '../config/index.js';
import type { KafkaClient } from '../kafka/client.js';
import { kafkaClientOf } from '../kafka/client-from-config.js';
import { ChangelogReader } from '../kafka/changelog.js';
import { CoalescingSender } from '../kafka/coalescer.js';
import { ReadCommittedWitness } from '../kafka/commit-witness.js';
import { RecordReader } from '../kafka/record-reader.js';
import type { KafkaAdmin } from '../kafka/admin.js';
import type { KafkaProducer } from '../kafka/producer.js';
import type { TransactionalWriters } from '../kafka/transactions.js';
import type { Logger } from '../observability/logger.js';
import type { ConnectorMetrics } from '../observability/metrics.js';
import type { Registry } from '../serde/registry.js';
import { registryOf } from '../serde/registry-from-config.js';
import { PollScheduler } from '../util/scheduler.js';
import { apiPort } from './document/api-port.js';
import type { ArrivalLimits } from './document/arrivals.js';
import { parseAwaitedOverride } from './document/awaited-results.js';
import { createdState } from './document/run.js';
import type { DeadLetterSink } from './outputs/dead-letters.js';
import { deliveryWindowMs, RecentDeliveries } from './outputs/decision-deliveries.js';
import { ConsumerLoop } from './consumer/consumer-loop.js';
import { crashPointFromEnv } from './consumer/crash-point.js';
import { GroupShare } from './consumer/group-share.js';
import { arrivalHandler, unhandledDeadLetter } from './document/arrivals.js';
import { feedbackHandler } from './document/feedback.js';
import { failureOf } from './outputs/dead-letters.js';
import { KafkaError, KafkaUnavailableError, isMessageTooLarge } from '../kafka/errors.js';
import { RevocationInProgressError } from './document/create-gate.js';
import { RegistryUnavailableError } from '../serde/registry.js';
import {
  transactionalLoopState,
  transactionalOutputs,
  transactionalStates,
} from './outputs/delivery-modes.js';
import { DocumentEngine } from './document/engine.js';
import { InputRecords } from './document/inputs.js';
import { KafkaOutput } from './outputs/output.js';
import { encodeState } from './state/record.js';
import { OwnedState } from './state/store.js';
import { stateTombstones, StateWriter } from './state/writer.js';
import type { ArrivalEvent, Awaitable } from './types.js';
import { egressOf } from '../config/egress.js';
import { transactionalIdPrefixOf } from '../config/effective.js';
import { displayProxy } from '../util/proxy.js';
import type { Egress } from '../client/wire.js';
import { EMPTY_DIRECTORY } from '../tenants/directory.js';
import { TenantDirectorySource } from '../tenants/source.js';
import { TenantClients } from '../tenants/clients.js';
import type { ApiPort, TenantPorts } from './document/ports.js';

function apiClientOf(
  config: Config,
  logger: Logger,
  metrics: ConnectorMetrics,
  egress: Egress,
): DocumentAnalysisClient {
  const api = config.api;
  return new DocumentAnalysisClient({
    ...(api.cell ? { cell: api.cell } : { baseUrl: api.baseUrl }),
    ...(api.tokenUrl ? { tokenUrl: api.tokenUrl } : {}),
    ...(Object.keys(api.cells as object).length > 0
      ? { cells: api.cells as Record<string, { baseUrl: string; tokenUrl: string }> }
      : {}),
    clientId: api.clientId,
    clientSecret: api.clientSecret,
    rateLimit: { ratePerSecond: api.ratePerSecond },
    // A transient API failure (429, 5xx, no answer, token endpoint down) is retried until a document's
    // deadline: only what the document got wrong, or its deadline, ends it in a dead letter.
    retry: { maxTotalMs: config.connector.deadlineMs },
    timeoutMs: api.timeoutMs,
    egress,
    logger,
    onCall: (call) =>
      metrics.recordCall({
        endpoint: `${call.method} ${call.endpoint}`,
        status: call.status,
        retried: call.retried,
      }),
  });
}

/**
 * The tenants this deployment serves: the directory, reloaded without a restart, and one client per
 * tenant application made from it (`src/tenants/`). Null without `tenants.directoryFile`.
 */
export interface Tenants {
  source: TenantDirectorySource;
  clients: TenantClients;
}

function tenantsOf(
  config: Config,
  logger: Logger,
  metrics: ConnectorMetrics,
  egress: Egress,
): Tenants | null {
  const t = config.tenants;
  if (t.directoryFile === '') return null;
  const api = config.api;
  const source = new TenantDirectorySource({
    file: t.directoryFile,
    cells: api.cells as Record<string, { baseUrl: string; tokenUrl: string }>,
    intervalMs: t.reloadIntervalMs,
    allowInsecureHttp: api.allowInsecureHttp,
    logger,
  });
  const clients = new TenantClients(
    (entry, onCall) =>
      new DocumentAnalysisClient({
        baseUrl: entry.baseUrl,
        tokenUrl: entry.tokenUrl,
        clientId: entry.clientId,
        ...(entry.credentials.kind === 'client-secret'
          ? { clientSecret: entry.credentials.clientSecret }
          : { privateKey: entry.credentials.privateKey, kid: entry.credentials.kid }),
        rateLimit: { ratePerSecond: entry.ratePerSecond ?? api.ratePerSecond },
        retry: { maxTotalMs: config.connector.deadlineMs },
        timeoutMs: api.timeoutMs,
        egress,
        logger,
        onCall: (call) => {
          const endpoint = `${call.method} ${call.endpoint}`;
          metrics.recordCall({ endpoint, status: call.status, retried: call.retried });
          metrics.recordTenantCall(entry.name, endpoint, call.status);
          onCall(call);
        },
      }),
    logger,
    EMPTY_DIRECTORY,
  );
  source.onChange((directory, diff) => clients.apply(directory, diff));
  return { source, clients };
}

/** The ports of the tenants' applications, one per client (a changed tenant's new client gets its own). */
function tenantPortsOf(tenants: Tenants, withMetadata: boolean): TenantPorts {
  const ports = new WeakMap<DocumentAnalysisClient, ApiPort>();
  return {
    known: (tenant) => tenants.clients.has(tenant),
    tenantId: (tenant) => tenants.clients.tenantId(tenant),
    api: (tenant) => {
      const client = tenants.clients.client(tenant);
      if (!client) return undefined;
      let port = ports.get(client);
      if (!port) {
        port = apiPort(client, { withMetadata });
        ports.set(client, port);
      }
      return port;
    },
  };
}

/** Every part of one connector, connected to nothing yet. */
export interface ConnectorParts {
  kafka: KafkaClient;
  admin: KafkaAdmin;
  producer: KafkaProducer;
  registry: Registry;
  client: DocumentAnalysisClient;
  /** The tenant directory and its applications' clients; null without `tenants.directoryFile`. */
  tenants: Tenants | null;
  blobs: ReturnType<typeof createBlobSource>;
  sender: CoalescingSender;
  /** exactly-once: the transactional producers of the owned input partitions; else null. */
  transactions: TransactionalWriters | null;
  output: KafkaOutput;
  state: OwnedState;
  /** Reads admitted documents' input records back by pointer. */
  inputReader: RecordReader;
  scheduler: PollScheduler;
  /** Decision webhook deliveries of the last deadline window (read from the webhook topic). */
  deliveries: RecentDeliveries;
  engine: DocumentEngine;
  /** Writes a dead letter raised outside the engine, counted like the engine's. */
  deadLetter: DeadLetterSink;
  /** The size rule of arrival events (`arrivals.ts`). */
  arrivalLimits: ArrivalLimits;
}

/** What every step of the assembly is given. */
interface Assembly {
  config: Config;
  logger: Logger;
  metrics: ConnectorMetrics;
  /** `connector.awaitedResults`, parsed once. */
  awaitedOverride: ReturnType<typeof parseAwaitedOverride>;
}

/** The clients of the outside world: Kafka, the registry, the API, the blob stores. */
type Clients = Pick<
  ConnectorParts,
  'kafka' | 'admin' | 'producer' | 'sender' | 'registry' | 'client' | 'tenants' | 'blobs' | 'transactions'
>;

/**
 * Every part of one connector, built in order: the clients, the output, the state and its writer,
 * the engine over them, and the rules arrival events are checked against. Nothing connects yet.
 */
export function buildParts(
  config: Config,
  logger: Logger,
  metrics: ConnectorMetrics,
  traces: DocumentTraces = NO_TRACES,
): ConnectorParts {
  const a: Assembly = {
    config,
    logger,
    metrics,
    awaitedOverride: parseAwaitedOverride(config.connector.awaitedResults),
  };
  const clients = clientsOf(a);
  const output = outputOf(a, clients);
  const { state, writer } = stateOf(a, clients);
  const inputReader = new RecordReader(clients.kafka, clients.admin, config.topics.arrived, logger);
  const scheduler = new PollScheduler();
  const deliveries = new RecentDeliveries(deliveryWindowMs(config.connector.deadlineMs));
  const engine = engineOf(a, { clients, output, writer, inputReader, scheduler, deliveries, traces });
  return {
    ...clients,
    output,
    state,
    inputReader,
    scheduler,
    deliveries,
    engine,
    deadLetter: deadLetterSinkOf(a, output),
    arrivalLimits: arrivalLimitsOf(a, clients.producer),
  };
}

function clientsOf({ config, logger, metrics }: Assembly): Clients {
  const kafka = kafkaClientOf(config, { logger });
  const producer = kafka.producer({ maxMessageBytes: config.kafka.maxMessageBytes });
  const c = config.connector;
  const egress = egressOf(config.api);
  const { https, http, noProxy } = egress.routes;
  if (https !== '' || http !== '') {
    // Where the proxy is, never who signs in to it.
    logger.info(
      {
        httpsProxy: https === '' ? 'none' : displayProxy(https),
        httpProxy: http === '' ? 'none' : displayProxy(http),
        noProxy,
      },
      'API, token and http(s) blob requests go through a proxy',
    );
  }
  const admin = kafka.admin();
  return {
    kafka,
    admin,
    producer,
    sender: new CoalescingSender(producer),
    registry: registryOf(config, logger),
    client: apiClientOf(config, logger, metrics, egress),
    tenants: tenantsOf(config, logger, metrics, egress),
    // Blob connections per host: one per document admitted at once, up to the reader's default.
    blobs: createBlobSource(config.blobs, {
      logger,
      connectionsPerHost: Math.min(DEFAULT_CONNECTIONS_PER_HOST, c.maxInFlight),
      egress,
    }),
    transactions:
      c.delivery === 'exactly-once'
        ? kafka.transactionalWriters(
            {
              idPrefix: transactionalIdPrefixOf(config),
              lingerMs: c.transactionLingerMs,
              limitFor: (topic) => producer.limitFor(topic),
              logger,
              onCommit: (records, ms) => {
                metrics.transactionDuration.observe(ms / 1000);
                metrics.transactionRecords.inc(records);
              },
            },
            new ReadCommittedWitness(kafka, admin, logger),
          )
        : null,
  };
}

/** Results and dead letters: in the input partition's transaction under exactly-once. */
function outputOf({ config, logger, metrics }: Assembly, clients: Clients): KafkaOutput {
  const { transactions, sender, producer } = clients;
  const t = config.topics;
  return new KafkaOutput({
    sender: transactions
      ? transactionalOutputs(transactions, sender)
      : { send: (topic, message) => sender.send(topic, message) },
    registry: clients.registry,
    topics: {
      fraud: t.fraud,
      quality: t.quality,
      classification: t.classification,
      decision: t.decision,
      dlq: t.dlq,
    },
    deadLetters: {
      redactFields: config.connector.redactFields,
      limitFor: (topic) => producer.limitFor(topic),
      logger,
      onUnwritable: (deadLetter) =>
        metrics.deadLettersUnwritable.inc({ stage: deadLetter.stage, reason: deadLetter.error_code }),
      inputTopic: t.arrived,
    },
  });
}

/**
 * The partition-local state and the one writer of the state topic. This instance is the only writer
 * of its partitions and applies its own writes, so the changelog reader does not tail.
 */
function stateOf({ config, logger }: Assembly, clients: Clients): { state: OwnedState; writer: StateWriter } {
  const { kafka, admin, transactions, sender } = clients;
  const topic = config.topics.state;
  const records = transactions ? transactionalStates(transactions) : sender;
  const state = new OwnedState(
    (sink) => new ChangelogReader(kafka, admin, topic, sink, logger, { tail: false }),
    {
      inputTopic: config.topics.arrived,
      retentionMs: config.state.retentionMs,
      logger,
      tombstone: stateTombstones(records, topic),
    },
  );
  return { state, writer: new StateWriter(records, topic, state) };
}

function engineOf(
  { config, logger, metrics, awaitedOverride }: Assembly,
  parts: {
    clients: Clients;
    output: KafkaOutput;
    writer: StateWriter;
    inputReader: RecordReader;
    scheduler: PollScheduler;
    deliveries: RecentDeliveries;
    traces: DocumentTraces;
  },
): DocumentEngine {
  const c = config.connector;
  const { client, blobs, registry, tenants } = parts.clients;
  // The resilience suite's crash point (DOCSTREAM_TEST_CRASH_AFTER_PUBLISH); null in production.
  const crash = crashPointFromEnv(process.env);
  return new DocumentEngine(
    {
      api: apiPort(client, { withMetadata: c.withMetadata }),
      ...(tenants ? { tenants: tenantPortsOf(tenants, c.withMetadata) } : {}),
      blobs,
      out: parts.output,
      states: parts.writer,
      inputs: new InputRecords(parts.inputReader, registry),
      scheduler: parts.scheduler,
      logger,
      deliveries: parts.deliveries,
      budget: client.limiter,
      ...(parts.traces.enabled ? { traces: parts.traces } : {}),
    },
    {
      pollInitialMs: c.pollInitialMs,
      pollMaxMs: c.pollMaxMs,
      deadlineMs: c.deadlineMs,
      decisionPolling: c.decisionPolling,
      deleteAfterPublish: c.deleteAfterPublish,
      attachReportUrl: c.attachReportUrl,
      awaitedOverride,
      unknownTenantGraceMs: config.tenants.unknownGraceMs,
      traceTopics: {
        fraud: config.topics.fraud,
        quality: config.topics.quality,
        classification: config.topics.classification,
        decision: config.topics.decision,
        dlq: config.topics.dlq,
      },
      ...(tenants
        ? {
            tenantShares: {
              maxInFlight: c.maxInFlight,
              share: config.tenants.maxInFlightShare,
              maxWaiting: config.tenants.maxWaiting,
            },
          }
        : {}),
    },
    {
      onPublished: crash
        ? (kind: Awaitable) => {
            metrics.resultsPublished.inc({ kind });
            crash.afterPublish();
          }
        : (kind: Awaitable) => metrics.resultsPublished.inc({ kind }),
      onFinished: (s, outcome) => {
        if (outcome === 'failed') return;
        metrics.completed.inc({ outcome });
        if (outcome === 'done')
          metrics.stageDuration.observe({ stage: 'end_to_end' }, (Date.now() - s.created_at) / 1000);
      },
      onDeadLetter: (stage, code) => metrics.failed.inc({ stage, reason: code }),
      onDeliveryRefused: (reason) => metrics.webhookDeliveriesRefused.inc({ reason }),
      onStage: (stage, ms) => metrics.stageDuration.observe({ stage }, ms / 1000),
      onSubmissionsLeftEmpty: (count) => metrics.submissionsLeftEmpty.inc(count),
    },
  );
}

/** Writes a dead letter raised outside the engine, counted like the engine's. */
function deadLetterSinkOf({ metrics }: Assembly, output: KafkaOutput): DeadLetterSink {
  return async (deadLetter) => {
    await output.deadLetter(deadLetter);
    metrics.failed.inc({ stage: deadLetter.stage, reason: deadLetter.error_code });
  };
}

/** The size rules an arrival event is checked against before anything is created for it. */
function arrivalLimitsOf({ config, awaitedOverride }: Assembly, producer: KafkaProducer): ArrivalLimits {
  const stateTopic = config.topics.state;
  const probeValues = new Map<string, Buffer>();
  return {
    maxAttributesBytes: config.connector.maxAttributesBytes,
    // The first state record is the largest a document writes (it holds the upload URLs while the
    // upload is pending). Its value does not depend on the event beyond the input topic, so it is
    // encoded once per topic, with URLs longer than the API gives and the widest offset; only the
    // key (the event id) is measured per event.
    stateProblem: (source, event) => {
      let value = probeValues.get(source.topic);
      if (!value) {
        const widest = { ...source, offset: '9'.repeat(19) };
        const probe = createdState(widest, PROBE_EVENT, PROBE_SUBMISSION, 0, awaitedOverride);
        value = encodeState(probe);
        probeValues.set(source.topic, value);
      }
      // A tenant adds its name (u16 length + UTF-8) to the record.
      if (event.tenant !== undefined)
        value = Buffer.concat([value, Buffer.alloc(2 + Buffer.byteLength(event.tenant))]);
      const tooLarge = producer.checkSize(stateTopic, { key: event.event_id, value });
      return tooLarge
        ? `its state record of ${tooLarge.size} bytes would exceed the state topic's limit of ${tooLarge.limit}`
        : null;
    },
  };
}

/** An event that sets every field the first state record holds (decision awaited, characteristics). */
const PROBE_EVENT: ArrivalEvent = {
  event_id: 'probe',
  blob: { url: 'file:///probe', content_type: null, size_bytes: null, sha256: null },
  query_id: null,
  pipeline_configuration: 'FRAUD_ONLY',
  enable_decision: true,
  submission_characteristics: {},
  attributes: {},
  reprocess: false,
};

/** A created submission with identifiers and URLs at least as long as the API's. */
const PROBE_SUBMISSION = {
  submission_id: 'x'.repeat(64),
  upload_url: 'x'.repeat(4096),
  submission_characteristics_upload_url: 'x'.repeat(4096),
};

/**
 * The consumer loop over the parts, and this member's share of the group's API limit: how the loop
 * reaches the state (under exactly-once, a partition's transactional id is opened first), its record
 * handlers, and what it treats as an outage, as worth retrying, or as the end of a record.
 */
export function buildLoop(
  config: Config,
  logger: Logger,
  metrics: ConnectorMetrics,
  parts: ConnectorParts,
  /** The input topic's partition count, known once the connector read it at start-up. */
  inputPartitions: () => number,
): { loop: ConsumerLoop; groupShare: GroupShare } {
  const { registry, state, deadLetter } = parts;
  const tenants = parts.tenants;
  const groupShare = new GroupShare(
    // The share applies to the default credentials' limiter and to every tenant application's.
    tenants
      ? {
          setShare: (owned, total) => {
            parts.client.limiter.setShare(owned, total);
            tenants.clients.setShare(owned, total);
          },
        }
      : parts.client.limiter,
    inputPartitions,
    config.connector.groupShareIntervalMs > 0,
  );
  const transactions = parts.transactions;
  const loop = new ConsumerLoop({
    topics: { arrived: config.topics.arrived, feedback: config.topics.feedback },
    maxInFlight: config.connector.maxInFlight,
    commitIntervalMs: config.connector.commitIntervalMs,
    admissionWaitMs: config.connector.admissionWaitMs,
    engine: parts.engine,
    // exactly-once: each partition's transactional producer opened and closed with it.
    state: transactions ? transactionalLoopState(state, transactions, logger) : state,
    arrivals: arrivalHandler({
      decoder: registry,
      engine: parts.engine,
      state,
      deadLetter,
      logger,
      limits: parts.arrivalLimits,
      ...(config.tenants.header !== '' ? { tenantHeader: config.tenants.header } : {}),
    }),
    feedback: feedbackHandler({ decoder: registry, api: parts.client, deadLetter }),
    logger,
    onInFlight: (n) => metrics.inFlight.set(n),
    groupShare: groupShare,
    committedOffsets: () => parts.admin.groupOffsets(config.kafka.groupId, config.topics.arrived),
    // A registry that cannot answer, or Kafka not taking the state of new submissions, is no fault
    // of the record: pause, probe, resume. Kafka's probe writes the states still unrecorded.
    outage: {
      isOutage: (err) => err instanceof RegistryUnavailableError || err instanceof KafkaUnavailableError,
      probe: (err) =>
        err instanceof KafkaUnavailableError ? parts.engine.recordUnrecorded() : registry.checkAvailable(),
      onChange: (paused, err) =>
        (err instanceof KafkaUnavailableError
          ? metrics.inputPausedByKafka
          : metrics.inputPausedByRegistry
        ).set(paused ? 1 : 0),
    },
    // Kafka did not take a record's outcome (state, dead letter), or the API asked to be tried again:
    // the record is handled again; anything else thrown ends it in a dead letter (`record-settling.ts`).
    // FencedError and NotOwnedError (exactly-once: the partition's writer was fenced or closed) are
    // tried again too: they mean the partition is, or is about to be, another member's, so the record
    // is given up once the revoke arrives and its new owner handles it; a dead letter would end a
    // document that is not this member's to end (and would go through the same writer).
    retriable: (err) =>
      (err instanceof KafkaError && !isMessageTooLarge(err)) ||
      err instanceof RevocationInProgressError ||
      failureOf(err).retriable === true,
    endRecord: (message, err) =>
      deadLetter(
        unhandledDeadLetter(message, err, message.topic === config.topics.feedback ? 'feedback' : 'decode'),
      ),
  });
  parts.engine.onCapacityFreed(() => loop.onCapacityFreed());
  return { loop, groupShare };
}
