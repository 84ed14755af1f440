/**
 * The configuration, declared once: every key with its type, default and description.
 * The loader, the validation, the environment-variable names and the reference docs
 * (`docstream config docs`) are all derived from this table, so they cannot drift apart.
 */
import { proxyUrlProblem } from '../util/proxy.js';
import { secretProblem } from '../webhooks/verify.js';

export type FieldKind = 'string' | 'int' | 'number' | 'bool' | 'list' | 'enum' | 'json';

export interface FieldSpec {
  kind: FieldKind;
  description: string;
  /** A value, or a function computing it at load time (e.g. from the working directory). */
  default: unknown;
  /** Never printed, never logged; may also be read from a file named by `<VAR>_FILE`. */
  secret?: boolean;
  values?: readonly string[];
  min?: number;
  max?: number;
  /** A check beyond the type: why a value of the right type is still refused, or null. */
  check?: (value: unknown) => string | null;
}

type Field<K extends FieldKind, Extra = object> = Omit<FieldSpec, 'kind' | 'values'> & { kind: K } & Extra;

const f = {
  string: (def: string, description: string, extra: Partial<FieldSpec> = {}): Field<'string'> => ({
    ...extra,
    kind: 'string',
    default: def,
    description,
  }),
  secret: (def: string, description: string): Field<'string'> => ({
    kind: 'string',
    default: def,
    description,
    secret: true,
  }),
  int: (def: number, description: string, min = 0, max = Number.MAX_SAFE_INTEGER): Field<'int'> => ({
    kind: 'int',
    default: def,
    description,
    min,
    max,
  }),
  number: (def: number, description: string, min = 0, max = Number.MAX_VALUE): Field<'number'> => ({
    kind: 'number',
    default: def,
    description,
    min,
    max,
  }),
  bool: (def: boolean, description: string): Field<'bool'> => ({ kind: 'bool', default: def, description }),
  list: (
    def: string[] | (() => string[]),
    description: string,
    extra: Partial<FieldSpec> = {},
  ): Field<'list'> => ({
    ...extra,
    kind: 'list',
    default: def,
    description,
  }),
  enum: <const T extends string>(
    values: readonly T[],
    def: T,
    description: string,
  ): Field<'enum', { values: readonly T[] }> => ({
    kind: 'enum',
    values,
    default: def,
    description,
  }),
  json: (def: unknown, description: string): Field<'json'> => ({ kind: 'json', default: def, description }),
};

