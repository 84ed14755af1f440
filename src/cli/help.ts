/** What every command's help shares: examples at its end, and the exit codes in the program's. */
import type { Command } from 'commander';
import { EXIT_CODES } from './exit-codes.js';

/** Ends the command's help with one to three examples, each a line a user can run. */
export function examples(command: Command, ...lines: string[]): Command {
  if (lines.length < 1 || lines.length > 3) throw new Error('a help has one to three examples');
  return command.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}

/** Words of `text` in lines of at most `width` characters, every line after the first indented. */
function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join(`\n${indent}`);
}

/** The exit-code table of the top-level help (the README has the same, checked by a test). */
export function exitCodesHelp(): string {
  return `Exit codes (the same in every command):\n${EXIT_CODES.map(
    (e) => `  ${e.code}  ${wrap(e.meaning, 74, '     ')}`,
  ).join('\n')}\n`;
}
