/**
 * The corrections of kafkajs internals apply only on the kafkajs version they were written for: with
 * another version installed (faked through DOCSTREAM_TEST_KAFKAJS_VERSION, set before the client module
 * loads), kafkajs keeps its own methods, the admin reads groups through its public API, and the first
 * client with a logger says so in one line.
 */
import kafkajs from 'kafkajs';
import type { Logger } from '../observability/logger.js';
import { adminWithCluster } from './group-readings.js';
import {
  KAFKAJS_VERSION_ENV,
  PATCHED_KAFKAJS_VERSION,
  installedKafkajsVersion,
  internalsPatchable,
  unpatchedNotice,
} from './kafkajs-internals.js';
import { consumerGroupClass, runnerClass } from './paused-fetch.js';
import { requestQueueClass } from './request-queue.js';
import { connectionClass } from './response-remainder.js';

const FAKE_VERSION = '2.3.0-test';

/** True when `method` is the one kafkajs's class declares (a method, not a function put in its place). */
function ownMethod(proto: object, name: string): boolean {
  const method = (proto as Record<string, unknown>)[name];
  if (typeof method !== 'function') return false;
  const source = Function.prototype.toString.call(method);
  return source.startsWith(`${name}(`) || source.startsWith(`async ${name}(`);
}

/** A logger that keeps each line it is given. */
function recordingLogger(lines: Array<{ level: string; msg: string }>): Logger {
  const at =
    (level: string) =>
    (...args: unknown[]): void => {
      const msg = args.find((a): a is string => typeof a === 'string') ?? '';
      lines.push({ level, msg });
    };
  const logger = {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    trace: at('trace'),
    fatal: at('fatal'),
    child: () => logger,
  };
  return logger as unknown as Logger;
}

describe('the installed kafkajs version', () => {
  const saved = process.env[KAFKAJS_VERSION_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[KAFKAJS_VERSION_ENV];
    else process.env[KAFKAJS_VERSION_ENV] = saved;
  });

  it('is read from kafkajs/package.json: the one the corrections were written for', () => {
    delete process.env[KAFKAJS_VERSION_ENV];
    expect(installedKafkajsVersion()).toBe(PATCHED_KAFKAJS_VERSION);
    expect(internalsPatchable()).toBe(true);
    expect(unpatchedNotice()).toBeUndefined();
  });

  it('another version leaves the internals alone, and is said in one line', async () => {
    process.env[KAFKAJS_VERSION_ENV] = FAKE_VERSION;
    expect(internalsPatchable()).toBe(false);
    // Loading the client applies the corrections that fit (client.ts): here, none.
    const { KafkaClient } = await import('./client.js');

    const queue = requestQueueClass().prototype;
    for (const name of [
      'scheduleCheckPendingRequests',
      'scheduleRequestTimeoutCheck',
      'sendSocketRequest',
      'destroy',
    ])
      expect([name, ownMethod(queue, name)]).toEqual([name, true]);
    const group = consumerGroupClass().prototype;
    for (const name of ['fetch', 'resume', 'joinAndSync'])
      expect([name, ownMethod(group, name)]).toEqual([name, true]);
    const runner = runnerClass().prototype;
    for (const name of ['fetch', 'stop']) expect([name, ownMethod(runner, name)]).toEqual([name, true]);
    expect(ownMethod(connectionClass().prototype, 'processData')).toBe(true);
    const kafka = new kafkajs.Kafka({ brokers: ['127.0.0.1:9'], logLevel: kafkajs.logLevel.NOTHING });
    expect(adminWithCluster(kafka).cluster).toBeUndefined();

    const lines: Array<{ level: string; msg: string }> = [];
    new KafkaClient({ brokers: ['127.0.0.1:9'], logger: recordingLogger(lines) });
    new KafkaClient({ brokers: ['127.0.0.1:9'], logger: recordingLogger(lines) });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe('warn');
    expect(lines[0]!.msg).toContain(`kafkajs ${FAKE_VERSION} is installed, not ${PATCHED_KAFKAJS_VERSION}`);
    expect(lines[0]!.msg).toContain('not applied');
  });

  it('tells a method of the class from a function put in its place', () => {
    class Queue {
      destroy(): void {}
      async fetch(): Promise<void> {}
    }
    expect(ownMethod(Queue.prototype, 'destroy')).toBe(true);
    expect(ownMethod(Queue.prototype, 'fetch')).toBe(true);
    const patched = Object.create(Queue.prototype) as Record<string, unknown>;
    patched.destroy = function (this: Queue) {};
    patched.fetch = async function () {};
    expect(ownMethod(patched, 'destroy')).toBe(false);
    expect(ownMethod(patched, 'fetch')).toBe(false);
  });

  it('on the version they were written for, the admin is built on its cluster (for group readings)', () => {
    delete process.env[KAFKAJS_VERSION_ENV];
    const kafka = new kafkajs.Kafka({ brokers: ['127.0.0.1:9'], logLevel: kafkajs.logLevel.NOTHING });
    expect(adminWithCluster(kafka).cluster).toBeDefined();
  });
});
