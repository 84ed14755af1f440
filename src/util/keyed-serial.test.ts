import { KeyedSerial } from './keyed-serial.js';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('KeyedSerial', () => {
  it('runs the tasks of one key in order, one at a time, and other keys at once', async () => {
    const serial = new KeyedSerial();
    const log: string[] = [];
    const first = deferred();
    const a1 = serial.run('a', async () => {
      log.push('a1 start');
      await first.promise;
      log.push('a1 end');
      return 1;
    });
    const a2 = serial.run('a', async () => {
      log.push('a2');
      return 2;
    });
    const b = serial.run('b', async () => {
      log.push('b');
      return 3;
    });
    await b;
    expect(log).toEqual(['a1 start', 'b']);
    first.resolve();
    expect(await a1).toBe(1);
    expect(await a2).toBe(2);
    expect(log).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
  });

  it('runs the next task of a key after an earlier one failed, and forgets idle keys', async () => {
    const serial = new KeyedSerial();
    const failing = serial.run('a', async () => {
      throw new Error('kafka down');
    });
    const next = serial.run('a', async () => 'ran');
    await expect(failing).rejects.toThrow('kafka down');
    expect(await next).toBe('ran');
    await new Promise((r) => setImmediate(r));
    expect(serial.size).toBe(0);
  });
});
