import { CachedTokenSource } from './auth.js';
import { FakeClock } from './test-helpers.js';

function source(clock: FakeClock) {
  let issued = 0;
  const tokens = new CachedTokenSource(
    () => {
      issued += 1;
      return Promise.resolve({ access_token: `tok-${issued}`, token_type: 'Bearer', expires_in: 100 });
    },
    () => Promise.resolve({ form: {}, headers: {} }),
    clock,
  );
  return tokens;
}

describe('CachedTokenSource.validToken', () => {
  it('gives the cached token while it is valid, and nothing before, after expiry or invalidation', async () => {
    const clock = new FakeClock();
    const tokens = source(clock);
    expect(tokens.validToken()).toBeUndefined();
    expect(await tokens.getToken()).toBe('tok-1');
    expect(tokens.validToken()).toBe('tok-1');
    // Refreshed 10 % of the lifetime ahead of expiry: 90 s after the request.
    await clock.advance(89_999);
    expect(tokens.validToken()).toBe('tok-1');
    await clock.advance(1);
    expect(tokens.validToken()).toBeUndefined();
    expect(await tokens.getToken()).toBe('tok-2');
    tokens.invalidate('tok-2');
    expect(tokens.validToken()).toBeUndefined();
    expect(tokens.stats.requests).toBe(2);
  });
});
