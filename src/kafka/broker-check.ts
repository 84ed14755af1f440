/**
 * Whether a Kafka broker answers as one: a metadata request, on a client of its own that tries once
 * and logs nothing, lists at least one broker. For the local stack's health checks, which must tell a
 * broker that is up from a port that merely accepts connections.
 */
import kafkajs from 'kafkajs';
import { fixIdleRequestQueues } from './request-queue.js';

const { Kafka, logLevel } = kafkajs;
fixIdleRequestQueues();

/** True when `broker` (host:port) lists at least `minBrokers` of the cluster's brokers within `timeoutMs`. */
export async function brokerAnswers(broker: string, timeoutMs: number, minBrokers = 1): Promise<boolean> {
  const kafka = new Kafka({
    clientId: 'docstream-stack-health',
    brokers: [broker],
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length >= Math.max(1, minBrokers);
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
