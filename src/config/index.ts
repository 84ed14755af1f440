export { loadConfig, redactConfig, configReference, ConfigError, type LoadOptions } from './load.js';
export { CONFIG_SPEC, envName, type Config } from './spec.js';
export { prefixedTopics } from './topics.js';
export { insecureHttpProblem } from './transport.js';
