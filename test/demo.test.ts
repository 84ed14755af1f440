import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

describe('docstream demo', () => {
  it('processes the generated corpus and reports every document and dead letter', async () => {
    const { stdout } = await run(
      process.execPath,
      [path.resolve('dist/cli/index.js'), 'demo', '--keep-stack'],
      {
        timeout: 150_000,
      },
    );
    expect(stdout).toContain('demo complete');
    expect(stdout).toMatch(/12 events, 7 submissions, 5 dead letters/);
    expect(stdout).toMatch(/payslip-edited\s.*HIGH_RISK/);
    expect(stdout).toMatch(/outside\s.*blob\/blob_not_allowed/);
    // Its own lines (not the stack's log lines) fit 100 columns, the final table included.
    const own = stdout.split('\n').filter((l) => !l.startsWith('  stack '));
    expect(own.filter((l) => l.length > 100)).toEqual([]);
    expect(stdout).toMatch(/^event\s+fraud\s+quality\s+class\s+decision\s+dead letter$/m);
  });
});
