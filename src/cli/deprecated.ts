/**
 * Flags kept under an old name, so that scripts written against it keep working: hidden from the
 * help, and when given, one warning that names the flag to use, and the value moved to that flag
 * (the new flag wins when both are given). CHANGELOG.md lists each under "Deprecated".
 */
import { type Command, Option } from 'commander';
import { warnOnce } from './messages.js';

/** The new flag of each deprecated option (its long name, e.g. `--cell`). */
const replacements = new WeakMap<Option, string>();

/**
 * `flags` (e.g. `--api-cell <cell>`) as a deprecated spelling of `replacement` (e.g. `--cell`);
 * `parse` turns its value into the new flag's (e.g. milliseconds into seconds).
 */
export function deprecatedOption(
  flags: string,
  replacement: string,
  parse?: (value: string) => unknown,
): Option {
  const option = new Option(flags, `deprecated: use ${replacement}`).hideHelp();
  if (parse) option.argParser(parse);
  replacements.set(option, replacement);
  return option;
}

/** The flag that replaces `option`, when it is a deprecated spelling. */
export function replacementOf(option: Option): string | undefined {
  return replacements.get(option);
}

/** Before an action: the deprecated flags given warn once and hand their values to the new flags. */
export function applyDeprecated(command: Command): void {
  for (const option of command.options) {
    const replacement = replacements.get(option);
    if (replacement === undefined) continue;
    const key = option.attributeName();
    if (command.getOptionValueSource(key) !== 'cli') continue;
    const target = command.options.find((o) => o.long === replacement);
    if (target === undefined)
      throw new Error(`${option.long} is deprecated for ${replacement}, which ${command.name()} lacks`);
    warnOnce(command, `${option.long} is deprecated; use ${replacement}`);
    if (command.getOptionValueSource(target.attributeName()) !== 'cli') {
      command.setOptionValueWithSource(target.attributeName(), command.getOptionValue(key), 'cli');
    }
  }
}
