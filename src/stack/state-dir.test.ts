import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultStackOptions } from './options.js';
import { stackDown } from './index.js';
import {
  countPartitionDirs,
  describeRemoved,
  directorySize,
  partitionDirWarning,
  processesUsing,
  removeServiceDir,
} from './state-dir.js';

let runDir: string;
beforeEach(() => {
  runDir = mkdtempSync(join(tmpdir(), 'docstream-state-dir-'));
});
afterEach(() => rmSync(runDir, { recursive: true, force: true }));

/** A run dir as `up` leaves it: Kafka's partition directories and files, the registry's database, logs. */
function fillRunDir(partitions: number): void {
  const data = join(runDir, 'kafka', 'data');
  for (let i = 0; i < partitions; i++) {
    mkdirSync(join(data, `t-${i}`), { recursive: true });
    writeFileSync(join(data, `t-${i}`, '00000000000000000000.log'), Buffer.alloc(1024));
  }
  writeFileSync(join(data, 'meta.properties'), 'cluster.id=x\n');
  writeFileSync(join(runDir, 'kafka', 'kafka.log'), 'log\n');
  mkdirSync(join(runDir, 'registry', 'data'), { recursive: true });
  writeFileSync(join(runDir, 'registry', 'data', 'registry.mv.db'), Buffer.alloc(2048));
  mkdirSync(join(runDir, 's3'), { recursive: true });
  writeFileSync(join(runDir, 's3', 's3.out'), 'started\n');
}

/** A process whose command line names a file in the run dir, as a running Kafka names its config. */
async function processNaming(file: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', file], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!processesUsing(runDir).includes(child.pid!)) {
    if (Date.now() > deadline) throw new Error('the child never showed up in /proc');
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

describe("Kafka's partition directories", () => {
  test('are counted (files are not), 0 before Kafka ever ran', () => {
    expect(countPartitionDirs(runDir)).toBe(0);
    fillRunDir(3);
    expect(countPartitionDirs(runDir)).toBe(3);
  });

  test('past the limit, a warning says how many, where, and how to start over', () => {
    fillRunDir(3);
    expect(partitionDirWarning(runDir, 3)).toBeUndefined();
    const warning = partitionDirWarning(runDir, 2);
    expect(warning).toContain(`3 partition directories in ${join(runDir, 'kafka', 'data')}`);
    expect(warning).toContain('may run out of memory');
    expect(warning).toContain('`docstream stack down --wipe`');
  });
});

describe("removing a service's directory", () => {
  test('says what it held, and that there was nothing the second time', () => {
    fillRunDir(2);
    expect(directorySize(join(runDir, 'kafka'))).toBe(2 * 1024 + 13 + 4);
    const kafka = removeServiceDir(runDir, 'kafka');
    expect(kafka).toMatchObject({ dir: join(runDir, 'kafka'), existed: true, partitionDirs: 2 });
    expect(describeRemoved(kafka)).toBe('2 partition directories, 0.0 MB');
    expect(existsSync(join(runDir, 'kafka'))).toBe(false);
    expect(existsSync(join(runDir, 'registry'))).toBe(true);
    expect(removeServiceDir(runDir, 'kafka')).toEqual({
      dir: join(runDir, 'kafka'),
      existed: false,
      bytes: 0,
    });
  });
});

describe('stack down --wipe', () => {
  test('removes every service directory and the emptied run dir, one line each', async () => {
    fillRunDir(2);
    const lines: string[] = [];
    await stackDown(defaultStackOptions({ runDir, wipe: true, log: (l) => lines.push(l) }));
    expect(lines).toEqual([
      's3: not running',
      `s3: removed ${join(runDir, 's3')} (0.0 MB)`,
      'registry: not running',
      `registry: removed ${join(runDir, 'registry')} (0.0 MB)`,
      'kafka: not running',
      `kafka: removed ${join(runDir, 'kafka')} (2 partition directories, 0.0 MB)`,
    ]);
    expect(existsSync(runDir)).toBe(false);
  });

  test('only the selected services, and a run dir holding other things is kept', async () => {
    fillRunDir(1);
    writeFileSync(join(runDir, 'notes.txt'), 'mine\n');
    await stackDown(defaultStackOptions({ runDir, wipe: true, services: ['kafka'], log: () => undefined }));
    expect(readdirSync(runDir).sort()).toEqual(['notes.txt', 'registry', 's3']);
  });

  test('without --wipe nothing is removed', async () => {
    fillRunDir(1);
    await stackDown(defaultStackOptions({ runDir, log: () => undefined }));
    expect(readdirSync(runDir).sort()).toEqual(['kafka', 'registry', 's3']);
  });

  test('keeps a directory a running process names, fails naming its pid, removes the rest', async () => {
    fillRunDir(1);
    const child = await processNaming(join(runDir, 'kafka', 'server.properties'));
    try {
      const lines: string[] = [];
      const down = stackDown(defaultStackOptions({ runDir, wipe: true, log: (l) => lines.push(l) }));
      await expect(down).rejects.toThrow(
        `kafka: not removed: ${join(runDir, 'kafka')} is still in use by pid ${child.pid}`,
      );
      expect(existsSync(join(runDir, 'kafka', 'data', 't-0'))).toBe(true);
      expect(existsSync(join(runDir, 'registry'))).toBe(false);
      expect(lines).toContain(`registry: removed ${join(runDir, 'registry')} (0.0 MB)`);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
