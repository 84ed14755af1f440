/**
 * Depth and size bounds of values read from input, checked before anything recurses into them.
 *
 * `JSON.parse` does not recurse in V8, but everything after it does: `JSON.stringify`, zod, the
 * dead letter's redaction. A 10 KB text of 5,000 nested arrays parses fine and then throws "Maximum call
 * stack size exceeded" past the record's own dead letter. So a JSON text is scanned first, in one loop
 * with a counter (no recursion, no values built), and a decoded value (Avro) is walked with an
 * explicit stack. The contract's deepest path is a handful of levels; `MAX_INPUT_DEPTH` leaves
 * ample space for producers' extra fields while keeping every later recursion shallow.
 */

/** Deepest nesting of arrays and objects accepted in an input value (the top level is depth 1). */
export const MAX_INPUT_DEPTH = 64;

/**
 * Largest input value read, in bytes. The characteristics are at most 256 KB and the attributes
 * `connector.maxAttributesBytes`; an event beyond this is not one the connector could carry into
 * its state and outputs, and parsing it would only cost memory.
 */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;

export type BoundsCode = 'value_too_deep' | 'value_too_large';

export interface BoundsProblem {
  code: BoundsCode;
  message: string;
}

const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Why a JSON text must not be parsed (nested too deep), or null. Counts brackets and braces outside
 * strings; the text need not be valid JSON (the parser says what else is wrong with it).
 */
export function jsonDepthProblem(
  text: string,
  what = 'the value',
  maxDepth = MAX_INPUT_DEPTH,
): BoundsProblem | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > maxDepth) return tooDeep(what, maxDepth, `at character ${i}`);
    } else if ((c === CLOSE_BRACKET || c === CLOSE_BRACE) && depth > 0) depth--;
  }
  return null;
}

/** Why a value of `bytes` bytes must not be read (too large), or null. */
export function sizeProblem(
  bytes: number,
  what = 'the value',
  maxBytes = MAX_INPUT_BYTES,
): BoundsProblem | null {
  return bytes > maxBytes
    ? { code: 'value_too_large', message: `${what}: ${bytes} bytes exceed the limit of ${maxBytes}` }
    : null;
}

/**
 * Why an already decoded value (Avro) is too deep, or null. Walked with an explicit stack; byte
 * buffers and strings are leaves.
 */
export function valueDepthProblem(
  value: unknown,
  what = 'the value',
  maxDepth = MAX_INPUT_DEPTH,
): BoundsProblem | null {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) continue;
    if (depth > maxDepth) return tooDeep(what, maxDepth, null);
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return null;
}

function tooDeep(what: string, maxDepth: number, where: string | null): BoundsProblem {
  return {
    code: 'value_too_deep',
    message: `${what}: arrays and objects nested deeper than ${maxDepth} levels${where ? ` (${where})` : ''}`,
  };
}
