/**
 * How much each configuration key matters, and which must be set outside this machine: the
 * configuration page (docs/configuration.md) is generated from these grades and the spec, as
 * Kafka Connect grades its settings high, medium and low. A key of the spec with no grade here is
 * listed as low, so a new key never breaks the page; its unit test names the keys left ungraded.
 *
 * - high: set or review it for every deployment (where to connect, credentials, what is read);
 * - medium: tune it for your volume, latency or operations;
 * - low: leave the default unless a page says why.
 */
import { configReference } from './load.js';
import { CONFIG_SPEC } from './spec.js';

export type Importance = 'high' | 'medium' | 'low';

export interface Grade {
  importance: Importance;
  /** Must be set for anything but the local stack and the sandbox: "yes", or the group it completes. */
  required?: string;
  /** Why the default is wrong outside this machine (flagged in the production checklist). */
  risk?: string;
}

const high = (extra: Omit<Grade, 'importance'> = {}): Grade => ({ importance: 'high', ...extra });
const medium = (extra: Omit<Grade, 'importance'> = {}): Grade => ({ importance: 'medium', ...extra });
const low = (extra: Omit<Grade, 'importance'> = {}): Grade => ({ importance: 'low', ...extra });

export const CONFIG_GRADES: Record<string, Grade> = {
  'kafka.brokers': high({ required: 'yes', risk: 'points at localhost:9092' }),
  'kafka.clientId': low(),
  'kafka.groupId': high(),
  'kafka.sessionTimeoutMs': medium(),
  'kafka.heartbeatIntervalMs': low(),
  'kafka.assignor': low(),
  'kafka.ssl': high({ risk: 'plaintext: set it (or kafka.sslCaFile) for any cluster beyond loopback' }),
  'kafka.sslCaFile': high(),
  'kafka.sslCertFile': medium(),
  'kafka.sslKeyFile': medium(),
  'kafka.sslKeyPassword': low(),
  'kafka.sslServerName': low(),
  'kafka.sslVerify': low(),
  'kafka.saslMechanism': high(),
  'kafka.saslUsername': high(),
  'kafka.saslPassword': high(),
  'kafka.oauthTokenUrl': medium(),
  'kafka.oauthClientId': medium(),
  'kafka.oauthClientSecret': medium(),
  'kafka.oauthScope': low(),
  'kafka.oauthExtensions': low(),
  'kafka.awsRegion': medium(),
  'kafka.maxMessageBytes': low(),
  'topics.arrived': high(),
  'topics.fraud': medium(),
  'topics.quality': medium(),
  'topics.classification': medium(),
  'topics.decision': medium(),
  'topics.dlq': medium(),
  'topics.feedback': medium(),
  'topics.state': low(),
  'topics.webhooks': low(),
  'topics.redrives': low(),
  'topics.outputPartitions': high({
    risk: '3 partitions: size it to the input topic and the instances you run',
  }),
  'topics.replicationFactor': high({
    risk: '1 replica: a broker loss loses results and state; use 3 on a cluster',
  }),
  'registry.url': high({ required: 'yes', risk: 'points at the local stack’s registry' }),
  'registry.autoRegister': medium(),
  'registry.username': medium(),
  'registry.password': medium(),
  'registry.bearerToken': medium(),
  'registry.oauthTokenUrl': medium(),
  'registry.oauthClientId': medium(),
  'registry.oauthClientSecret': medium(),
  'registry.oauthScope': low(),
  'registry.caFile': medium(),
  'registry.certFile': low(),
  'registry.keyFile': low(),
  'registry.keyPassword': low(),
  'api.cell': high({ required: 'one of api.cell, api.baseUrl' }),
  'api.baseUrl': high({
    required: 'one of api.cell, api.baseUrl',
    risk: 'points at the sandbox on localhost',
  }),
  'api.tokenUrl': medium(),
  'api.clientId': high({ required: 'yes', risk: 'the sandbox’s client' }),
  'api.clientSecret': high({ required: 'yes', risk: 'the sandbox’s public secret: set yours, from a file' }),
  'api.cells': high(),
  'api.allowInsecureHttp': low(),
  'api.ratePerSecond': high(),
  'api.timeoutMs': low(),
  'api.proxyUrl': medium(),
  'api.noProxy': medium(),
  'api.caFile': medium(),
  'connector.maxInFlight': high(),
  'connector.pollInitialMs': low(),
  'connector.pollMaxMs': low(),
  'connector.deadlineMs': high(),
  'connector.withMetadata': low(),
  'connector.decisionPolling': medium(),
  'connector.deleteAfterPublish': medium(),
  'connector.attachReportUrl': low(),
  'connector.awaitedResults': low(),
  'connector.commitIntervalMs': low(),
  'connector.groupShareIntervalMs': low(),
  'connector.maxAttributesBytes': low(),
  'connector.redactFields': medium(),
  'connector.shutdownTimeoutMs': medium(),
  'connector.startFrom': high({
    risk: 'unset: a first start on a topic holding more than connector.firstStartBacklogLimit records refuses to start',
  }),
  'connector.firstStartBacklogLimit': low(),
  'connector.revocationTimeoutMs': low(),
  'connector.admissionWaitMs': low(),
  'connector.delivery': high(),
  'connector.transactionalIdPrefix': low(),
  'connector.transactionLingerMs': low(),
  'state.retentionMs': high(),
  'state.expiryIntervalMs': low(),
  'blobs.fileRoots': high({ required: 'one of blobs.fileRoots, blobs.httpHosts, blobs.s3Buckets' }),
  'blobs.httpHosts': high({ required: 'one of blobs.fileRoots, blobs.httpHosts, blobs.s3Buckets' }),
  'blobs.allowPrivateNetworks': medium(),
  'blobs.s3Buckets': high({ required: 'one of blobs.fileRoots, blobs.httpHosts, blobs.s3Buckets' }),
  'blobs.s3Endpoint': medium(),
  'blobs.s3Region': medium(),
  'blobs.s3ForcePathStyle': medium({
    risk: 'path-style S3 URLs (for MinIO and moto); AWS S3 wants virtual-hosted style: set false',
  }),
  'blobs.verifySha256': low(),
  'blobs.maxBytes': medium(),
  'blobs.transferTimeoutMs': low(),
  'blobs.minBytesPerSecond': low(),
  'blobs.fileSyncReads': low(),
  'blobs.inMemoryBytes': low(),
  'webhooks.enabled': high(),
  'webhooks.host': medium(),
  'webhooks.port': medium(),
  'webhooks.path': medium(),
  'webhooks.secrets': high(),
  'webhooks.toleranceSeconds': low(),
  'webhooks.maxBodyBytes': low(),
  // The tenant API's client (`docstream tenants`), not the connector's.
  'tenant.clientId': low(),
  'tenant.privateKey': low(),
  'tenant.kid': low(),
  'tenants.directoryFile': high(),
  'tenants.header': medium(),
  'tenants.unknownGraceMs': medium(),
  'tenants.reloadIntervalMs': low(),
  'tenants.maxInFlightShare': medium(),
  'tenants.maxWaiting': low(),
  'tracing.enabled': medium(),
  'tracing.endpoint': medium(),
  'tracing.sampleRatio': low(),
  'http.host': medium(),
  'http.port': medium(),
  'log.level': medium(),
  'log.format': medium(),
};

/** Every key of the spec, as `section.key`. */
export function specKeys(): string[] {
  return Object.entries(CONFIG_SPEC).flatMap(([section, fields]) =>
    Object.keys(fields).map((key) => `${section}.${key}`),
  );
}

export function gradeOf(key: string): Grade {
  return CONFIG_GRADES[key] ?? { importance: 'low' };
}

/**
 * `docstream config docs`'s table with two more columns, required and importance, and a risky
 * default flagged in its description.
 */
export function gradedReference(): string {
  const [, , ...rows] = configReference().split('\n');
  const out = [
    '| key | required | importance | environment variable | type | default | description |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const key = /^\| `([^`]+)` \|/.exec(row)?.[1];
    if (!key) continue;
    const grade = gradeOf(key);
    const rest = row.slice(row.indexOf('|', 2));
    const flagged = grade.risk
      ? rest.replace(/ \|$/, ` **Default unsafe outside this machine:** ${grade.risk}. |`)
      : rest;
    out.push(`| \`${key}\` | ${grade.required ?? ''} | ${grade.importance} ${flagged}`);
  }
  return out.join('\n');
}
