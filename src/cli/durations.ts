/**
 * Every duration on the command line is a number of seconds, one way in every command: the flag is
 * named for what it bounds, never for a unit (`--timeout`, `--extra-latency`), its value is
 * `<seconds>` and may be a fraction (`0.05` is 50 ms). Configuration keys keep their `…Ms` units.
 */
import { InvalidArgumentError, Option } from 'commander';

export interface SecondsRules {
  /** Whether 0 is accepted (e.g. "0 = off"); otherwise a duration is more than 0. */
  zero?: boolean;
  /** Whole seconds only, where the value ends up as whole seconds (token and URL lifetimes). */
  whole?: boolean;
}

/** The options made by `secondsOption`, for the test that walks every command. */
const durations = new WeakSet<Option>();

/** Parses a flag value given in seconds. */
export function parseSeconds(value: string, rules: SecondsRules = {}): number {
  const n = Number(value);
  const number = value.trim() !== '' && Number.isFinite(n);
  if (!number || (rules.whole === true && !Number.isInteger(n))) {
    throw new InvalidArgumentError(
      `must be a ${rules.whole === true ? 'whole ' : ''}number of seconds (e.g. ${rules.whole === true ? '30' : '30 or 0.5'}), got "${value}"`,
    );
  }
  if (n < 0 || (n === 0 && rules.zero !== true)) {
    throw new InvalidArgumentError(
      `must be ${rules.zero === true ? '0 or more' : 'more than 0'} seconds, got ${n}`,
    );
  }
  return n;
}

/** A duration flag: `secondsOption('--timeout', 'how long to wait')` takes `--timeout <seconds>`. */
export function secondsOption(flag: string, description: string, rules: SecondsRules = {}): Option {
  const option = new Option(`${flag} <seconds>`, description).argParser((v) => parseSeconds(v, rules));
  durations.add(option);
  return option;
}

/** Whether `option` was made by `secondsOption`. */
export function isDuration(option: Option): boolean {
  return durations.has(option);
}

/** Seconds as milliseconds, rounded to the microsecond (0.07 s is 70 ms, not 70.00000000000001). */
export function millisecondsOf(seconds: number): number {
  return Math.round(seconds * 1_000_000) / 1000;
}
