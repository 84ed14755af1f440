import type { Command } from 'commander';
import { checkConfigFile } from '../../config/check.js';
import { configReference, loadConfig, redactConfig } from '../../config/index.js';
import { redactText } from '../../observability/redact.js';

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('Show or document the configuration.');
  config
    .command('show')
    .description('Print the effective configuration (files and DOCSTREAM_* variables) with secrets redacted.')
    .action(() => {
      process.stdout.write(`${JSON.stringify(redactConfig(loadConfig()), null, 2)}\n`);
    });
  config
    .command('docs')
    .description('Print the reference of every configuration key as a markdown table.')
    .action(() => {
      process.stdout.write(`${configReference()}\n`);
    });
  config
    .command('check')
    .description(
      'Validate configuration files (JSON, or .env with DOCSTREAM_* variables) and name every wrong key.',
    )
    .argument('<files...>', 'files to check, e.g. config/production.json config/production.env')
    .action((files: string[]) => {
      let failed = false;
      for (const file of files) {
        const { errors, warnings, keys } = checkConfigFile(file);
        for (const warning of warnings) process.stderr.write(`warning: ${redactText(warning)}\n`);
        for (const error of errors) process.stderr.write(`error: ${redactText(error)}\n`);
        if (errors.length > 0) failed = true;
        else process.stdout.write(`${file}: ok (${keys} keys)\n`);
      }
      // Exit code 2, like every other invalid input to the CLI.
      if (failed) process.exitCode = 2;
    });
}
