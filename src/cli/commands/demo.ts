import type { Command } from 'commander';
import { runDemo } from '../../demo/demo.js';
import { addConfigOption, type ConfigFlags } from '../config-option.js';
import { secondsOption } from '../durations.js';
import { examples } from '../help.js';

export function registerDemoCommand(program: Command): void {
  const command = program
    .command('demo')
    .summary('Run the whole thing on this machine: stack, sandbox, connector and generated documents.')
    .description(
      'Run the whole thing on this machine: start the local stack (what is missing of it), the sandbox and the ' +
        'connector, send generated documents and malformed events, show the results, and stop what it started.',
    )
    .option('--keep-stack', 'leave the local stack running afterwards', false)
    .addOption(secondsOption('--timeout', 'give up waiting for results after this long').default(120));
  // The -c files (and DOCSTREAM_* variables) under what the demo sets itself: the local stack's
  // addresses, its own sandbox and client, its own topics and group; the rest (connector.*, blobs.*,
  // state.*) comes from them.
  addConfigOption(command).action(async (opts: ConfigFlags & { keepStack: boolean; timeout: number }) => {
    const code = await runDemo({
      keepStack: opts.keepStack,
      timeoutMs: opts.timeout * 1000,
      ...(opts.config && opts.config.length > 0 ? { files: opts.config } : {}),
      out: (line) => process.stdout.write(`${line}\n`),
    });
    process.exit(code);
  });
  examples(
    command,
    'docstream demo',
    'docstream demo --keep-stack --timeout 300',
    'docstream demo -c tuning.json',
  );
}
