import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { parseStat, sampleTree } from './process-tree.js';

describe('parseStat', () => {
  it('reads the fields after a command name holding spaces and parentheses', () => {
    const f = parseStat('4242 (node (worker) x) S 17 4242 4242 0 -1 4194560 10 0 0 0 250 31 0 0 20 0');
    expect(f[0]).toBe('S');
    expect(f[1]).toBe('17');
    expect([f[11], f[12]]).toEqual(['250', '31']);
  });
});

describe('sampleTree', () => {
  it('counts a process and its children', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => child.once('spawn', resolve));
      const s = sampleTree(process.pid);
      expect(s.pids[0]).toBe(process.pid);
      expect(s.pids).toContain(child.pid);
      expect(s.cpuMs).toBeGreaterThan(0);
      expect(s.rssKb).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('refuses a process that is gone rather than reading its CPU as 0', () => {
    const none = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8')) + 1;
    expect(() => sampleTree(none)).toThrow(/is gone/);
  });
});
