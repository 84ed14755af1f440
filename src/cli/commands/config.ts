import type { Command } from 'commander';
import { configReference, loadConfig, redactConfig } from '../../config/index.js';

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('Show or document the configuration');
  config
    .command('show')
    .description('Print the effective configuration (files + DOCSTREAM_* variables), secrets redacted')
    .action(() => {
      process.stdout.write(`${JSON.stringify(redactConfig(loadConfig()), null, 2)}\n`);
    });
  config
    .command('docs')
    .description('Print the reference of every configuration key as a markdown table')
    .action(() => {
      process.stdout.write(`${configReference()}\n`);
    });
}
