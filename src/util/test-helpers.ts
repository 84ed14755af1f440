import { jest } from '@jest/globals';

/**
 * For tests on jest's fake clock: moves it on 1 ms at a time until `work` settles (at most `maxMs`
 * of fake time, then fails), and returns its outcome.
 */
export async function settledOnFakeTime<T>(work: Promise<T>, maxMs: number): Promise<T> {
  let done = false;
  work.then(
    () => (done = true),
    () => (done = true),
  );
  for (let t = 0; t < maxMs && !done; t++) await jest.advanceTimersByTimeAsync(1);
  if (!done) throw new Error(`not settled within ${maxMs} ms of fake time`);
  return work;
}
