import { within } from './within.js';

describe('within', () => {
  it('says whether the work settled in time, rejected or not', async () => {
    expect(await within(Promise.resolve(1), 50)).toBe(true);
    expect(await within(Promise.reject(new Error('failed')), 50)).toBe(true);
    expect(await within(undefined, 0)).toBe(true);
    expect(await within(new Promise(() => undefined), 20)).toBe(false);
  });
});
