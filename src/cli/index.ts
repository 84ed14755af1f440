#!/usr/bin/env node
import { followParent, reexecWithRuntimeDefaults, shouldReexec } from './runtime-defaults.js';

// `docstream run` needs runtime settings that only a process start can give (runtime-defaults.ts).
if (shouldReexec(process.argv, process.env, process.channel !== undefined)) {
  await reexecWithRuntimeDefaults();
} else {
  followParent();
  // Loaded only here, so that the re-starting process stays small.
  const { main } = await import('./program.js');
  await main(process.argv);
}
