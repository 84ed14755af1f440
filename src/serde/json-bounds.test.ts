import { jsonDepthProblem, MAX_INPUT_DEPTH, sizeProblem, valueDepthProblem } from './json-bounds.js';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

/** A value nested `depth` levels deep, built without recursion. */
function deepValue(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
}

describe('jsonDepthProblem', () => {
  it('accepts nesting up to the limit and refuses one level more, naming where', () => {
    expect(jsonDepthProblem(nested(MAX_INPUT_DEPTH))).toBeNull();
    expect(jsonDepthProblem(nested(MAX_INPUT_DEPTH + 1))).toEqual({
      code: 'value_too_deep',
      message: `the value: arrays and objects nested deeper than ${MAX_INPUT_DEPTH} levels (at character ${MAX_INPUT_DEPTH})`,
    });
  });

  it('refuses 5,000 and 100,000 levels of arrays or objects without overflowing the stack', () => {
    expect(jsonDepthProblem(nested(5000))?.code).toBe('value_too_deep');
    expect(jsonDepthProblem('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000))?.code).toBe(
      'value_too_deep',
    );
  });

  it('counts only brackets outside strings, escaped quotes included', () => {
    const inString = JSON.stringify({ s: '['.repeat(1000) + '\\"[[[' + '{'.repeat(1000) });
    expect(jsonDepthProblem(inString)).toBeNull();
    // Closing brackets without openers (broken text) do not lower the count below zero.
    expect(jsonDepthProblem(']]]]' + nested(3, '{"a":', '}'), 'x', 3)).toBeNull();
    expect(jsonDepthProblem(']]]]' + nested(4, '{"a":', '}'), 'x', 3)?.message).toMatch(/^x: /);
  });

  it('keeps siblings at the same depth: a wide value is not a deep one', () => {
    expect(jsonDepthProblem(`[${Array.from({ length: 10_000 }, () => '[[1]]').join(',')}]`)).toBeNull();
  });
});

describe('valueDepthProblem', () => {
  it('measures decoded values with an explicit stack, bytes and strings as leaves', () => {
    expect(valueDepthProblem(deepValue(MAX_INPUT_DEPTH - 1))).toBeNull();
    expect(valueDepthProblem(deepValue(MAX_INPUT_DEPTH + 1))?.code).toBe('value_too_deep');
    expect(valueDepthProblem(deepValue(200_000))?.code).toBe('value_too_deep');
    expect(valueDepthProblem({ b: Buffer.alloc(100_000), s: 'x' }, 'v', 1)).toBeNull();
  });
});

describe('sizeProblem', () => {
  it('refuses a value over the limit, saying its size', () => {
    expect(sizeProblem(10, 'the value', 10)).toBeNull();
    expect(sizeProblem(11, 'the value', 10)).toEqual({
      code: 'value_too_large',
      message: 'the value: 11 bytes exceed the limit of 10',
    });
  });
});
