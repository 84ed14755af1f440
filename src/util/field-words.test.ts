/**
 * src/ speaks the field's words (transient failure, dead letter, capacity, backpressure), so that a
 * newcomer, an operator reading a log and a search all find what they look for. This test reads every
 * .ts and .md file under src/ (identifiers, comments, strings and READMEs alike) and fails on one of
 * the private words that once stood in for them: weather, letter alone for a dead letter, room for
 * capacity, park, hurry, nap, lap, the hall. Identifiers are split into words first (`isWeather`,
 * `napUntil`), and "letter" counts only when the word before it is not "dead".
 * What is allowed is `SANCTIONED` below, each with its reason; docs/glossary.md lists the same uses.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const THIS_FILE = 'util/field-words.test.ts';

/** Each private word, by the forms it takes (lower case, one word of a split identifier or of prose). */
const PRIVATE = new Map<string, string>([
  ...['weather', 'weathers', 'weathered'].map((w) => [w, 'weather'] as [string, string]),
  ...['letter', 'letters', 'lettered'].map((w) => [w, 'letter'] as [string, string]),
  ...['room', 'rooms'].map((w) => [w, 'room'] as [string, string]),
  ...['park', 'parks', 'parked', 'parking'].map((w) => [w, 'park'] as [string, string]),
  ...['hurry', 'hurries', 'hurried', 'hurrying'].map((w) => [w, 'hurry'] as [string, string]),
  ...['nap', 'naps', 'napping', 'napped'].map((w) => [w, 'nap'] as [string, string]),
  ...['lap', 'laps'].map((w) => [w, 'lap'] as [string, string]),
  ...['hall', 'halls'].map((w) => [w, 'hall'] as [string, string]),
]);

/**
 * Uses that stay, by file and line: names of other things, and field names that scripts or stored
 * records already read (renaming those would break them; docs/glossary.md says so too).
 */
const SANCTIONED: Array<{ file: string; line: RegExp; why: string }> = [
  { file: 'api/schemas.ts', line: /hemisphere letter/, why: 'a letter of the alphabet (N, S, E, W)' },
  { file: 'cli/program.test.ts', line: /capital letter/, why: 'a letter of the alphabet' },
  { file: 'connector/document/poll-timing.test.ts', line: /Park–Miller/, why: 'a random generator’s name' },
  { file: 'sandbox/analysis/rules.ts', line: /naps2/, why: 'a scanner program’s name (NAPS2)' },
  {
    file: 'operator/redrive.ts',
    line: /^\s*letter: (string;|deadLetter\.id,)$|marker\.letter\)|key: m\.letter,/,
    why: 'the redrive marker’s stored field `letter`: markers already written are read by it',
  },
  {
    file: 'cli/commands/dlq.ts',
    line: /`letters?` keeps its first name|letters: flags\.summary|\(\{ letter: deadLetter, decision \}\)/,
    why: '`dlq list --json` (`letters`) and `dlq redrive --json` (`letter`): field names scripts read',
  },
  {
    file: 'cli/commands/operate.ts',
    line: /`letters` keeps its first name|letters: deadLetters \}/,
    why: '`inspect --json` (`letters`): a field name scripts read',
  },
];

export interface Hit {
  line: number;
  word: string;
  text: string;
}

/** Splits identifiers into words: `isWeather` → is weather, `DEAD_LETTER_CODES` → dead letter codes. */
function words(line: string): string[] {
  return line
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .filter((w) => w.length > 0)
    .map((w) => w.toLowerCase());
}

/** The private words of a text, by line; "letter" after "dead" (even across a line break) is the field's word. */
export function privateWordsIn(text: string): Hit[] {
  const hits: Hit[] = [];
  let previous = '';
  text.split('\n').forEach((line, i) => {
    for (const word of words(line)) {
      const base = PRIVATE.get(word);
      if (base && !(base === 'letter' && previous === 'dead'))
        hits.push({ line: i + 1, word: base, text: line.trim() });
      previous = word;
    }
  });
  return hits;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|md)$/.test(entry.name) ? [path] : [];
  });
}

describe("src/ speaks the field's words", () => {
  it('has none of the private words outside the sanctioned uses', () => {
    const found: string[] = [];
    for (const path of sourceFiles(root)) {
      const file = relative(root, path).split(sep).join('/');
      if (file === THIS_FILE) continue;
      for (const hit of privateWordsIn(readFileSync(path, 'utf8')))
        if (!SANCTIONED.some((s) => s.file === file && s.line.test(hit.text)))
          found.push(`src/${file}:${hit.line}: ${hit.word} (${hit.text})`);
    }
    expect(found).toEqual([]);
  });

  it('finds the private words in identifiers, comments and strings, and leaves the field’s words alone', () => {
    const text = [
      'const isWeather = true; // a dead letter, DEAD_LETTER_CODES, deadLetterOf, dead-lettered',
      "log('the letter was written'); const letters = [];",
      '/** Frees room; parks the batch; hurries; napUntil(); the lap; the hall. */',
      '// overlap, snapshot, spark, hallmark, a dead',
      '// letter across a line break',
    ].join('\n');
    expect(privateWordsIn(text).map((h) => `${h.line}: ${h.word}`)).toEqual([
      '1: weather',
      '2: letter',
      '2: letter',
      '3: room',
      '3: park',
      '3: hurry',
      '3: nap',
      '3: lap',
      '3: hall',
    ]);
  });

  it('sanctions only lines that still exist, so that the list does not outlive what it excuses', () => {
    const unused = SANCTIONED.filter(
      (s) =>
        !readFileSync(join(root, s.file), 'utf8')
          .split('\n')
          .some((line) => s.line.test(line.trim())),
    ).map((s) => s.file);
    expect(unused).toEqual([]);
  });
});
