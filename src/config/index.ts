export { loadConfig, redactConfig, configReference } from './load.js';
export { type Config } from './spec.js';
export { prefixedTopics } from './topics.js';
