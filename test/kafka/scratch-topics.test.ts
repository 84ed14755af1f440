/**
 * The clean-up at the end of a test or benchmark run, on the real broker: it deletes the topics of
 * its run and leaves another run's (several runs share the local stack at once).
 */
import { deleteRunTopics, newRunId, scratchName } from '../../src/stack/scratch-topics.js';
import { kafkaClient } from './helpers.js';

const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');

describe('deleting the topics of a run', () => {
  // Runs of their own, not this test run's: deleting this run's topics now would pull them from
  // under the test files still running.
  const mine = newRunId();
  const other = newRunId();
  const admin = kafkaClient().admin();

  beforeAll(() => admin.connect());
  afterAll(async () => {
    await deleteRunTopics(BROKERS, other);
    await admin.disconnect();
  });

  test("deletes its scratch topics and those named after them, not another run's", async () => {
    const name = scratchName('cleanup', mine);
    const ours = [name, `${name}.documents.arrived`, scratchName('cleanup', mine)].sort();
    const theirs = [scratchName('cleanup', other), `${scratchName('cleanup', other)}.documents.arrived`];
    await admin.ensureTopics([...ours, ...theirs].map((topic) => ({ topic, numPartitions: 2 })));

    expect(await deleteRunTopics(BROKERS, mine)).toEqual(ours);

    // The broker's metadata follows the controller's deletion within moments.
    let listed = new Set(await admin.listTopics());
    for (let i = 0; i < 150 && ours.some((t) => listed.has(t)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      listed = new Set(await admin.listTopics());
    }
    expect(ours.filter((t) => listed.has(t))).toEqual([]);
    for (const topic of theirs) expect(listed.has(topic)).toBe(true);
    expect(listed.has('__consumer_offsets')).toBe(true);
    // Nothing of the run is left for a second pass.
    expect(await deleteRunTopics(BROKERS, mine)).toEqual([]);
  });
});
