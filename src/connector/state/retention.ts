/**
 * The retention window of finished documents, and what it means for a replay: a document finished
 * before the window has left the state, so replaying its input submits it again.
 */
import { DEFAULT_RETENTION_MS } from './partition-state.js';

export { DEFAULT_RETENTION_MS };

/**
 * The warning `docstream replay` prints when its target is older than the window, or null.
 * `targetMs`: the timestamp replayed from (for an offset target, the timestamp of that record).
 */
export function replayWarning(targetMs: number, retentionMs: number, nowMs: number): string | null {
  const cutoff = nowMs - retentionMs;
  if (targetMs >= cutoff) return null;
  const days = (ms: number) => `${Math.round((ms / 86_400_000) * 10) / 10} days`;
  return (
    `the replay starts ${days(nowMs - targetMs)} back, beyond the state's retention of ${days(retentionMs)}: ` +
    `documents that finished before ${new Date(cutoff).toISOString()} are no longer in the state and will be ` +
    `submitted to the API again (set a later target, or a longer state retention before they expire)`
  );
}
