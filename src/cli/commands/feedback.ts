/** `docstream feedback <id>`: store feedback on a submission's results, or show the stored one. */
import { type Command, Option } from 'commander';
import { FEEDBACK_OUTCOMES, type FeedbackRequest } from '../../api/schemas.js';
import { addApiOptions, type ApiFlags, clientFromFlags, run, UsageError } from './api-options.js';

interface FeedbackFlags extends ApiFlags {
  outcome?: FeedbackRequest['outcome'];
  comment?: string;
  label?: string[];
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
    .option('--label <label...>', 'labels to attach');
  addApiOptions(command).action((id: string, flags: FeedbackFlags) =>
    run(async () => {
      if (flags.outcome === undefined && (flags.comment !== undefined || flags.label !== undefined)) {
        throw new UsageError('--comment and --label need --outcome');
      }
      const client = clientFromFlags(flags);
      const feedback =
        flags.outcome === undefined
          ? await client.getFeedback(id)
          : await client.putFeedback(id, {
              outcome: flags.outcome,
              ...(flags.comment === undefined ? {} : { comment: flags.comment }),
              ...(flags.label === undefined ? {} : { labels: flags.label }),
            });
      process.stdout.write(`${JSON.stringify(feedback, null, 2)}\n`);
    }),
  );
}
