/**
 * The Kafka client. This directory is the only place that imports kafkajs (2.2.4, unmaintained):
 * everything else uses the small typed surface exported here, so another client can replace it.
 */
import kafkajs from 'kafkajs';
import type { Kafka, KafkaConfig, LogEntry, SASLOptions } from 'kafkajs';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { KafkaAdmin } from './admin.js';
import { KafkaConsumer, type ConsumerSettings } from './consumer.js';
import { KafkaProducer, type ProducerSettings } from './producer.js';
import { TransactionalWriters, type CommitWitness, type TransactionalSettings } from './transactions.js';
import type { ConnectionSettings } from './security-hints.js';
import type { KafkaSecurity } from './security.js';
import { fixIdleRequestQueues } from './request-queue.js';
import { fixPausedFetchLoops } from './paused-fetch.js';
import { releaseEmptyRemainders } from './response-remainder.js';
import { installRejoinBarrier } from './rejoin-barrier.js';
import { adminAndCluster, adminWithCluster, GroupOffsetReader } from './group-readings.js';
import { KafkaAccessProbe, type ProbeCluster } from './access-probes.js';
import { unpatchedNotice } from './kafkajs-internals.js';
import { installCompressionCodecs } from './compression.js';

const { Kafka: KafkaJs, logLevel: LogLevel } = kafkajs;
// Each applies itself only on the kafkajs version it was written for (kafkajs-internals.ts).
fixIdleRequestQueues();
fixPausedFetchLoops();
releaseEmptyRemainders();
installRejoinBarrier();

/** Whether this process has said that the corrections of kafkajs internals are not applied. */
let unpatchedSaid = false;

const DEFAULT_BROKERS = ['localhost:9092'];

type KafkaLogLevel = 'error' | 'warn' | 'info' | 'debug';

interface KafkaSettings {
  brokers?: string[];
  clientId?: string;
  /** TLS and SASL, as built by `kafkaSecurityOf` from the `kafka` settings. */
  security?: KafkaSecurity;
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Retries of a failed request or connection (kafkajs' default, 5, when unset). */
  retries?: number;
  logger?: Logger;
  /** How much of the client library's own logging to pass on; quiet ('warn') by default. */
  logLevel?: KafkaLogLevel;
}

const TO_KAFKAJS: Record<KafkaLogLevel, number> = {
  error: LogLevel.ERROR,
  warn: LogLevel.WARN,
  info: LogLevel.INFO,
  debug: LogLevel.DEBUG,
};

/**
 * kafkajs logs every failed response at error level from its connection layer, including the
 * retriable ones it then retries away (e.g. "coordinator is loading" right after a broker start);
 * those go to debug, and a failure that matters surfaces as the operation's own error.
 */
export function kafkaLogLevelFor(namespace: string, level: number): KafkaLogLevel | null {
  if (level === LogLevel.NOTHING) return null;
  if (level === LogLevel.ERROR) return namespace === 'Connection' ? 'debug' : 'error';
  if (level === LogLevel.WARN) return 'warn';
  if (level === LogLevel.INFO) return 'info';
  return 'debug';
}

function logCreator(logger: Logger): KafkaConfig['logCreator'] {
  return () =>
    ({ namespace, level, log }: LogEntry) => {
      const target = kafkaLogLevelFor(namespace, level);
      if (target === null) return;
      const {
        message,
        timestamp: _timestamp,
        logger: _name,
        ...context
      } = log as LogEntry['log'] & {
        logger?: string;
      };
      logger[target]({ kafka: namespace, ...context }, message);
    };
}

function toKafkajsSasl(sasl: NonNullable<KafkaSecurity['sasl']>): SASLOptions {
  if (sasl.mechanism !== 'oauthbearer') return sasl;
  // kafkajs asks for a token on every new connection; the provider caches and refreshes it.
  return { mechanism: 'oauthbearer', oauthBearerProvider: sasl.token };
}

export class KafkaClient {
  readonly brokers: string[];
  private readonly kafka: Kafka;
  private readonly connection: ConnectionSettings;
  private readonly logger: Logger;

  constructor(settings: KafkaSettings = {}) {
    this.brokers = settings.brokers ?? DEFAULT_BROKERS;
    this.logger = settings.logger ?? silentLogger;
    const config: KafkaConfig = {
      brokers: this.brokers,
      clientId: settings.clientId ?? 'docstream',
      logLevel: TO_KAFKAJS[settings.logLevel ?? 'warn'],
      logCreator: logCreator(this.logger.child({ component: 'kafka' })),
    };
    const { ssl, sasl } = settings.security ?? {};
    this.connection = { brokers: this.brokers, tls: ssl !== undefined };
    if (ssl !== undefined) config.ssl = ssl;
    if (sasl !== undefined) config.sasl = toKafkajsSasl(sasl);
    if (settings.connectionTimeoutMs !== undefined) config.connectionTimeout = settings.connectionTimeoutMs;
    if (settings.requestTimeoutMs !== undefined) config.requestTimeout = settings.requestTimeoutMs;
    if (settings.retries !== undefined) config.retry = { retries: settings.retries };
    // Batches compressed with snappy, LZ4 or zstd decode in every client of the process.
    installCompressionCodecs();
    this.kafka = new KafkaJs(config);
    // Said once per process, by the first client that has somewhere to say it.
    const notice = unpatchedSaid || this.logger === silentLogger ? undefined : unpatchedNotice();
    if (notice !== undefined) {
      unpatchedSaid = true;
      this.logger.warn({ component: 'kafka' }, notice);
    }
  }

  admin(): KafkaAdmin {
    const { admin, cluster } = adminWithCluster(this.kafka);
    return new KafkaAdmin(admin, this.connection, cluster && new GroupOffsetReader(cluster));
  }

  /** The probes of `docstream config check --connect`, on an admin client of their own. */
  accessProbe(): KafkaAccessProbe {
    const { admin, cluster } = adminAndCluster<ProbeCluster>(this.kafka);
    return new KafkaAccessProbe(admin, cluster, this.connection);
  }

  producer(settings: ProducerSettings = {}): KafkaProducer {
    return new KafkaProducer(this.kafka, settings);
  }

  /**
   * One transactional producer per owned input partition (exactly-once delivery); a commit that
   * failed without an answer is looked up through `witness` (`commit-witness.ts`) before its batch
   * is sent again.
   */
  transactionalWriters(settings: TransactionalSettings, witness?: CommitWitness): TransactionalWriters {
    return new TransactionalWriters(this.kafka, settings, witness);
  }

  consumer(settings: ConsumerSettings): KafkaConsumer {
    return new KafkaConsumer(this.kafka, settings);
  }
}
