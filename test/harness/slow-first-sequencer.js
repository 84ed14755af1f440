// A jest test sequencer that starts the slowest test files first, so that no worker begins a long file
// when the others are nearly done. Jest's own sequencer orders by the times of the last run, kept in
// its cache; a fresh clone (CI) has no cache, and jest then falls back to file size, which starts some
// of the longest integration files (small files that wait on slow APIs and rebalances) last.
// This one is jest's, with one change: a file the cache has no time for takes its time from SLOW
// (0 when not named there), so on a fresh clone the files named there go first, longest first, and
// the rest follow by size. The seconds are each file's wall time in a fresh-clone CI run with three
// files at a time (the "file-time:" lines of test/harness/file-times-reporter.js); only their order
// matters.
import fs from 'node:fs';
import path from 'node:path';
import TestSequencer from '@jest/test-sequencer';

const SLOW = {
  'test/connector/kafka-cluster.test.ts': 225,
  'test/connector/kafka-freeze.test.ts': 79,
  'test/connector/kafka-restart.test.ts': 75,
  'test/connector/failures.test.ts': 74,
  'test/state/connector-state.test.ts': 74,
  'test/connector/replay.test.ts': 71,
  'test/examples/samples.test.ts': 65,
  'test/connector/scale-slow-api.test.ts': 60,
  'test/resilience.test.ts': 59,
  'test/cli/conventions.test.ts': 51,
  'test/cli/exit-codes.test.ts': 49,
  'test/connector/resilience.test.ts': 47,
  'test/connector/sticky-rebalance.test.ts': 47,
  'test/connector/api-outages.test.ts': 38,
  'test/operator/inspect-status.test.ts': 38,
  'test/operator/dlq.test.ts': 35,
  'test/client/client.test.ts': 34,
  'test/security/kafka-secured.test.ts': 33,
};

function hint(test) {
  const file = path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/');
  return SLOW[file];
}

export default class SlowFirstSequencer extends (TestSequencer.default ?? TestSequencer) {
  sort(tests) {
    const failed = new Map(tests.map((t) => [t, this.hasFailed(t)]));
    // As jest's: the cached time is the test's duration (jest's estimate of the run and its choice to
    // run in band read it). For the order, a file with no cached time gets its hint, or 0.
    for (const t of tests) t.duration = this.time(t);
    const time = new Map(tests.map((t) => [t, t.duration ?? (hint(t) ?? 0) * 1000]));
    const size = new Map(tests.map((t) => [t, fs.statSync(t.path).size]));
    return [...tests].sort(
      (a, b) =>
        Number(failed.get(b)) - Number(failed.get(a)) ||
        time.get(b) - time.get(a) ||
        size.get(b) - size.get(a),
    );
  }
}
