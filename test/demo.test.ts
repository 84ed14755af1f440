import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { KafkaClient } from '../src/kafka/index.js';

const run = promisify(execFile);
const BROKERS = (process.env.DOCSTREAM_KAFKA_BROKERS ?? 'localhost:9092').split(',');

/**
 * The demo keeps its topics (`<demo run>.documents.arrived`, ...; it prints the input topic's name):
 * this test deletes them, as the global teardown deletes the ones named after the test run.
 */
async function deleteDemoTopics(stdout: string): Promise<void> {
  const demoRun = /input (demo-[\w-]+)\.documents\.arrived/.exec(stdout)?.[1];
  if (!demoRun) return;
  const admin = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-test' }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics((await admin.listTopics()).filter((t) => t.startsWith(`${demoRun}.`)));
  } finally {
    await admin.disconnect();
  }
}

describe('docstream demo', () => {
  it('processes the generated corpus and reports every document and dead letter', async () => {
    let stdout = '';
    try {
      ({ stdout } = await run(process.execPath, [path.resolve('dist/cli/index.js'), 'demo', '--keep-stack'], {
        timeout: 150_000,
      }).catch((err: { stdout?: string }) => {
        stdout = err.stdout ?? '';
        throw err;
      }));
      expect(stdout).toContain('demo complete');
      // The corpus's 12 events and one clean PDF of each of the two tenants.
      expect(stdout).toMatch(/14 events, 9 submissions, 5 dead letters, 2 tenants in 2 cells/);
      expect(stdout).toMatch(/payslip-edited\s.*HIGH_RISK/);
      expect(stdout).toMatch(/outside\s.*blob\/blob_not_allowed/);
      // Its own lines (not the stack's log lines) fit 100 columns, the final table included.
      const own = stdout.split('\n').filter((l) => !l.startsWith('  stack '));
      expect(own.filter((l) => l.length > 100)).toEqual([]);
      expect(stdout).toMatch(/^event\s+fraud\s+quality\s+class\s+decision\s+dead letter$/m);
      // Each tenant's document: its results in the table; created (the sandbox's record) in its own
      // cell by its own application, and its results carry its tenant.
      for (const [tenant, cell] of [
        ['acme', 'eu-1'],
        ['globex', 'us-1'],
      ]) {
        expect(stdout).toMatch(new RegExp(`^${tenant}-payslip\\s+NORMAL\\s+HIGH_QUALITY\\s+payslip$`, 'm'));
        expect(stdout).toMatch(
          new RegExp(`^${tenant}-payslip\\s+${tenant}\\s+${cell}\\s+${tenant}-app\\s+${tenant}$`, 'm'),
        );
      }
      expect(stdout).toMatch(/^event\s+tenant\s+cell\s+application\s+results' tenant$/m);
      expect(stdout).not.toContain('PRIVATE KEY');
    } finally {
      await deleteDemoTopics(stdout);
    }
  });
});
