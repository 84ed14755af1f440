/**
 * A crash point for the resilience suite, never set in production: with
 * `DOCSTREAM_TEST_CRASH_AFTER_PUBLISH=<p>` (0 to 1; a reserved DOCSTREAM_TEST_ variable, which the
 * configuration loader ignores) the connector SIGKILLs itself, with probability p, right after a
 * result was handed to Kafka and before the state record that says it was published: the window in
 * which at-least-once publishes the result again after the restart and exactly-once must not. While
 * the variable is set, SIGUSR2 arms one such crash at the next publication (what
 * `npm run resilience` uses, so it decides when). Unset, nothing is installed and the path costs
 * nothing (`wiring.ts` keeps its plain hook).
 */
import fs from 'node:fs';

export const CRASH_AFTER_PUBLISH_ENV = 'DOCSTREAM_TEST_CRASH_AFTER_PUBLISH';

export interface CrashPoint {
  /** Called after a result was handed to Kafka, before its state record: may not return. */
  afterPublish(): void;
}

interface CrashDeps {
  random?: () => number;
  /** Ends the process at once (default: SIGKILL to itself, after one line on stderr). */
  kill?: () => void;
  /** Installs the arming signal's handler (default: process.on('SIGUSR2')). */
  onArm?: (arm: () => void) => void;
}

/** The crash point the environment asks for, or null (the variable unset or empty). */
export function crashPointFromEnv(
  env: Record<string, string | undefined>,
  deps: CrashDeps = {},
): CrashPoint | null {
  const raw = env[CRASH_AFTER_PUBLISH_ENV];
  if (raw === undefined || raw.trim() === '') return null;
  const p = Number(raw);
  if (!Number.isFinite(p) || p < 0 || p > 1)
    throw new Error(`${CRASH_AFTER_PUBLISH_ENV} must be a probability from 0 to 1, not ${raw}`);
  const random = deps.random ?? Math.random;
  const kill =
    deps.kill ??
    (() => {
      // Synchronous, so the line is out before the signal.
      fs.writeSync(
        2,
        `${CRASH_AFTER_PUBLISH_ENV}: SIGKILL after publishing a result, before its state record\n`,
      );
      process.kill(process.pid, 'SIGKILL');
    });
  let armed = false;
  (deps.onArm ?? ((arm) => process.on('SIGUSR2', arm)))(() => {
    armed = true;
  });
  return {
    afterPublish() {
      if (armed || (p > 0 && random() < p)) {
        armed = false;
        kill();
      }
    },
  };
}
