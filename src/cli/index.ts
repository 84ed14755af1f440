#!/usr/bin/env node
import { followParent, reexecWithRuntimeDefaults, shouldReexec } from './runtime-defaults.js';

// `docstream run` needs runtime settings that only a process start can give (runtime-defaults.ts).
if (shouldReexec(process.argv, process.env, process.channel !== undefined)) {
  await reexecWithRuntimeDefaults();
} else {
  followParent();
  // Loaded only here, so that the re-starting process stays small.
  const { buildProgram } = await import('./program.js');
  const { errorText } = await import('../observability/redact.js');
  buildProgram()
    .parseAsync(process.argv)
    .catch(async (err: unknown) => {
      process.stderr.write(`docstream: ${errorText(err)}\n`);
      // A bad configuration value or argument that no command caught is still invalid input (2).
      const { exitCodeOf } = await import('./exit-codes.js');
      process.exit(exitCodeOf(err));
    });
}
