/**
 * The help texts of every command read as sentences: commander wraps each line of a text to the
 * terminal on its own, so a line break written into a description ends up mid-sentence (as it did,
 * at 80 columns, in `run`, `replay`, `inspect`, `status`, `demo`, `dlq redrive`). A description or
 * summary is a sentence that ends with a full stop (some were noun phrases, some stopped without
 * one), and no option's help trails off in an ellipsis (`stack`'s ports said "(env ..._PORT, ...)").
 */
import type { Command } from 'commander';
import { buildProgram } from './program.js';

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

const commands = allCommands(buildProgram()).filter((c) => c.name() !== 'help');

describe('help texts', () => {
  it.each(commands.map((c) => [c.name(), c] as const))(
    '%s: no line break inside its texts, each a sentence from a capital letter to a full stop',
    (_name, command) => {
      for (const text of [command.description(), command.summary()].filter(Boolean)) {
        expect(text).not.toContain('\n');
        expect(text).toMatch(/^[A-Z].*\.$/);
      }
      for (const option of command.options) {
        expect(option.description).not.toContain('\n');
        expect(option.description).not.toMatch(/\.\.\.\)?$|, \.\.\.\)/);
      }
    },
  );

  it('gives a short summary to every command whose description is longer than a line', () => {
    for (const command of commands) {
      const listed = command.summary() || command.description();
      expect({ command: command.name(), length: listed.length < 100 }).toEqual({
        command: command.name(),
        length: true,
      });
    }
  });
});
