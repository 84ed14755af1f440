import { inspectIdProblem } from './inspect.js';

describe('inspectIdProblem', () => {
  it('accepts event ids and submission ids', () => {
    expect(inspectIdProblem('evt-1')).toBeNull();
    expect(inspectIdProblem('sub_0123456789abcdefghijkl')).toBeNull();
    expect(inspectIdProblem('e'.repeat(256))).toBeNull();
  });

  it('refuses a 100 KB id with control characters, echoing it cut to 40 characters and escaped', () => {
    const id = `\u001b[2J\u0007${'x'.repeat(100 * 1024)}`;
    const problem = inspectIdProblem(id)!;
    expect(problem).toContain('102405 characters (at most 256)');
    expect(problem.length).toBeLessThan(200);
    // eslint-disable-next-line no-control-regex -- the point: no raw control character is echoed
    expect(problem).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(problem).toContain('"\\u001b[2J\\u0007xxx');
  });

  it('refuses control characters and lone surrogates in a short id, saying where', () => {
    expect(inspectIdProblem('a\u0007b')).toMatch(/^"a\\u0007b" is not an event id .*U\+0007 at position 1/);
    expect(inspectIdProblem('a\ud800')).toMatch(/lone surrogate/);
    expect(inspectIdProblem('')).toBe('the id is empty');
  });
});
