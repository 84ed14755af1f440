/**
 * The runtime settings `docstream run` wants, which must be in place when the process starts.
 *
 * A restore reads a partition's whole changelog at a high allocation rate. With Node's defaults two
 * things stay behind when it is over: V8's young generation, grown to its maximum (never shrunk while
 * the process idles), and glibc's main arena, grown by the fetch buffers and not trimmed back; both
 * several times the index's own size per finished document held (docs/performance.md). A small
 * semi-space and a fixed malloc trim threshold with two arenas keep that at the index's size; neither
 * can be changed once the process runs (V8 sizes its heap and glibc reads its tunables at start-up),
 * so the CLI starts `run` again, once, with them: in place where Node can (`process.execve`, POSIX),
 * the same process, pid, stdio and signals; as a second process waiting beside it (which costs
 * memory of its own) only where execve is missing (Windows, older Node). Settings already present
 * win: a variable set (to anything) or a semi-space flag given is kept. The image and the Kubernetes
 * manifests set them, so nothing is started again there.
 */
import { spawn } from 'node:child_process';
import { optimisationOn } from '../util/optimisations.js';

/**
 * glibc malloc: at most two arenas, free memory at the top of a heap returned above 128 KiB, and
 * blocks of 64 KiB and more mapped on their own rather than carved from an arena. The last is for
 * the socket reads (64 KiB buffers each): during a restore thousands of them, freed in the middle of
 * the main arena, kept it grown for good, since glibc trims an arena only from its top (its gain and
 * its CPU cost: docs/performance.md).
 */
export const RUNTIME_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_MMAP_THRESHOLD_: '65536',
};

/** V8: a young generation of 2 x 2 MB at most (restore time unchanged, see docs/performance.md). */
export const RUNTIME_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];

/** Set in the re-started process: it never starts a third. */
const REEXEC_MARK = '_DOCSTREAM_RUNTIME_REEXEC';

export interface MissingDefaults {
  env: Record<string, string>;
  flags: string[];
}

/** What of the runtime defaults this process lacks (nothing when the user set their own). */
export function missingRuntimeDefaults(env: NodeJS.ProcessEnv, execArgv: readonly string[]): MissingDefaults {
  const missing: MissingDefaults = { env: {}, flags: [] };
  for (const [name, value] of Object.entries(RUNTIME_ENV))
    if (env[name] === undefined) missing.env[name] = value;
  // V8 takes `--max-semi-space-size` and `--max_semi_space_size` alike.
  const norm = (arg: string) => arg.split('=')[0]!.replace(/_/g, '-');
  const given = new Set([...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map(norm));
  for (const flag of RUNTIME_NODE_FLAGS) if (!given.has(norm(flag))) missing.flags.push(flag);
  return missing;
}

/**
 * Whether to start again: only for `run` (the long-lived process that holds state), not when already
 * re-started, not under a supervisor that talks to it over IPC (that channel would reach the wrong
 * process), and only when something is missing.
 */
export function shouldReexec(argv: readonly string[], env: NodeJS.ProcessEnv, hasIpc: boolean): boolean {
  if (argv[2] !== 'run' || env[REEXEC_MARK] === '1' || hasIpc) return false;
  if (!optimisationOn('runtime-settings', env)) return false;
  const missing = missingRuntimeDefaults(env, process.execArgv);
  return missing.flags.length > 0 || Object.keys(missing.env).length > 0;
}

const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * In the re-started process: when the process that started it is gone without forwarding a signal
 * (SIGKILL, a crash), it goes too, as abruptly, so that nothing runs on unsupervised and a kill
 * still means what it meant. Returns whether this process is such a re-started one.
 */
export function followParent(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env[REEXEC_MARK] !== '1' || !process.channel) return false;
  process.once('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  process.channel.unref();
  return true;
}

/** The command line and environment of this CLI started again with the missing defaults. */
export function reexecCommand(
  execPath: string,
  execArgv: readonly string[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { args: string[]; env: NodeJS.ProcessEnv } {
  const missing = missingRuntimeDefaults(env, execArgv);
  return {
    args: [...execArgv, ...missing.flags, ...argv.slice(1)],
    env: { ...env, ...missing.env, [REEXEC_MARK]: '1' },
  };
}

/**
 * Runs this CLI again with the missing defaults: in place (execve) where Node can, else as a child
 * (`reexecAsChild`).
 */
export function reexecWithRuntimeDefaults(): Promise<never> {
  const { args, env } = reexecCommand(process.execPath, process.execArgv, process.argv, process.env);
  if (typeof process.execve === 'function' && process.platform !== 'win32') {
    try {
      process.execve(process.execPath, [process.execPath, ...args], env);
    } catch (err) {
      process.stderr.write(
        `docstream run: warning: could not restart with the runtime defaults in place (${(err as Error).message}); starting a child\n`,
      );
    }
  }
  return reexecAsChild(args, env);
}

/**
 * Runs this CLI again as a child with the missing defaults and waits for it: stdio shared, every
 * stop signal forwarded, its exit code (or its fatal signal) made this process's. The child is the
 * leader of its own process group, so a Ctrl-C reaches it once (forwarded), not twice.
 */
function reexecAsChild(args: string[], env: NodeJS.ProcessEnv): Promise<never> {
  const child = spawn(process.execPath, args, {
    // The IPC channel is the child's lifeline: it closes when this process dies, however it dies.
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env,
    detached: true,
  });
  const forward = (signal: NodeJS.Signals) => () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of FORWARDED) process.on(signal, forward(signal));
  return new Promise<never>(() => {
    child.once('error', (err) => {
      process.stderr.write(`docstream run: could not start the connector process: ${err.message}\n`);
      process.exit(1);
    });
    child.once('exit', (code, signal) => {
      if (signal) {
        for (const s of FORWARDED) process.removeAllListeners(s);
        process.kill(process.pid, signal);
        return;
      }
      process.exit(code ?? 1);
    });
  });
}
