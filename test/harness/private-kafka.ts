/**
 * A Kafka broker of one test file's own: `docstream stack up --services kafka` of the built CLI, with a
 * run directory under the temp dir and free ports for all five of its listeners. For the tests that
 * stop or stall their broker (kafka-restart, kafka-freeze): on the shared broker they would disturb
 * every file running beside them. The schema registry and the S3 store stay the shared ones (neither
 * keeps anything in Kafka). `startPrivateCluster` does the same for a three-node cluster
 * (`--brokers 3`), whose nodes a test kills with SIGKILL and starts again one at a time.
 * `startPrivateKafka({ authorizer: true })` runs it with Kafka's StandardAuthorizer on: `brokers` (the
 * plain listener) is the admin's, `secure.scramTls` the two principals' (User:docstream and
 * User:docstream-operator), each allowed only what the test grants with ACLs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../scripts/lib/harness.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { AUTHORIZER_ENV, BROKERS_ENV, NODE_PORTS_ENV, PORT_ENV } from '../../src/stack/options.js';
import { readSecureListeners, type SecureListeners } from '../../src/stack/secure.js';
import { kafkaNodeFiles } from '../../src/stack/services.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

export interface PrivateKafka {
  /** The PLAINTEXT listener; under the authorizer, a super user's (User:ANONYMOUS). */
  brokers: string[];
  /** The run directory (pid file, data, logs). */
  runDir: string;
  /** The secured listeners: the CA, SCRAM over TLS with its two users, mutual TLS, OAUTHBEARER. */
  secure: SecureListeners;
  /** `docstream stack <action> --services kafka` on this broker. */
  stack(action: 'up' | 'down'): Promise<void>;
  /** Stops the broker and removes its run directory. */
  remove(): Promise<void>;
}

export interface PrivateKafkaOptions {
  /** Kafka's StandardAuthorizer on; no ACLs are granted (the test creates them as the admin). */
  authorizer?: boolean;
}

export async function startPrivateKafka(options: PrivateKafkaOptions = {}): Promise<PrivateKafka> {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-kafka-'));
  const ports = {
    [PORT_ENV.kafka]: await freePort(),
    [PORT_ENV.kafkaController]: await freePort(),
    [PORT_ENV.kafkaScramTls]: await freePort(),
    [PORT_ENV.kafkaMtls]: await freePort(),
    [PORT_ENV.kafkaOauth]: await freePort(),
  };
  const env = {
    ...process.env,
    DOCSTREAM_STACK_RUN_DIR: runDir,
    [AUTHORIZER_ENV]: options.authorizer ? 'true' : 'false',
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  const cli = async (...args: string[]): Promise<void> => {
    await run(process.execPath, [CLI, 'stack', ...args, '--services', 'kafka'], { env, timeout: 170_000 });
  };
  const kafka: Omit<PrivateKafka, 'secure'> = {
    brokers: [`localhost:${ports[PORT_ENV.kafka]}`],
    runDir,
    stack: (action) => cli(action),
    async remove() {
      try {
        await cli('down', '--wipe');
      } finally {
        fs.rmSync(runDir, { recursive: true, force: true });
      }
    },
  };
  try {
    await kafka.stack('up');
    const secure = readSecureListeners({ runDir });
    if (!secure?.scramTls.operator) throw new Error(`no secured listeners described in ${runDir}`);
    return { ...kafka, secure };
  } catch (err) {
    await kafka.remove().catch(() => undefined);
    throw err;
  }
}

export interface PrivateCluster {
  /** Every node's PLAINTEXT address, node 1 first. */
  brokers: string[];
  runDir: string;
  /** SIGKILLs node n (from 1), the whole process group, and waits until it is gone. */
  kill(node: number): Promise<void>;
  /** Starts the nodes that are not running (`stack up --brokers 3`), waiting until every node is healthy. */
  up(): Promise<void>;
  /** Stops every node and removes the run directory. */
  remove(): Promise<void>;
}

/** Gone, or a zombie its parent has not reaped yet (it holds no port or file any more). */
function processGone(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

export async function startPrivateCluster(): Promise<PrivateCluster> {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-cluster-'));
  const nodes = [];
  for (let i = 0; i < 3; i++) nodes.push({ kafka: await freePort(), controller: await freePort() });
  const env = {
    ...process.env,
    DOCSTREAM_STACK_RUN_DIR: runDir,
    [BROKERS_ENV]: '3',
    [PORT_ENV.kafka]: String(nodes[0]!.kafka),
    [PORT_ENV.kafkaController]: String(nodes[0]!.controller),
    [NODE_PORTS_ENV]: nodes
      .slice(1)
      .map((n) => `${n.kafka}:${n.controller}`)
      .join(','),
  };
  const cli = async (...args: string[]): Promise<void> => {
    await run(process.execPath, [CLI, 'stack', ...args, '--services', 'kafka'], { env, timeout: 240_000 });
  };
  const cluster: PrivateCluster = {
    brokers: nodes.map((n) => `localhost:${n.kafka}`),
    runDir,
    async kill(node) {
      const rec = JSON.parse(fs.readFileSync(kafkaNodeFiles(runDir, node).pidFile, 'utf8')) as {
        pid: number;
      };
      try {
        process.kill(-rec.pid, 'SIGKILL');
      } catch {
        process.kill(rec.pid, 'SIGKILL');
      }
      for (let i = 0; i < 100 && !processGone(rec.pid); i++) await sleep(100);
      if (!processGone(rec.pid)) throw new Error(`kafka-${node} (pid ${rec.pid}) still runs after SIGKILL`);
    },
    up: () => cli('up'),
    async remove() {
      try {
        await cli('down', '--wipe');
      } finally {
        fs.rmSync(runDir, { recursive: true, force: true });
      }
    },
  };
  try {
    await cluster.up();
  } catch (err) {
    await cluster.remove().catch(() => undefined);
    throw err;
  }
  return cluster;
}
