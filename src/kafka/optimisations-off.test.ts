/**
 * Each kafkajs patch switched off (DOCSTREAM_OPTIMISATIONS_OFF) leaves kafkajs's own code in place.
 * The variable is set before any patch of this file's modules is applied (each applies once per
 * process), and the installed kafkajs is the one the patches were written for, so the switch is the
 * only reason nothing changes.
 */
import kafkajs from 'kafkajs';
import { OPTIMISATIONS_OFF_ENV } from '../util/optimisations.js';
import { adminWithCluster } from './group-readings.js';
import { internalsPatchable } from './kafkajs-internals.js';
import { consumerGroupClass, fixPausedFetchLoops, runnerClass } from './paused-fetch.js';
import {
  fixIdleRequestQueues,
  requestQueueClass,
  scheduleCheckPendingRequests,
  scheduleRequestTimeoutCheck,
} from './request-queue.js';
import { connectionClass, releaseEmptyRemainders } from './response-remainder.js';

const ALL_KAFKAJS =
  'kafkajs-idle-request-queues,kafkajs-paused-fetch,kafkajs-response-remainder,kafkajs-group-readings';

beforeAll(() => {
  process.env[OPTIMISATIONS_OFF_ENV] = ALL_KAFKAJS;
});
afterAll(() => {
  delete process.env[OPTIMISATIONS_OFF_ENV];
});

/** The methods of a prototype, by name. */
function methods(proto: object, names: string[]): unknown[] {
  return names.map((n) => (proto as Record<string, unknown>)[n]);
}

describe('kafkajs patches switched off', () => {
  it('are otherwise applicable: the installed kafkajs is the patched version', () => {
    expect(internalsPatchable()).toBe(true);
  });

  it('kafkajs-idle-request-queues: the request queue keeps its own timers', () => {
    const proto = requestQueueClass().prototype;
    const names = [
      'scheduleCheckPendingRequests',
      'scheduleRequestTimeoutCheck',
      'sendSocketRequest',
      'destroy',
    ];
    const before = methods(proto, names);
    fixIdleRequestQueues();
    expect(methods(proto, names)).toEqual(before);
    expect(proto.scheduleCheckPendingRequests).not.toBe(scheduleCheckPendingRequests);
    expect(proto.scheduleRequestTimeoutCheck).not.toBe(scheduleRequestTimeoutCheck);
  });

  it("kafkajs-paused-fetch: the consumer group's fetch and the runner are kafkajs's", () => {
    const group = consumerGroupClass().prototype;
    const runner = runnerClass().prototype;
    const before = [...methods(group, ['fetch', 'resume']), ...methods(runner, ['fetch', 'stop'])];
    fixPausedFetchLoops();
    expect([...methods(group, ['fetch', 'resume']), ...methods(runner, ['fetch', 'stop'])]).toEqual(before);
  });

  it("kafkajs-response-remainder: the connection's processData is kafkajs's", () => {
    const proto = connectionClass().prototype as unknown as Record<string, unknown>;
    const before = proto.processData;
    releaseEmptyRemainders();
    expect(proto.processData).toBe(before);
  });

  it("kafkajs-group-readings: the admin's cluster is not captured, readings use the public admin", () => {
    const kafka = new kafkajs.Kafka({ brokers: ['127.0.0.1:1'], logLevel: kafkajs.logLevel.NOTHING });
    const { admin, cluster } = adminWithCluster(kafka);
    expect(cluster).toBeUndefined();
    expect(typeof admin.fetchOffsets).toBe('function');
    delete process.env[OPTIMISATIONS_OFF_ENV];
    try {
      // The positive control: with the switch on, the same call captures it.
      expect(adminWithCluster(kafka).cluster).toBeDefined();
    } finally {
      process.env[OPTIMISATIONS_OFF_ENV] = ALL_KAFKAJS;
    }
  });
});
