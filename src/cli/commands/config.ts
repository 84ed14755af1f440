import type { Command } from 'commander';
import {
  checkConfigFile,
  deploymentChecks,
  environmentValues,
  readinessProblems,
  setValues,
} from '../../config/check.js';
import { configReference, redactConfig, type Config } from '../../config/index.js';
import { egressOf } from '../../config/egress.js';
import { effectiveConfig } from '../../config/effective.js';
import { DocumentAnalysisClient } from '../../client/client.js';
import { TenantClient } from '../../client/tenant-client.js';
import { redactText } from '../../observability/redact.js';
import { connectCheck, findingLines, summaryOf, type ApiCredentials } from '../../preflight/index.js';
import { addConfigOption, configOf, type ConfigFlags } from '../config-option.js';
import { secondsOption } from '../durations.js';
import { EXIT_FAILURE, EXIT_INVALID_INPUT } from '../exit-codes.js';
import { examples } from '../help.js';
import { printError, printWarning } from '../messages.js';
import { apiAddress } from './api-options.js';

/** The API clients a check tries, built as `run` builds its own (address, proxy, CA), tried once. */
function apiCredentials(config: Config, timeoutMs: number): ApiCredentials {
  const common = () => ({
    ...apiAddress(config.api),
    timeoutMs: Math.min(config.api.timeoutMs, timeoutMs),
    retry: { maxTotalMs: timeoutMs },
    egress: egressOf(config.api),
  });
  const t = config.tenant;
  return {
    submissions: () => {
      const client = new DocumentAnalysisClient({
        ...common(),
        clientId: config.api.clientId,
        clientSecret: config.api.clientSecret,
      });
      return { client, baseUrl: client.baseUrl, tokenUrl: client.tokenUrl };
    },
    ...(t.clientId !== ''
      ? {
          tenants: () =>
            new TenantClient({ ...common(), clientId: t.clientId, privateKey: t.privateKey, kid: t.kid }),
        }
      : {}),
  };
}

/** `config check --connect`: the checks of every part, printed as lines or JSON; exit 1 on a missing one. */
async function checkConnected(flags: ConfigFlags & { json?: boolean; timeout: number }): Promise<void> {
  // A configuration that does not load is invalid input (2), reported by main.
  const config = configOf(flags);
  const timeoutMs = flags.timeout * 1000;
  const { findings, brokers } = await connectCheck(config, apiCredentials(config, timeoutMs), { timeoutMs });
  const all = findings.all.map((f) => ({
    ...f,
    subject: redactText(f.subject),
    detail: redactText(f.detail),
  }));
  const summary = summaryOf(all);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ ok: !findings.failed, summary, brokers: brokers ?? null, findings: all }, null, 2)}\n`,
    );
  } else {
    for (const line of findingLines(all)) process.stdout.write(`${line}\n`);
    process.stdout.write(
      `${summary.ok} ok, ${summary.missing} missing, ${summary.warning} warning${summary.warning === 1 ? '' : 's'}\n`,
    );
  }
  if (findings.failed) process.exitCode = EXIT_FAILURE;
}

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
      'Print the effective configuration (-c files, DOCSTREAM_* variables, defaults) as JSON, secrets redacted: values as docstream uses them (kafka.ssl true when a CA or client certificate turns TLS on, the API address of api.cell, the transactional id prefix).',
    );
  addConfigOption(show).action((flags: ConfigFlags) => {
    process.stdout.write(`${JSON.stringify(redactConfig(effectiveConfig(configOf(flags))), null, 2)}\n`);
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
    .option('--json', 'print the findings of each file as JSON (for scripts)')
    .option(
      '--connect',
      'also reach every part with these settings (brokers, topics, ACLs, registry, API token, blob sources) and say what works and what is missing; exit 1 when anything is',
    )
    .addOption(
      secondsOption('--timeout', 'with --connect: how long each check waits for an answer').default(10),
    );
  addConfigOption(check).action(
    async (files: string[], flags: ConfigFlags & { json?: boolean; connect?: boolean; timeout: number }) => {
      const all = [...(flags.config ?? []), ...files];
      if (flags.connect) {
        // The files are checked offline first: a configuration with a wrong key is not connected with.
        const wrong = all.flatMap((file) => checkConfigFile(file).errors.map(redactText));
        for (const error of wrong) printError(check, error);
        if (wrong.length > 0) {
          process.exitCode = EXIT_INVALID_INPUT;
          return;
        }
        await checkConnected({ ...flags, config: all });
        return;
      }
      const results: Array<{
        file: string;
        ok: boolean;
        keys: number;
        errors: string[];
        warnings: string[];
      }> = [];
      if (all.length === 0) {
        // Nothing named: what a command would load here (the default files and the environment).
        // Files it names are checked here, on the machine it runs on.
        const errors: string[] = [];
        const warnings: string[] = [];
        try {
          const effective = configOf({});
          const deployment = deploymentChecks(setValues(effective));
          errors.push(...[...readinessProblems(effective), ...deployment.errors].map(redactText));
          warnings.push(...deployment.warnings.map(redactText));
        } catch (err) {
          errors.push(redactText((err as Error).message));
        }
        results.push({
          file: '(effective configuration)',
          ok: errors.length === 0,
          keys: 0,
          errors,
          warnings,
        });
      }
      // What the files set together, with this environment's DOCSTREAM_* variables over them.
      const together = new Map<string, unknown>();
      for (const file of all) {
        const { errors, warnings, keys, values } = checkConfigFile(file);
        for (const [key, value] of values ?? []) together.set(key, value);
        results.push({
          file,
          ok: errors.length === 0,
          keys,
          errors: errors.map(redactText),
          warnings: warnings.map(redactText),
        });
      }
      if (all.length > 0 && results.every((r) => r.ok)) {
        for (const [key, value] of environmentValues(process.env)) together.set(key, value);
        const { errors, warnings } = deploymentChecks(together, { secretsElsewhere: true });
        if (errors.length + warnings.length > 0) {
          results.push({
            file: '(the files together)',
            ok: errors.length === 0,
            keys: 0,
            errors: errors.map(redactText),
            warnings: warnings.map(redactText),
          });
        }
      }
      for (const r of results) {
        for (const warning of r.warnings) printWarning(check, warning);
        for (const error of r.errors) printError(check, error);
        if (!flags.json && r.ok) {
          process.stdout.write(
            r.file.startsWith('(') ? `${r.file}: ok\n` : `${r.file}: ok (${r.keys} keys)\n`,
          );
        }
      }
      if (flags.json) process.stdout.write(`${JSON.stringify({ files: results }, null, 2)}\n`);
      // Exit code 2, like every other invalid input to the CLI.
      if (results.some((r) => !r.ok)) process.exitCode = EXIT_INVALID_INPUT;
    },
  );
  examples(
    check,
    'docstream config check -c config/production.json -c config/production.env',
    'docstream config check --json config/sandbox.json',
    'docstream config check --connect -c config/production.json -c config/production.env',
  );
}
