/**
 * One full, compacting garbage collection asked of V8 from inside the process, without `--expose-gc`:
 * the inspector protocol's `HeapProfiler.collectGarbage` over an in-process session (`node:inspector`,
 * no port opened). V8 then collects all it can, compacts the old generation and gives its empty pages
 * back, as it does under memory pressure.
 *
 * Why a process would ask: garbage that reached the old generation stays resident until the next
 * major collection, and an idle process may not have one for a long time. A restore of the state
 * topic is such a case (docs/performance.md). A Node built without the inspector gets
 * `false` and nothing happens.
 */
import type { Session } from 'node:inspector';

/** Collects; true once done, false when this Node cannot be asked. Never throws. */
export async function fullGc(): Promise<boolean> {
  let session: Session;
  try {
    const inspector = await import('node:inspector');
    session = new inspector.Session();
    session.connect();
  } catch {
    return false;
  }
  try {
    await new Promise<void>((resolve, reject) =>
      session.post('HeapProfiler.collectGarbage', (err) => (err ? reject(err) : resolve())),
    );
    return true;
  } catch {
    return false;
  } finally {
    session.disconnect();
  }
}
