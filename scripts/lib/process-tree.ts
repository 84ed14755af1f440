/**
 * CPU and memory of a process and all its descendants, read from /proc as `ps` or a container's
 * limit sees them: what the quiet benchmark charges `docstream run` and, beside it, each floor
 * (their whole trees, not what a process says of itself, so that nothing a runtime spends outside
 * its own accounting is left out). Linux only, as the benchmarks are.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

export interface TreeSample {
  pids: number[];
  cpuMs: number;
  rssKb: number;
}

/**
 * The fields of a /proc/<pid>/stat line after the command name (which may hold spaces and
 * parentheses): [0] is field 3 (state), [1] the parent pid, [11] utime, [12] stime.
 */
export function parseStat(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function statFields(pid: number): string[] | null {
  try {
    return parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** The process and all its descendants, as `ps --forest` would show them. */
function treePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = Number(statFields(Number(name))?.[1]);
    if (!Number.isFinite(ppid)) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * CPU (user + system, ms) and RSS (KiB) summed over the tree. Throws when the root is gone: its
 * CPU would read as 0 and make a difference of two samples meaningless.
 */
export function sampleTree(root: number): TreeSample {
  const pids = treePids(root);
  let ticks = 0;
  let rssKb = 0;
  for (const pid of pids) {
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]);
    else if (pid === root) throw new Error(`process ${root} is gone: its CPU cannot be sampled`);
    try {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      rssKb += m ? Number(m[1]) : 0;
    } catch {
      // Gone between the listing and the read.
    }
  }
  return { pids, cpuMs: (ticks * 1000) / CLOCK_TICKS, rssKb };
}
