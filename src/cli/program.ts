import { Command } from 'commander';
import { registerConfigCommand } from './commands/config.js';
import { registerSandboxCommand } from './commands/sandbox.js';
import { registerStackCommand } from './commands/stack.js';

export function buildProgram(): Command {
  const program = new Command('docstream')
    .description('Kafka connector for the Document Analysis API')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    });
  registerConfigCommand(program);
  registerStackCommand(program);
  registerSandboxCommand(program);
  return program;
}
