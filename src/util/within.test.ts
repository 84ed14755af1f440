import { outcomeWithin, within } from './within.js';

describe('within', () => {
  it('says whether the work settled in time, rejected or not', async () => {
    expect(await within(Promise.resolve(1), 50)).toBe(true);
    expect(await within(Promise.reject(new Error('failed')), 50)).toBe(true);
    expect(await within(undefined, 0)).toBe(true);
    expect(await within(new Promise(() => undefined), 20)).toBe(false);
  });

  it('tells work that failed from work that finished, and from work still running', async () => {
    const err = new Error('the transaction could not be committed');
    expect(await outcomeWithin(Promise.resolve(1), 50)).toEqual({ state: 'done' });
    expect(await outcomeWithin(Promise.reject(err), 50)).toEqual({ state: 'failed', err });
    expect(await outcomeWithin(new Promise(() => undefined), 20)).toEqual({ state: 'late' });
  });
});
