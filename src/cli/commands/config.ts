import type { Command } from 'commander';
import { checkConfigFile, readinessProblems } from '../../config/check.js';
import { configReference, redactConfig } from '../../config/index.js';
import { redactText } from '../../observability/redact.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { EXIT_INVALID_INPUT } from '../exit-codes.js';
import { examples } from '../help.js';

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('Show, check or document the configuration.');
  examples(
    config,
    'docstream config show -c prod.json -c prod.env',
    'docstream config check -c prod.json -c prod.env',
    'docstream config docs',
  );

  const show = config
    .command('show')
    .summary('Print the effective configuration as JSON, secrets redacted.')
    .description(
      'Print the effective configuration (-c files, DOCSTREAM_* variables, defaults) as JSON, secrets redacted.',
    );
  addConfigOption(show).action((flags: ConfigFlags) => {
    process.stdout.write(`${JSON.stringify(redactConfig(configOf(flags)), null, 2)}\n`);
  });
  examples(
    show,
    'docstream config show -c prod.json',
    'DOCSTREAM_KAFKA_BROKERS=kafka:9092 docstream config show',
  );

  const docs = config
    .command('docs')
    .description('Print the reference of every configuration key as a markdown table.');
  docs.action(() => {
    process.stdout.write(`${configReference()}\n`);
  });
  examples(docs, 'docstream config docs > configuration.md');

  const check = config
    .command('check')
    .summary('Validate configuration files and name every wrong key.')
    .description(
      'Validate configuration files (JSON, or .env with DOCSTREAM_* variables) and name every wrong key; with no file, the effective configuration.',
    )
    .argument('[files...]', 'more files to check, as with -c')
    .option('--json', 'print the findings of each file as JSON (for scripts)');
  addConfigOption(check).action((files: string[], flags: ConfigFlags & { json?: boolean }) => {
    const all = [...(flags.config ?? []), ...files];
    const results: Array<{ file: string; ok: boolean; keys: number; errors: string[]; warnings: string[] }> =
      [];
    if (all.length === 0) {
      // Nothing named: what a command would load here (the default files and the environment).
      // Files it names are checked here, on the machine it runs on.
      const errors: string[] = [];
      try {
        errors.push(...readinessProblems(configOf({})).map(redactText));
      } catch (err) {
        errors.push(redactText((err as Error).message));
      }
      results.push({
        file: '(effective configuration)',
        ok: errors.length === 0,
        keys: 0,
        errors,
        warnings: [],
      });
    }
    for (const file of all) {
      const { errors, warnings, keys } = checkConfigFile(file);
      results.push({
        file,
        ok: errors.length === 0,
        keys,
        errors: errors.map(redactText),
        warnings: warnings.map(redactText),
      });
    }
    for (const r of results) {
      for (const warning of r.warnings) process.stderr.write(`warning: ${warning}\n`);
      for (const error of r.errors) process.stderr.write(`error: ${error}\n`);
      if (!flags.json && r.ok) {
        process.stdout.write(all.length === 0 ? `${r.file}: ok\n` : `${r.file}: ok (${r.keys} keys)\n`);
      }
    }
    if (flags.json) process.stdout.write(`${JSON.stringify({ files: results }, null, 2)}\n`);
    // Exit code 2, like every other invalid input to the CLI.
    if (results.some((r) => !r.ok)) process.exitCode = EXIT_INVALID_INPUT;
  });
  examples(
    check,
    'docstream config check -c config/production.json -c config/production.env',
    'docstream config check --json config/sandbox.json',
  );
}
