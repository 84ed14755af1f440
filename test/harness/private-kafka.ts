/**
 * A Kafka broker of one test file's own: `docstream stack up --services kafka` of the built CLI, with a
 * run directory under the temp dir and free ports for all five of its listeners. For the tests that
 * stop or stall their broker (kafka-restart, kafka-freeze): on the shared broker they would disturb
 * every file running beside them. The schema registry and the S3 store stay the shared ones (neither
 * keeps anything in Kafka).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../scripts/lib/harness.js';
import { PORT_ENV } from '../../src/stack/options.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

export interface PrivateKafka {
  brokers: string[];
  /** The run directory (pid file, data, logs). */
  runDir: string;
  /** `docstream stack <action> --services kafka` on this broker. */
  stack(action: 'up' | 'down'): Promise<void>;
  /** Stops the broker and removes its run directory. */
  remove(): Promise<void>;
}

export async function startPrivateKafka(): Promise<PrivateKafka> {
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
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  const cli = async (...args: string[]): Promise<void> => {
    await run(process.execPath, [CLI, 'stack', ...args, '--services', 'kafka'], { env, timeout: 170_000 });
  };
  const kafka: PrivateKafka = {
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
  } catch (err) {
    await kafka.remove().catch(() => undefined);
    throw err;
  }
  return kafka;
}