export const CONFIG_SPEC = {
  kafka: {
    brokers: f.list(['localhost:9092'], 'Kafka bootstrap servers (comma-separated in the environment).'),
    clientId: f.string('docstream', 'Kafka client id.'),
    groupId: f.string('docstream', 'Consumer group of the connector; instances sharing it share the input.'),
    sessionTimeoutMs: f.int(
      30000,
      'Consumer session timeout: how long a crashed instance keeps its partitions before others take them.',
      6000,
      300000,
    ),
    heartbeatIntervalMs: f.int(
      3000,
      'Consumer heartbeat interval (at most a third of the session timeout).',
      100,
    ),
    assignor: f.enum(
      ['sticky', 'round-robin'],
      'sticky',
      "Partition assignment the consumer prefers. sticky: a scale event moves only the partitions that must move, and kept partitions keep their documents and state; round-robin: kafkajs' assignor first (docstream's before the sticky one; moves most partitions at every scale event), for comparison or for a group that must stay on it. Both are offered, so members of either kind can share a group; the broker picks, of the protocols every member offers, the one most members rank first.",
    ),
    ssl: f.bool(
      false,
      "Connect to Kafka with TLS (implied by kafka.sslCaFile or kafka.sslCertFile); the brokers' certificates are checked against the system's CAs unless kafka.sslCaFile names others.",
    ),
    sslCaFile: f.string(
      '',
      "PEM file of the CA(s) that signed the brokers' certificates (a private CA); trusted for Kafka connections only, not for the API or blobs.",
    ),
    sslCertFile: f.string(
      '',
      'PEM file of the client certificate (chain) for mutual TLS; needs kafka.sslKeyFile.',
    ),
    sslKeyFile: f.string('', 'PEM file of the private key of kafka.sslCertFile.'),
    sslKeyPassword: f.secret('', 'Passphrase of an encrypted kafka.sslKeyFile.'),
    sslServerName: f.string(
      '',
      "Host name expected in the brokers' certificates (and sent as SNI), when it differs from the address connected to.",
    ),
    sslVerify: f.bool(
      true,
      "Verify the brokers' certificates and host names; turning it off accepts any certificate (tests only).",
    ),
    saslMechanism: f.enum(
      ['none', 'plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer', 'aws-msk-iam'],
      'none',
      'SASL mechanism: plain/scram with kafka.saslUsername and kafka.saslPassword; oauthbearer with an OIDC client-credentials token (kafka.oauth*); aws-msk-iam with credentials from the standard AWS chain.',
    ),
    saslUsername: f.string('', 'SASL user name (plain, scram).'),
    saslPassword: f.secret('', 'SASL password (plain, scram).'),
    oauthTokenUrl: f.string(
      '',
      'OIDC token endpoint of the oauthbearer mechanism (client-credentials grant).',
    ),
    oauthClientId: f.string('', 'OIDC client id of the oauthbearer mechanism.'),
    oauthClientSecret: f.secret('', 'OIDC client secret of the oauthbearer mechanism.'),
    oauthScope: f.string('', 'Scope requested with the oauthbearer token (space-separated; empty: none).'),
    oauthExtensions: f.json(
      {},
      'SASL extensions sent with the oauthbearer token, an object of strings (e.g. {"logicalCluster": "lkc-123", "identityPoolId": "pool-1"} for Confluent Cloud).',
    ),
    awsRegion: f.string(
      '',
      "AWS region of the MSK cluster (aws-msk-iam); empty: AWS_REGION, then the region in the brokers' host names.",
    ),
    maxMessageBytes: f.int(
      1000000,
      "Largest message the connector writes; a topic's lower max.message.bytes, read from the broker at boot, lowers it. Larger messages end in a (cut) dead letter.",
      1024,
    ),
  },
  topics: {
    arrived: f.string('documents.arrived', 'Input topic of arrival events.'),
    fraud: f.string('documents.fraud', 'Output topic of fraud results.'),
    quality: f.string('documents.quality', 'Output topic of quality results.'),
    classification: f.string('documents.classification', 'Output topic of classification results.'),
    decision: f.string('documents.decision', 'Output topic of Adaptive Decision results.'),
    dlq: f.string('documents.dlq', 'Dead-letter topic: documents that cannot be processed, with the reason.'),
    feedback: f.string(
      'documents.feedback',
      'Input topic of feedback events (submission id + feedback body).',
    ),
    state: f.string(
      'docstream.state',
      'Compacted state topic, co-partitioned with the input: submission id and progress per event_id.',
    ),
    webhooks: f.string(
      'docstream.webhooks',
      'Topic of verified decision webhook deliveries (key = submission id), read by every instance; compact,delete with a retention of the deadline window.',
    ),
    redrives: f.string(
      'docstream.redrives',
      'Compacted topic where `docstream dlq redrive` records each dead letter it re-drove (key = the dead letter), so that no dead letter is sent twice.',
    ),
    outputPartitions: f.int(
      3,
      'Partitions of output topics that docstream creates (existing topics are kept).',
      1,
    ),
    replicationFactor: f.int(1, 'Replication factor of topics that docstream creates.', 1),
  },
  registry: {
    url: f.string('http://localhost:8081/apis/ccompat/v7', 'Confluent-compatible schema registry URL.'),
    autoRegister: f.bool(
      true,
      "Register docstream's output schemas (and set their subjects' compatibility) at start; false uses the ids already registered and stops at start naming a subject that lacks its schema.",
    ),
    username: f.string('', 'Registry basic-auth user.'),
    password: f.secret('', 'Registry basic-auth password.'),
    bearerToken: f.secret('', 'Static bearer token for the registry (instead of basic auth).'),
    oauthTokenUrl: f.string(
      '',
      'OIDC token endpoint for a registry bearer token by the client-credentials grant (refreshed before expiry).',
    ),
    oauthClientId: f.string('', 'OIDC client id of the registry token.'),
    oauthClientSecret: f.secret('', 'OIDC client secret of the registry token.'),
    oauthScope: f.string('', 'Scope requested with the registry token (space-separated; empty: none).'),
    caFile: f.string(
      '',
      "PEM file of the CA(s) that signed the registry's certificate (https); registry connections only.",
    ),
    certFile: f.string(
      '',
      'PEM file of a client certificate for the registry (mutual TLS); needs registry.keyFile.',
    ),
    keyFile: f.string('', 'PEM file of the private key of registry.certFile.'),
    keyPassword: f.secret('', 'Passphrase of an encrypted registry.keyFile.'),
  },
  api: {
    cell: f.string(
      '',
      'Cell name (eu-1, us-1, ca-1, ap-2, ap-3, testing) resolved through api.cells; overrides baseUrl.',
    ),
    baseUrl: f.string(
      'http://localhost:8080',
      'Base URL of the Document Analysis API (default: the local sandbox).',
    ),
    tokenUrl: f.string('', 'OAuth 2.0 token endpoint; empty means `<baseUrl>/oauth2/token`.'),
    clientId: f.string('sandbox-client', 'OAuth client id (default: the sandbox client).'),
    clientSecret: f.secret('sandbox-secret', 'OAuth client secret (default: the public sandbox secret).'),
    cells: f.json({}, 'Map of cell name to {"baseUrl", "tokenUrl"} for the real service.'),
    allowInsecureHttp: f.bool(
      false,
      'Allow plain http:// API and token URLs on hosts other than loopback (the client secret and tokens then cross the network unencrypted).',
    ),
    ratePerSecond: f.number(
      20,
      'Ceiling of API calls per second for the whole consumer group (each instance takes its share of the input partitions); the API limit actually granted is found below it from 429s.',
      0.1,
    ),
    timeoutMs: f.int(30000, 'Timeout of one HTTP request.', 100),
    proxyUrl: {
      ...f.secret(
        '',
        'HTTP proxy (http://[user:password@]host:port, or https://…) of every API call, token request, upload to a pre-signed URL and http(s) blob fetch, tunnelled with CONNECT; not Kafka, the registry or s3 blobs. Empty: HTTPS_PROXY for https URLs and HTTP_PROXY for http URLs (lowercase names first), as curl and Node tools read them; none: no proxy, whatever the environment says. Kept secret, as its URL may carry the proxy password.',
      ),
      check: (value) => {
        const problem = proxyUrlProblem(String(value));
        return problem === null ? null : `the proxy URL ${problem}`;
      },
    },
    noProxy: f.string(
      '',
      'Hosts reached without the proxy, comma-separated as NO_PROXY: a name matches itself and its subdomains (example.com, .example.com), an IP only itself, host:port only that port, * every host. Empty: NO_PROXY (or no_proxy). Loopback is not exempt unless listed (add localhost,127.0.0.1 for a local sandbox).',
    ),
    caFile: f.string(
      '',
      "PEM file of extra CAs trusted, besides the system's, for the API, its token endpoint, upload URLs and http(s) blobs (and an https:// proxy): e.g. a company proxy that re-signs TLS. Not for Kafka (kafka.sslCaFile) or the registry (registry.caFile).",
    ),
  },
  tenant: {
    clientId: f.string(
      '',
      'OAuth client id of the tenant-admin client that `docstream tenants` authenticates with (private-key JWT).',
    ),
    privateKey: f.secret(
      '',
      'PKCS#8 PEM private key of tenant.clientId; usually DOCSTREAM_TENANT_PRIVATE_KEY_FILE naming the PEM file.',
    ),
    kid: f.string('', 'Key id registered with the API for tenant.privateKey.'),
  },
  tenants: {
    directoryFile: f.string(
      '',
      "JSON file of the tenants this deployment serves (docs/tenants.md): per tenant its cell and its application's client id with privateKeyFile and kid (private-key JWT) or clientSecretFile; files named relative to it. Read again every tenants.reloadIntervalMs and when its folder changes, without a restart; a new file that cannot be used is refused with an error line and the previous directory stays. Empty: no tenants, every event goes with the api.* credentials.",
    ),
    header: f.string(
      '',
      "Record header naming an arrival event's tenant, besides the event's own tenant field; when both are present and differ, the record is dead-lettered (validate/tenant_mismatch). Empty: the field only.",
    ),
    unknownGraceMs: f.int(
      60000,
      'How long an event whose tenant the directory does not know waits for it (in the background: the records behind it go on) before it is dead-lettered (validate/unknown_tenant), to be re-driven once the tenant is added.',
      0,
    ),
    reloadIntervalMs: f.int(2000, 'How often the tenant directory and its secret files are read again.', 100),
    maxInFlightShare: f.number(
      0.8,
      "With a tenant directory: the most of connector.maxInFlight one tenant's documents may hold (the default credentials' count as one tenant), and no more than an equal part while other tenants have documents under way, so that a tenant at its rate limit never takes the slots the others need. A new document past its tenant's share waits for its turn without holding a slot, and the records behind it go on.",
      0.01,
      1,
    ),
    maxWaiting: f.int(
      5000,
      "With a tenant directory: how many new documents may wait for their tenant's share without holding a slot (each keeps its decoded event in memory); past it they count against connector.maxInFlight and the input pauses when full.",
      0,
    ),
  },
  tracing: {
    enabled: f.bool(
      false,
      "Trace each document with OpenTelemetry (docs/operating.md, \"Traces\"): its span, a child of the event's traceparent, and one per step, exported over OTLP/HTTP (protobuf); outputs carry the document span's traceparent. Off: the producer's traceparent is passed through as before and nothing is recorded.",
    ),
    endpoint: f.string(
      '',
      'OTLP/HTTP traces endpoint, e.g. http://localhost:4318/v1/traces. Empty: the OpenTelemetry variables (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS), else http://localhost:4318/v1/traces.',
    ),
    sampleRatio: f.number(
      1,
      "Share of the documents without a sampled producer's trace that are traced (0-1); a document whose event carries a traceparent follows its sampled flag.",
      0,
      1,
    ),
  },
  connector: {
    maxInFlight: f.int(
      500,
      'Documents processed at once by this instance; partitions pause when full.',
      1,
      100000,
    ),
    pollInitialMs: f.int(500, 'First delay before polling a result.', 10),
    pollMaxMs: f.int(15000, 'Largest delay between two polls of one result.', 10),
    deadlineMs: f.int(
      900000,
      'A document whose results are not final by then goes to the dead-letter topic (decision/deadline when only its decision is missing).',
      1000,
    ),
    withMetadata: f.bool(false, 'Ask for indicator metadata (with_metadata=true) on fraud results.'),
    decisionPolling: f.bool(true, 'Poll for decisions; turn off when webhooks deliver them.'),
    deleteAfterPublish: f.bool(
      false,
      'Delete the submission once its results are published (retried on 409).',
    ),
    attachReportUrl: f.bool(false, 'Attach the report download URL to the fraud event (preview feature).'),
    awaitedResults: f.json(
      {},
      'Override of the results awaited per pipeline, e.g. {"FRAUD_ONLY": ["fraud"]}; default per the design.',
    ),
    commitIntervalMs: f.int(1000, 'How often safe offsets are committed.', 50),
    groupShareIntervalMs: f.int(
      500,
      "How often the group's offsets are read to divide the API limit among the input partitions that still have work (0: by partitions held, set on each group join only); while the whole group is idle and this member has seen nothing, every 5 s.",
      0,
    ),
    maxAttributesBytes: f.int(
      65536,
      'Largest serialised attributes of an event (echoed into every output): larger ones are dead-lettered (attributes_too_large).',
      2,
    ),
    redactFields: f.list(
      [],
      'Fields (dotted paths, e.g. blob.url or attributes.email) removed from the copy of the original record in dead letters; submission_characteristics always is.',
    ),
    shutdownTimeoutMs: f.int(30000, 'Bound on a graceful shutdown.', 100),
    startFrom: f.string(
      '',
      'Where the group starts reading an input partition it has no committed offset for, when that partition already holds records (a first start on a topic with history): earliest (analyse the history, each record a paid API call), latest (only records that arrive from now on), or an ISO-8601 timestamp (records from then on). Unset: start from the beginning when the partitions without a committed offset hold at most connector.firstStartBacklogLimit records in all, else refuse to start and say how many.',
    ),
    firstStartBacklogLimit: f.int(
      1000,
      'Records on input partitions without a committed offset that an unset connector.startFrom analyses at a first start; past it `docstream run` refuses to start until connector.startFrom says earliest, latest or a timestamp.',
      0,
    ),
    revocationTimeoutMs: f.int(
      40000,
      "How long a member that is giving up its partitions (a rebalance, a restart of its consumer) waits for the submissions it already created to be recorded in the state topic before it lets them go; no new submission is created meanwhile. A create still unanswered then leaves an empty submission (counted in docstream_submissions_left_empty_total). The member keeps heartbeating while it waits, so a wait longer than kafka.sessionTimeoutMs does not cost it its partitions; it stays below kafkajs' rebalance timeout (60 s), which bounds how long the group waits for a member.",
      0,
      55000,
    ),
    admissionWaitMs: f.int(
      5000,
      'How long a batch waits for its admissions before the next fetch; slower ones (a slow blob, a slow API, an API outage) go on in the background, and a rebalance waits for the submissions they created to be recorded (connector.revocationTimeoutMs).',
      0,
    ),
    delivery: f.enum(
      ['at-least-once', 'exactly-once'],
      'at-least-once',
      'How outputs are written. exactly-once: each result or dead letter in one Kafka transaction with the state record that makes it durable, and an instance that lost a partition fenced (one transactional id per input partition, <transactionalIdPrefix>-<partition>); outputs must then be read with isolation.level=read_committed. Not the default: it needs Write/Describe ACLs on TransactionalId resources, read_committed consumers downstream, one producer (and its broker connections) per owned input partition, and adds up to transactionLingerMs of latency per write; at-least-once may publish a result twice only when a crash falls between the result and its state record.',
    ),
    transactionalIdPrefix: f.string(
      '',
      'exactly-once: the prefix of the transactional ids, one per input partition (<prefix>-<partition>); empty: <kafka.groupId>-<topics.arrived>.',
    ),
    transactionLingerMs: f.int(
      20,
      'exactly-once: how long records gather before a partition commits them as one transaction (a transaction is out at a time per partition; records gather while it is).',
      0,
      1000,
    ),
  },
  state: {
    retentionMs: f.int(
      604800000,
      'How long a finished document stays in the state after it finished (default 7 days); a redelivered or replayed input older than that is submitted again.',
      1000,
    ),
    expiryIntervalMs: f.int(
      60000,
      'How often finished documents past the retention window are removed (tombstones written).',
      1000,
    ),
  },
  blobs: {
    fileRoots: f.list(
      [],
      'Directories file:// blobs may be read from; empty allows none (an event could otherwise upload any readable file).',
    ),
    httpHosts: f.list(
      [],
      'Host names (or host:port) http(s):// blobs may be fetched from; empty allows none.',
    ),
    allowPrivateNetworks: f.bool(
      false,
      'Allow http(s) blobs on loopback, private or link-local addresses (metadata endpoints stay refused).',
    ),
    s3Buckets: f.list([], 'Buckets s3:// blobs may be read from; empty allows none.'),
    s3Endpoint: f.string('', 'S3 endpoint URL for an S3-compatible store (empty: AWS).'),
    s3Region: f.string('us-east-1', 'S3 region.'),
    s3ForcePathStyle: f.bool(true, 'Use path-style S3 addressing (needed by most S3-compatible stores).'),
    verifySha256: f.bool(true, 'Verify blob.sha256 when an event gives it.'),
    maxBytes: f.int(104857600, 'Largest blob accepted; larger ones go to the dead-letter topic.', 1),
    transferTimeoutMs: f.int(
      600000,
      'Bound on the whole transfer of one http(s) or s3 blob, from the request to its last byte (time the upload does not take its bytes aside); past it the document is dead-lettered (blob_timeout). 0: no bound.',
      0,
    ),
    minBytesPerSecond: f.int(
      16384,
      'Slowest http(s) or s3 blob transfer accepted, in bytes per second over each 10 s window; a slower one is dead-lettered (blob_too_slow). 0: no minimum.',
      0,
    ),
    fileSyncReads: f.bool(
      true,
      'Check and read small file:// blobs (up to blobs.inMemoryBytes) with synchronous system calls: microseconds on a local disk, less CPU than asynchronous calls; set false for a network file system that may stall.',
    ),
    inMemoryBytes: f.int(
      1048576,
      'Blobs up to this size are read or fetched once, at admission, and held in memory until their upload (a retried upload included); larger ones stream from their file (file://) or from a private temp file (http(s), s3). All blobs held in memory at once share 64 MiB; past that they take the larger path. 0: none in memory.',
      0,
    ),
  },
  webhooks: {
    enabled: f.bool(false, 'Serve the Adaptive Decision webhook receiver inside `docstream run`.'),
    host: f.string('127.0.0.1', 'Address the webhook receiver listens on.'),
    port: f.int(8090, 'Port of the webhook receiver.', 0, 65535),
    path: f.string('/webhooks/document-analysis', 'Path of the webhook receiver.'),
    secrets: f.list([], 'Signing secrets (whsec_...), several at once during rotation.', {
      secret: true,
      check: (value) => {
        const secrets = value as string[];
        for (const [i, secret] of secrets.entries()) {
          const problem = secretProblem(secret);
          if (problem) return `secret ${i + 1} of ${secrets.length} ${problem} (not shown: a secret)`;
        }
        return null;
      },
    }),
    toleranceSeconds: f.int(300, 'Largest accepted age (and future skew) of webhook-timestamp.', 1),
    maxBodyBytes: f.int(65536, 'Largest accepted webhook body.', 1),
  },
  http: {
    host: f.string('127.0.0.1', 'Address of the metrics and health server.'),
    port: f.int(9464, 'Port of /metrics, /healthz and /readyz (0 disables).', 0, 65535),
  },
  log: {
    level: f.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], 'info', 'Log level.'),
    format: f.enum(['auto', 'json', 'pretty'], 'auto', 'json, pretty, or auto (pretty on a terminal).'),
  },
} as const satisfies Record<string, Record<string, FieldSpec>>;

export type ConfigSpec = typeof CONFIG_SPEC;
export type SectionName = keyof ConfigSpec;

type ValueOf<F extends FieldSpec> = F['kind'] extends 'string'
  ? string
  : F['kind'] extends 'int' | 'number'
    ? number
    : F['kind'] extends 'bool'
      ? boolean
      : F['kind'] extends 'list'
        ? string[]
        : F['kind'] extends 'enum'
          ? F['values'] extends readonly (infer V)[]
            ? V
            : string
          : unknown;

export type Config = {
  [S in SectionName]: {
    [K in keyof ConfigSpec[S]]: ConfigSpec[S][K] extends FieldSpec ? ValueOf<ConfigSpec[S][K]> : never;
  };
};

/** Environment variables with this prefix that are not configuration keys (tooling and tests). */
export const RESERVED_ENV = [
  'DOCSTREAM_CONFIG',
  'DOCSTREAM_OPTIMISATIONS_OFF',
  'DOCSTREAM_TEST_',
  'DOCSTREAM_STACK_',
];

export function envName(section: string, key: string): string {
  return `DOCSTREAM_${section.toUpperCase()}_${key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;
}
