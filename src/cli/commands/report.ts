/** `docstream report <id>`: print the download address of the fraud report (a preview feature). */
import type { Command } from 'commander';
import { addApiOptions, type ApiFlags, clientFromFlags, run } from './api-options.js';

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
    .option('--json', 'print the raw response');
  addApiOptions(command).action((id: string, flags: ReportFlags) =>
    run(async () => {
      const report = await clientFromFlags(flags).getReport(
        id,
        flags.includeDecision ? { includeDecision: true } : {},
      );
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(report, null, 2)}\n`
          : `${report.report_url}\n${report.expires_at ? `expires ${report.expires_at}\n` : ''}`,
      );
    }),
  );
}
