/**
 * The schema registry client of a configuration (its URL, authentication and TLS): the one way
 * docstream builds one, so that the connector and every CLI command that encodes or decodes records
 * reach the registry alike.
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { Registry } from './registry.js';
import { registryAccessOf } from './registry-access.js';

/** The registry client of the configuration; throws naming the setting at fault. */
export function registryOf(config: Config, logger: Logger): Registry {
  const r = config.registry;
  return new Registry({
    url: r.url,
    logger,
    ...registryAccessOf(r),
  });
}
