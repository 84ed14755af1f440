/**
 * A trickle of documents (the quiet benchmark, issue 31): arrivals produced one at a time at a
 * steady rate, each alone in its own Kafka request, so that every document pays for its own round
 * trips (nothing shares a batch) — the way `docstream run` and the floors are fed alike — and what
 * a document costs over such a trickle: the whole process tree's CPU from the first measured
 * document produced to the last one settled, idle loops included, divided by the documents settled.
 */
import type { KafkaProducer } from '../../src/kafka/index.js';
import { round, sleep, type Arrival } from './harness.js';
import type { TreeSample } from './process-tree.js';

/** Documents in `seconds` at `rate` a second. */
export function trickleCount(rate: number, seconds: number): number {
  return Math.round(seconds * rate);
}

/**
 * Produces each arrival alone, the i-th due at start + (i + 1) / rate s (stamped with the time it is
 * sent); stops early at the deadline. Returns the event ids sent.
 */
export async function produceTrickle(
  producer: KafkaProducer,
  topic: string,
  arrivals: Arrival[],
  rate: number,
  deadline: number,
): Promise<string[]> {
  const sent: string[] = [];
  const start = Date.now();
  for (let i = 0; i < arrivals.length && Date.now() < deadline; i++) {
    const a = arrivals[i]!;
    sent.push(a.event_id);
    await producer.send(topic, [{ key: a.event_id, value: a.value, timestamp: String(Date.now()) }]);
    const next = start + ((i + 1) * 1000) / rate;
    await sleep(Math.max(0, next - Date.now()));
  }
  return sent;
}

/** What one process tree cost over a measured trickle. */
export interface TrickleMeasure {
  /** Documents produced in the measured window. */
  docs: number;
  /** Of those, finished (every result out, or a dead letter for the connector). */
  settled: number;
  seconds: number;
  /** The tree's CPU over the window (nothing subtracted) per document settled. */
  cpuMsPerDoc: number;
}

export function trickleMeasure(
  from: TreeSample,
  to: TreeSample,
  o: { docs: number; settled: number; seconds: number },
): TrickleMeasure {
  return {
    docs: o.docs,
    settled: o.settled,
    seconds: round(o.seconds, 1),
    cpuMsPerDoc: round((to.cpuMs - from.cpuMs) / Math.max(1, o.settled), 2),
  };
}

/** How many times a floor's CPU per document the connector's is; null when the floor's is 0. */
export function cpuRatio(connectorMs: number, floorMs: number): number | null {
  return floorMs > 0 ? round(connectorMs / floorMs, 2) : null;
}
