import { fullGc } from './full-gc.js';

describe('fullGc', () => {
  it('collects an object nothing refers to any more, without --expose-gc', async () => {
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    let target: object | null = { payload: new Array(1000).fill('x') };
    const ref = new WeakRef(target);
    target = null;
    // A WeakRef keeps its target alive until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await fullGc()).toBe(true);
    expect(ref.deref()).toBeUndefined();
  });
});
