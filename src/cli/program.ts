import { Command } from 'commander';
import { registerSandboxCommand } from './commands/sandbox.js';

export function buildProgram(): Command {
  const program = new Command('docstream')
    .description('Kafka connector for the Document Analysis API')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    });
  registerSandboxCommand(program);
  return program;
}
