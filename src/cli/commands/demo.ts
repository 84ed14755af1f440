import { InvalidArgumentError, Option, type Command } from 'commander';
import { runDemo } from '../../demo/demo.js';
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
    .addOption(
      new Option('--timeout <seconds>', 'give up waiting for results after this long')
        .default(120)
        .argParser((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
          return n;
        }),
    )
    .action(async (opts: { keepStack: boolean; timeout: number }) => {
      const code = await runDemo({
        keepStack: opts.keepStack,
        timeoutMs: opts.timeout * 1000,
        out: (line) => process.stdout.write(`${line}\n`),
      });
      process.exit(code);
    });
  examples(command, 'docstream demo', 'docstream demo --keep-stack --timeout 300');
}
