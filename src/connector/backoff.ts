/**
 * Delay before the next poll of a result: exponential from `initialMs`, capped at `maxMs`,
 * with "equal jitter" (half fixed, half random) so polls of documents created together spread out
 * but never come back sooner than half the nominal delay.
 */
export function pollDelay(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const nominal = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(nominal / 2 + random() * (nominal / 2));
}
