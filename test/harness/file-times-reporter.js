/* global process */
// A jest reporter that prints, after each run, every test file's wall time (slowest first) and their
// sum, one line per file prefixed "file-time:", so CI's log shows where the minutes go. It runs beside
// jest's default reporter and prints nothing else (no line starts with "Tests:", which .ci/run sums).
export default class FileTimesReporter {
  constructor() {
    this.times = [];
  }

  onTestResult(test, result) {
    const { start, end } = result.perfStats;
    const seconds = start > 0 && end >= start ? (end - start) / 1000 : 0;
    const file = test.path.startsWith(test.context.config.rootDir)
      ? test.path.slice(test.context.config.rootDir.length + 1)
      : test.path;
    const project = test.context.config.displayName?.name ?? '';
    this.times.push({ file, project, seconds, failed: result.numFailingTests > 0 || !!result.testExecError });
  }

  onRunComplete() {
    if (this.times.length === 0) return;
    const sorted = [...this.times].sort((a, b) => b.seconds - a.seconds);
    const total = sorted.reduce((sum, t) => sum + t.seconds, 0);
    const lines = sorted.map(
      (t) =>
        `file-time: ${t.seconds.toFixed(1).padStart(7)} s  ${t.project ? `[${t.project}] ` : ''}${t.file}${t.failed ? '  (failed)' : ''}`,
    );
    lines.push(`file-time: ${total.toFixed(1).padStart(7)} s  summed over ${sorted.length} files`);
    process.stderr.write(`\n${lines.join('\n')}\n`);
  }
}
