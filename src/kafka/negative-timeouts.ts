/**
 * Silences Node's TimeoutNegativeWarning, which kafkajs 2.2.4 (unmaintained) sets off on Node ≥ 23:
 * its request queue re-checks itself after `throttledUntil - Date.now()` ms, about minus the epoch
 * when the broker never throttled (`src/network/requestQueue/index.js`). Every Node clamps such a
 * delay to 1 ms; Node 20 and 22 did so silently, 23 and later also print a warning on stderr, from
 * the first Kafka response of every process (the CLI's output included). Dropping that warning type
 * brings back Node 22's behaviour and nothing else: timers run exactly as before.
 */

const WARNING = 'TimeoutNegativeWarning';
const FILTERED = Symbol('docstream.negativeTimeoutsIgnored');

type Emitter = { emitWarning: (warning: string | Error, ...rest: any[]) => void }; // eslint-disable-line @typescript-eslint/no-explicit-any

function warningType(warning: string | Error, rest: unknown[]): string | undefined {
  if (typeof warning !== 'string') return warning.name;
  const options = rest[0];
  if (typeof options === 'string') return options;
  if (options && typeof options === 'object' && 'type' in options) return String(options.type);
  return undefined;
}

/**
 * Wraps `target.emitWarning` (the process's, where Node's timers send theirs) once, so that it drops
 * that warning type; every other warning passes unchanged.
 */
export function ignoreNegativeTimeoutWarnings(target: Emitter = process): void {
  const emit = target.emitWarning as Emitter['emitWarning'] & { [FILTERED]?: true };
  if (emit[FILTERED]) return;
  const filtered = Object.assign(
    function (this: unknown, warning: string | Error, ...rest: unknown[]): void {
      if (warningType(warning, rest) !== WARNING) emit.call(target, warning, ...rest);
    },
    { [FILTERED]: true as const },
  );
  target.emitWarning = filtered;
}
