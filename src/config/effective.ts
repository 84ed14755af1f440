/**
 * The values docstream works with where a key alone does not say it: TLS turned on by a CA or a
 * client certificate, the API address a cell stands for, the transactional id prefix derived from
 * the group. `config show` prints these, and the code that builds clients takes them from here.
 */
import { resolveAddress } from '../client/cells.js';
import type { Config } from './spec.js';

/** Whether Kafka connections use TLS: `kafka.ssl`, or a CA, client certificate or key file set. */
export function kafkaTlsOn(k: {
  ssl: boolean;
  sslCaFile: string;
  sslCertFile: string;
  sslKeyFile?: string;
}): boolean {
  return k.ssl || k.sslCaFile !== '' || k.sslCertFile !== '' || (k.sslKeyFile ?? '') !== '';
}

/** The prefix of the exactly-once transactional ids: `connector.transactionalIdPrefix`, else `<group>-<input>`. */
export function transactionalIdPrefixOf(config: Pick<Config, 'connector' | 'kafka' | 'topics'>): string {
  return config.connector.transactionalIdPrefix || `${config.kafka.groupId}-${config.topics.arrived}`;
}

/**
 * The configuration with the values in effect: `kafka.ssl` true when a TLS file turns it on, the
 * API's base and token URL as resolved (from `api.cell`, or the token URL beside `api.baseUrl`),
 * the transactional id prefix with exactly-once. An address that cannot be resolved is left as set
 * (the command that uses it names the problem).
 */
export function effectiveConfig(config: Config): Config {
  const api = config.api;
  let address: { baseUrl: string; tokenUrl: string } = { baseUrl: api.baseUrl, tokenUrl: api.tokenUrl };
  try {
    const cells = api.cells as Record<string, { baseUrl: string; tokenUrl: string }>;
    address = resolveAddress({
      ...(api.cell ? { cell: api.cell } : { baseUrl: api.baseUrl }),
      ...(api.tokenUrl ? { tokenUrl: api.tokenUrl } : {}),
      ...(Object.keys(cells).length > 0 ? { cells } : {}),
    });
  } catch {
    // Left as configured.
  }
  return {
    ...config,
    kafka: { ...config.kafka, ssl: kafkaTlsOn(config.kafka) },
    api: { ...api, ...address },
    connector: {
      ...config.connector,
      ...(config.connector.delivery === 'exactly-once'
        ? { transactionalIdPrefix: transactionalIdPrefixOf(config) }
        : {}),
    },
  };
}
