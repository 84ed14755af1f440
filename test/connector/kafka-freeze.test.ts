/**
 * The broker stalls (SIGSTOP of the broker's process, then SIGCONT) for longer than the
 * consumer's session timeout while documents are in flight, in both delivery modes: the group
 * forgets the member, which joins again once the broker answers. Checked: the connector never
 * exits, every document gets its result, none is dead-lettered, none is submitted twice. The broker
 * is the file's own (`private-kafka.ts`), so the files running beside it keep theirs; it is always
 * continued.
 */
import { sampleBytes } from '../../src/demo/corpus.js';
import { servicePaths } from '../../src/stack/paths.js';
import { readPidFile } from '../../src/stack/process.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { startPrivateKafka, type PrivateKafka } from '../harness/private-kafka.js';

const SESSION_TIMEOUT_MS = 6000;

let kafka: PrivateKafka;
beforeAll(async () => {
  kafka = await startPrivateKafka();
}, 180_000);
afterAll(() => kafka?.remove(), 180_000);

function kafkaPid(): number {
  const rec = readPidFile(servicePaths(kafka.runDir, 'kafka').pidFile);
  if (!rec) throw new Error(`the test's Kafka has no pid file in ${kafka.runDir}`);
  return rec.pid;
}

describe.each(['at-least-once', 'exactly-once'])(
  'Kafka stalled past the session timeout (%s)',
  (delivery) => {
    let env: E2E;
    let frozen: number | null = null;
    beforeAll(async () => {
      env = new E2E(1, { brokers: kafka.brokers });
      await env.start({ processing: { distribution: 'uniform', minMs: 500, maxMs: 1500 } });
    });
    afterAll(async () => {
      if (frozen !== null) process.kill(frozen, 'SIGCONT');
      await env?.stop();
    }, 60_000);

    it('the connector rides it out; every document gets its result once', async () => {
      const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
      const before = Array.from({ length: 40 }, (_, i) => `evt-freeze-a${i}`);
      const after = Array.from({ length: 10 }, (_, i) => `evt-freeze-b${i}`);
      const child = env.spawnConnector({
        kafka: { sessionTimeoutMs: SESSION_TIMEOUT_MS, heartbeatIntervalMs: 1000 },
        connector: { delivery, transactionLingerMs: 20, admissionWaitMs: 300 },
        // Joins, assignments, restores and resumes too, for the message of a failure.
        log: { level: 'info' },
      });
      await env.collect();
      // Creates that take a while: some are out when the broker stops answering.
      env.sandbox.configure({ faults: { extraLatencyMs: 500 } });
      await env.produce(before.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
      await waitFor('the first submissions', () => env.sandbox.stats().submissionsCreated >= 10, 30_000);

      frozen = kafkaPid();
      process.kill(frozen, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, SESSION_TIMEOUT_MS + 4000));
      process.kill(frozen, 'SIGCONT');
      frozen = null;
      await env.produce(after.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));

      const ids = [...before, ...after];
      const done = () => new Set(env.on('quality').map((o) => o.headers.event_id)).size;
      try {
        await waitFor(`results of all ${ids.length} documents`, () => done() === ids.length, 120_000);
      } catch (err) {
        // Which documents are missing, and the connector's whole log, repeated lines folded.
        const missing = ids.filter((id) => !env.on('quality').some((o) => o.headers.event_id === id));
        throw new Error(
          `${(err as Error).message} (${done()} out; missing ${missing.join(', ')}); connector log:\n` +
            env.childDigests.at(-1)?.text(),
        );
      }
      expect(child.exitCode).toBeNull();
      expect(env.on('dlq')).toEqual([]);
      const counts = env.sandbox.stats().submissionsByQueryId;
      expect(Object.keys(counts).sort()).toEqual([...ids].sort());
      expect(Object.entries(counts).filter(([, n]) => n !== 1)).toEqual([]);
    }, 200_000);
  },
);
