/** `docstream delete <id>`: delete a submission permanently. */
import type { Command } from 'commander';
import { ConflictError } from '../../client/errors.js';
import { addApiOptions, type ApiFlags, clientFromFlags, run } from './api-options.js';

export function registerDelete(program: Command): void {
  const command = program
    .command('delete')
    .description('Delete a submission permanently.')
    .argument('<submission-id>');
  addApiOptions(command).action((id: string, flags: ApiFlags) =>
    run(async () => {
      try {
        await clientFromFlags(flags).deleteSubmission(id);
      } catch (error) {
        if (error instanceof ConflictError) {
          throw new Error(`submission ${id} is still being processed; delete it again later`, {
            cause: error,
          });
        }
        throw error;
      }
      process.stdout.write(`deleted ${id}\n`);
    }),
  );
}
