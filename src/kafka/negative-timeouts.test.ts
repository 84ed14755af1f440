import { ignoreNegativeTimeoutWarnings } from './negative-timeouts.js';

describe('ignoreNegativeTimeoutWarnings', () => {
  it("drops Node's TimeoutNegativeWarning, as Node's timers emit it, and passes every other warning", () => {
    const seen: unknown[][] = [];
    const target = { emitWarning: (...args: unknown[]) => void seen.push(args) };
    ignoreNegativeTimeoutWarnings(target);
    ignoreNegativeTimeoutWarnings(target); // once: a second call does not wrap again
    // What node:internal/timers sends for kafkajs's delay.
    target.emitWarning(
      '-1795703064824 is a negative number.\nTimeout duration was set to 1.',
      'TimeoutNegativeWarning',
    );
    target.emitWarning('negative', { type: 'TimeoutNegativeWarning' });
    const error = Object.assign(new Error('negative'), { name: 'TimeoutNegativeWarning' });
    target.emitWarning(error);
    target.emitWarning('kept', 'DeprecationWarning', 'DEP0001');
    target.emitWarning('kept too', { type: 'OtherWarning' });
    target.emitWarning('untyped');
    expect(seen).toEqual([
      ['kept', 'DeprecationWarning', 'DEP0001'],
      ['kept too', { type: 'OtherWarning' }],
      ['untyped'],
    ]);
  });
});
