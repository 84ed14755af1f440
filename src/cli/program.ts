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

export function buildProgram(): Command {
  const program = new Command('docstream')
    .description('Kafka connector for the Document Analysis API.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    });
  registerConfigCommand(program);
  registerStackCommand(program);
  registerSandboxCommand(program);
  registerRunCommand(program);
  registerSendCommand(program);
  registerDemoCommand(program);
  registerReplayCommand(program);
  registerDlqCommand(program);
  registerOperateCommands(program);
  registerAnalyze(program);
  registerFeedback(program);
  registerDelete(program);
  registerReport(program);
  registerTenants(program);
  return program;
}
