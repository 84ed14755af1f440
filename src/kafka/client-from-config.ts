/**
 * The Kafka client of a configuration (brokers, client id, TLS, SASL): the one way docstream builds
 * one, so that the connector and every CLI command that reads or writes topics connect alike.
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { KafkaClient } from './client.js';
import { kafkaSecurityOf, type KafkaSecurity } from './security.js';

const securities = new WeakMap<Config, KafkaSecurity>();

/**
 * The Kafka security of a configuration, built once per configuration: every client of one process
 * shares its files (read once) and its token cache (one token request for all connections).
 */
function securityOf(config: Config): KafkaSecurity {
  let security = securities.get(config);
  if (!security) {
    security = kafkaSecurityOf(config.kafka);
    securities.set(config, security);
  }
  return security;
}

/** The Kafka client of the configuration; `clientId` replaces `kafka.clientId` (a command's own). */
export function kafkaClientOf(
  config: Config,
  options: {
    clientId?: string;
    logger?: Logger;
    /** Bounds of a client that must answer soon (a check), instead of kafkajs' defaults. */
    timeouts?: { connectionTimeoutMs: number; requestTimeoutMs: number; retries: number };
  } = {},
): KafkaClient {
  const k = config.kafka;
  return new KafkaClient({
    brokers: k.brokers,
    clientId: options.clientId ?? k.clientId,
    security: securityOf(config),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.timeouts ?? {}),
  });
}
