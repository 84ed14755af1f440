/**
 * What the stack keeps in its run directory, seen from outside the services: how many partition
 * directories Kafka holds (one per partition of every topic ever made and not deleted; too many and
 * the broker's 512 MB heap runs out), and the removal of a service's directory for `down --wipe`,
 * refused while a process still names that directory on its command line.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { servicePaths } from './paths.js';

/**
 * Above this many partition directories `status` and `up` warn. A day of test runs that kept their
 * topics made 12,070 and the broker died of OutOfMemoryError; a stack in ordinary use holds a few
 * hundred (its internal topics alone take 100).
 */
export const MANY_PARTITION_DIRS = 2000;

/** Kafka's log directory in a run dir. */
export function kafkaDataDir(runDir: string): string {
  return servicePaths(runDir, 'kafka').dataDir;
}

/** The partition directories in Kafka's log directory (0 when it does not exist yet). */
export function countPartitionDirs(runDir: string): number {
  const dir = kafkaDataDir(runDir);
  if (!existsSync(dir)) return 0;
  // Every directory there is a partition's (`<topic>-<n>`, or one being deleted); the rest are files.
  return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).length;
}

/** A warning when Kafka holds more partition directories than it handles well; undefined otherwise. */
export function partitionDirWarning(runDir: string, limit = MANY_PARTITION_DIRS): string | undefined {
  const count = countPartitionDirs(runDir);
  if (count <= limit) return undefined;
  return (
    `kafka: warning: ${count.toLocaleString('en-US')} partition directories in ${kafkaDataDir(runDir)} ` +
    `(more than ${limit.toLocaleString('en-US')}): the broker slows down and may run out of memory. ` +
    'Delete topics you no longer need, or start over with `docstream stack down --wipe` and `docstream stack up`.'
  );
}

/** Bytes under a directory (files only; 0 when it does not exist). */
export function directorySize(dir: string): number {
  if (!existsSync(dir)) return 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    try {
      bytes += statSync(join(entry.parentPath, entry.name)).size;
    } catch {
      // Removed while we looked (a log segment Kafka deleted): it no longer counts.
    }
  }
  return bytes;
}

/**
 * Pids of processes (other than this one) whose command line names a path inside `dir`: a service
 * still running on that directory, which its removal would break. Linux only (/proc); elsewhere none.
 */
export function processesUsing(dir: string, proc = '/proc'): number[] {
  if (!existsSync(proc)) return [];
  const inside = `${dir}/`;
  const pids: number[] = [];
  for (const name of readdirSync(proc)) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let argv: string;
    try {
      argv = readFileSync(join(proc, name, 'cmdline'), 'utf8');
    } catch {
      continue; // gone, or not ours to read
    }
    if (argv.split('\0').some((arg) => arg === dir || arg.includes(inside))) pids.push(Number(name));
  }
  return pids;
}

export interface Removed {
  dir: string;
  /** False when there was nothing to remove. */
  existed: boolean;
  bytes: number;
  /** Kafka's only: the partition directories it held. */
  partitionDirs?: number;
}

/** Removes a service's directory in the run dir (data, logs, generated configs and keys). */
export function removeServiceDir(runDir: string, service: string): Removed {
  const dir = servicePaths(runDir, service).dir;
  if (!existsSync(dir)) return { dir, existed: false, bytes: 0 };
  const removed: Removed = { dir, existed: true, bytes: directorySize(dir) };
  if (service === 'kafka') removed.partitionDirs = countPartitionDirs(runDir);
  rmSync(dir, { recursive: true, force: true });
  return removed;
}

/** "1,580 partition directories, 312.4 MB" */
export function describeRemoved(r: Removed): string {
  const size = `${(r.bytes / 1024 / 1024).toFixed(1)} MB`;
  return r.partitionDirs === undefined
    ? size
    : `${r.partitionDirs.toLocaleString('en-US')} partition directories, ${size}`;
}
