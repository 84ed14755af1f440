/**
 * Names of what a test makes on the shared stack. Every name holds this run's id (DOCSTREAM_TEST_RUN,
 * set by the global set-up), so that the global teardown deletes this run's topics and no other's
 * (src/stack/scratch-topics.ts).
 */
import { scratchName } from '../../src/stack/scratch-topics.js';

/** A name unique to one test in this run, for topics, consumer groups, subjects and buckets: `prefix-<run>-<random>`. */
export function uniqueName(prefix: string): string {
  return scratchName(prefix);
}
