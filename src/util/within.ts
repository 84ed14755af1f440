/**
 * Waits for a promise at most `ms`: what a stop bounded by `connector.shutdownTimeoutMs` needs at each
 * step, so that no step it waits for (a slow blob's admission, a disconnect) can hold it past its end.
 * `outcomeWithin` also tells a step that failed from one that finished, so a stop can report both.
 */

/** How a bounded wait ended: the work finished, failed (with its error), or was still running. */
export type Outcome = { state: 'done' } | { state: 'failed'; err: unknown } | { state: 'late' };

/** How `work` ended within `ms`; when the time runs out first, `work` goes on and its end is ignored. */
export async function outcomeWithin(work: Promise<unknown> | undefined, ms: number): Promise<Outcome> {
  if (!work) return { state: 'done' };
  let timer: NodeJS.Timeout | undefined;
  const settled = work.then(
    (): Outcome => ({ state: 'done' }),
    (err: unknown): Outcome => ({ state: 'failed', err }),
  );
  const late = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'late' }), Math.max(0, ms));
  });
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when `work` settled within `ms` (finished or failed), false when the time ran out first. */
export async function within(work: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  return (await outcomeWithin(work, ms)).state !== 'late';
}
