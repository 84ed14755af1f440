export { DocumentAnalysisClient, type ClientOptions, type UploadBody, type UploadOptions } from './client.js';
export { TenantClient, type TenantClientOptions } from './tenant-client.js';
export * from './errors.js';
export { AdaptiveRateLimiter, type CallPriority, type Clock, type RateLimiterOptions } from './limiter.js';
export { ApiHealth, GateClosedError, type HealthListener } from './health.js';
export { CELL_NAMES, DEFAULT_CELLS, SANDBOX_BASE_URL, resolveAddress, type CellAddress } from './cells.js';
export { responseText, type CallEvent, type OnCall } from './http.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
export { pollUntilReady, type PollOptions } from './poll.js';
