import { Command } from 'commander';
import { registerAnalyze } from './commands/analyze.js';
import { registerConfigCommand } from './commands/config.js';
import { registerDelete } from './commands/delete.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerDlqCommand } from './commands/dlq.js';
import { registerFeedback } from './commands/feedback.js';
import { registerOperateCommands } from './commands/operate.js';
import { registerReplayCommand } from './commands/replay.js';
import { registerReport } from './commands/report.js';
import { registerRunCommand } from './commands/run.js';
import { registerSandboxCommand } from './commands/sandbox.js';
import { registerSendCommand } from './commands/send.js';
import { registerStackCommand } from './commands/stack.js';
import { registerTenants } from './commands/tenants.js';
import { registerTopologyCommand } from './commands/topology.js';
import { applyDeprecated } from './deprecated.js';
import { EXIT_INVALID_INPUT, exitCodeOf } from './exit-codes.js';
import { examples, exitCodesHelp } from './help.js';
import { printError, usageErrorLine } from './messages.js';
import { DOCSTREAM_VERSION } from '../version.js';

/** The top-level help lists the commands by what the user is doing, in this order. */
const GROUPS: ReadonlyArray<[heading: string, commands: string[]]> = [
  ['Run it:', ['run', 'webhooks']],
  ['Operate it:', ['status', 'inspect', 'dlq', 'replay', 'config', 'topology']],
  ['Try it:', ['demo', 'sandbox', 'send', 'analyze']],
  ['Call the API, one request at a time:', ['feedback', 'delete', 'report', 'tenants']],
  ['The local stack:', ['stack']],
];

export function buildProgram(): Command {
  const program = new Command('docstream')
    .description('Kafka connector for the Document Analysis API.')
    .version(DOCSTREAM_VERSION)
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : EXIT_INVALID_INPUT);
    });
  program.hook('preAction', (_program, action) => applyDeprecated(action));
  registerRunCommand(program);
  registerOperateCommands(program);
  registerDlqCommand(program);
  registerReplayCommand(program);
  registerConfigCommand(program);
  registerTopologyCommand(program);
  registerDemoCommand(program);
  registerSandboxCommand(program);
  registerSendCommand(program);
  registerAnalyze(program);
  registerFeedback(program);
  registerDelete(program);
  registerReport(program);
  registerTenants(program);
  registerStackCommand(program);
  for (const [heading, names] of GROUPS) {
    for (const name of names) {
      const command = program.commands.find((c) => c.name() === name);
      if (!command) throw new Error(`help group ${heading} names an unknown command ${name}`);
      command.helpGroup(heading);
    }
  }
  examples(
    program,
    'docstream demo',
    'docstream run -c config/production.json -c config/production.env',
    'docstream analyze -c config/production.json --client-secret-stdin invoice.pdf < secret.txt',
  );
  program.addHelpText('after', exitCodesHelp());
  // Each command reports commander's usage errors in its own name, in one line.
  for (const command of [program, ...allCommands(program)]) {
    command.configureOutput({
      outputError: (message, write) => write(`${usageErrorLine(command, message)}\n`),
    });
  }
  return program;
}

/** Every command under `command`, groups and their subcommands alike. */
export function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/**
 * Runs `program` on `argv`. An error that ends a command, thrown while its flags are read or by its
 * action, is reported here, once, in that command's name; its exit code is returned (undefined when
 * no error ended the command).
 */
export async function runProgram(program: Command, argv: string[]): Promise<number | undefined> {
  let active: Command = program;
  for (const command of [program, ...allCommands(program)]) {
    if (command.commands.length > 0) command.hook('preSubcommand', (_parent, sub) => void (active = sub));
  }
  try {
    await program.parseAsync(argv);
    return undefined;
  } catch (error) {
    printError(active, error);
    // A bad configuration value or argument that no command caught is still invalid input (2).
    return exitCodeOf(error);
  }
}

/** The CLI: the program on `argv`, exiting with the code of an error that ended the command. */
export async function main(argv: string[]): Promise<void> {
  const code = await runProgram(buildProgram(), argv);
  if (code !== undefined) process.exit(code);
}
