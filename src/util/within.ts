/**
 * Waits for a promise at most `ms`: what a stop bounded by `connector.shutdownTimeoutMs` needs at each
 * step, so that no step it waits for (a slow blob's admission, a disconnect) can hold it past its end.
 */

/** True when `work` settled within `ms`, false when the time ran out first (`work` goes on). */
export async function within(work: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  if (!work) return true;
  let timer: NodeJS.Timeout | undefined;
  const done = work.then(
    () => true,
    () => true,
  );
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
}
