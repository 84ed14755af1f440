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
      expect(stdout).toMatch(/12 events, 7 submissions, 5 dead letters/);
      expect(stdout).toMatch(/payslip-edited\s.*HIGH_RISK/);
      expect(stdout).toMatch(/outside\s.*blob\/blob_not_allowed/);
      // Its own lines (not the stack's log lines) fit 100 columns, the final table included.
      const own = stdout.split('\n').filter((l) => !l.startsWith('  stack '));
      expect(own.filter((l) => l.length > 100)).toEqual([]);
      expect(stdout).toMatch(/^event\s+fraud\s+quality\s+class\s+decision\s+dead letter$/m);
    } finally {
      await deleteDemoTopics(stdout);
    }
  });
});
