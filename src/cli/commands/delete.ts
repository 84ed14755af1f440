/** `docstream delete <id>`: delete a submission permanently. */
import type { Command } from 'commander';
import { ConflictError } from '../../client/errors.js';
import { examples } from '../help.js';
import { addApiOptions, apiConfig, type ApiFlags, clientOf, printResult } from './api-options.js';

export function registerDelete(program: Command): void {
  const command = program
    .command('delete')
    .description('Delete a submission permanently.')
    .argument('<submission-id>')
    .option('--json', 'print the result as JSON (for scripts)');
  addApiOptions(command).action(async (id: string, flags: ApiFlags & { json?: boolean }) => {
    const client = clientOf(await apiConfig(flags));
    try {
      await client.deleteSubmission(id);
    } catch (error) {
      if (error instanceof ConflictError) {
        throw new Error(`submission ${id} is still being processed; delete it again later`, {
          cause: error,
        });
      }
      throw error;
    }
    printResult(flags.json, { submission_id: id, deleted: true }, () => `deleted ${id}\n`);
  });
  examples(
    command,
    'docstream delete -c prod.json sub_0123456789abcdefghijkl',
    'DOCSTREAM_API_CLIENT_SECRET_FILE=/run/secrets/api docstream delete -c prod.json --json sub_0123456789abcdefghijkl',
  );
}
