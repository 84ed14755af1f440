/** `docstream feedback <id>`: store feedback on a submission's results, or show the stored one. */
import { type Command, Option } from 'commander';
import { FEEDBACK_OUTCOMES, type FeedbackRequest, type FeedbackResponse } from '../../api/schemas.js';
import { examples } from '../help.js';
import { addApiOptions, apiConfig, type ApiFlags, clientOf, printResult, UsageError } from './api-options.js';

interface FeedbackFlags extends ApiFlags {
  outcome?: FeedbackRequest['outcome'];
  comment?: string;
  label?: string[];
  json?: boolean;
}

function human(feedback: FeedbackResponse): string {
  const lines = [
    `submission  ${feedback.submission_id}`,
    `outcome     ${feedback.outcome}`,
    `comment     ${feedback.comment ?? '-'}`,
    `labels      ${feedback.labels?.join(', ') || '-'}`,
    `updated     ${feedback.updated}`,
  ];
  return `${lines.join('\n')}\n`;
}

export function registerFeedback(program: Command): void {
  const command = program
    .command('feedback')
    .description('Put feedback on a submission (with --outcome), or print the stored feedback.')
    .argument('<submission-id>')
    .addOption(
      new Option('--outcome <outcome>', 'what the document turned out to be').choices(FEEDBACK_OUTCOMES),
    )
    .option('--comment <text>', 'free text (no personal data: feedback is kept indefinitely)')
    .option('--label <label...>', 'labels to attach')
    .option('--json', 'print the feedback as JSON (for scripts)');
  addApiOptions(command).action(async (id: string, flags: FeedbackFlags) => {
    if (flags.outcome === undefined && (flags.comment !== undefined || flags.label !== undefined)) {
      throw new UsageError('--comment and --label need --outcome');
    }
    const client = clientOf(await apiConfig(flags));
    const feedback =
      flags.outcome === undefined
        ? await client.getFeedback(id)
        : await client.putFeedback(id, {
            outcome: flags.outcome,
            ...(flags.comment === undefined ? {} : { comment: flags.comment }),
            ...(flags.label === undefined ? {} : { labels: flags.label }),
          });
    printResult(flags.json, feedback, () => human(feedback));
  });
  examples(
    command,
    'docstream feedback -c prod.json sub_0123456789abcdefghijkl --outcome FRAUD --label forged-date',
    'docstream feedback -c prod.json sub_0123456789abcdefghijkl --json',
  );
}
