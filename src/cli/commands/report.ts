/** `docstream report <id>`: print the download address of the fraud report (a preview feature). */
import type { Command } from 'commander';
import { examples } from '../help.js';
import { addApiOptions, apiConfig, type ApiFlags, clientOf, printResult } from './api-options.js';

interface ReportFlags extends ApiFlags {
  includeDecision?: boolean;
  json?: boolean;
}

export function registerReport(program: Command): void {
  const command = program
    .command('report')
    .description('Print the download URL of the fraud report of a submission.')
    .argument('<submission-id>')
    .option('--include-decision', 'add the Adaptive Decision result to the report')
    .option('--json', 'print the response as JSON (for scripts)');
  addApiOptions(command).action(async (id: string, flags: ReportFlags) => {
    const report = await clientOf(await apiConfig(flags)).getReport(
      id,
      flags.includeDecision ? { includeDecision: true } : {},
    );
    printResult(
      flags.json,
      report,
      () => `${report.report_url}\n${report.expires_at ? `expires ${report.expires_at}\n` : ''}`,
    );
  });
  examples(
    command,
    'docstream report -c prod.json sub_0123456789abcdefghijkl',
    'docstream report -c prod.json --include-decision --json sub_0123456789abcdefghijkl',
  );
}
