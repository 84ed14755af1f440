import { stripVTControlCharacters } from 'node:util';
import { resultTable, type Row } from './demo.js';
import { fitTable, wrap, type Cell } from './table.js';

const cells = (...texts: string[]): Cell[] => texts.map((text) => ({ text }));

function row(event: string, fields: Partial<Row>): Row {
  return { event, what: '', pipeline: '-', expect: 'results', awaited: 1, got: 1, ...fields };
}

/** The demo's rows with the longest values it prints. */
const demoRows: Row[] = [
  row('payslip-edited', {
    what: 'PDF saved by an image editor',
    pipeline: 'FRAUD_ONLY + decision',
    fraud: 'HIGH_RISK',
    quality: 'HIGH_QUALITY',
    classification: 'payslip',
    decision: 'DECLINED',
  }),
  row('statement-trusted', {
    what: 'PDF from a trusted issuer',
    pipeline: 'FRAUD_ONLY',
    fraud: 'TRUSTED',
    quality: 'HIGH_QUALITY',
    classification: 'account_statement',
  }),
  row('invoice-backdated', {
    what: 'PDF modified months later',
    pipeline: 'FRAUD_ONLY + characteristics',
    fraud: 'WARNING',
    quality: 'HIGH_QUALITY',
    classification: 'invoice',
  }),
  row('spreadsheet', {
    what: 'unsupported file (CSV)',
    pipeline: 'FRAUD_ONLY',
    fraud: 'UNPROCESSABLE_INPUT_ENTITY',
    quality: 'UNPROCESSABLE_INPUT_ENTITY',
    classification: 'UNPROCESSABLE_INPUT_ENTITY',
  }),
  row('outside', {
    what: 'blob outside the allowed roots',
    dead: 'blob/blob_not_allowed',
    expect: 'dead letter',
  }),
  row('no-id', { what: 'no event_id', dead: 'validate/schema_invalid', expect: 'dead letter' }),
];

describe('wrap', () => {
  it('breaks at spaces and after _ / -, and mid-word only when a piece is longer than the width', () => {
    expect(wrap('FRAUD_ONLY + characteristics', 16)).toEqual(['FRAUD_ONLY +', 'characteristics']);
    expect(wrap('UNPROCESSABLE_INPUT_ENTITY', 15)).toEqual(['UNPROCESSABLE_', 'INPUT_ENTITY']);
    expect(wrap('validate/schema_invalid', 10)).toEqual(['validate/', 'schema_', 'invalid']);
    expect(wrap('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(wrap('short', 10)).toEqual(['short']);
  });
});

describe('fitTable', () => {
  it('leaves a table that fits as it is, columns two spaces apart', () => {
    expect(fitTable([cells('a', 'bb'), cells('ccc', 'd')], { width: 20 })).toEqual(['a    bb', 'ccc  d']);
  });

  it('drops the droppable columns only as far as needed, in order, then wraps', () => {
    const long = (c: string) => [1, 2, 3].map(() => c.repeat(6)).join(' ');
    const rows = [cells('key', 'first', 'second', 'value'), cells('k', long('a'), long('b'), 'v')];
    // the floors (6 for each long column) fit: nothing dropped, the long columns narrowed (to 13,
    // just enough) and their cells wrapped
    expect(fitTable(rows, { width: 40, droppable: [1, 2] })).toEqual([
      'key  first          second         value',
      'k    aaaaaa aaaaaa  bbbbbb bbbbbb  v',
      '     aaaaaa         bbbbbb',
    ]);
    expect(fitTable(rows, { width: 24, droppable: [1, 2] })[0]).toMatch(/^key\s+second\s+value$/);
    expect(fitTable(rows, { width: 12, droppable: [1, 2] })).toEqual(['key  value', 'k    v']);
  });

  it('does not count colour codes in the width', () => {
    const red = (s: string) => `\u001b[31m${s}\u001b[0m`;
    const lines = fitTable([cells('a', 'b'), [{ text: 'x' }, { text: 'HIGH_RISK', paint: red }]], {
      width: 20,
    });
    expect(lines[1]).toBe(`x  ${red('HIGH_RISK')}`);
  });
});

describe("the demo's final table", () => {
  it.each([100, 80, 60])('fits %i columns and keeps every event id whole on its line', (width) => {
    const lines = resultTable(demoRows, width).map((l) => stripVTControlCharacters(l));
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(width);
    for (const r of demoRows) expect(lines.some((l) => l.startsWith(`${r.event} `))).toBe(true);
  });

  it.each([100, 80])(
    'at %i columns loses nothing: results and dead letters wrap only between words',
    (width) => {
      const text = resultTable(demoRows, width)
        .map((l) => stripVTControlCharacters(l))
        .join('\n');
      for (const piece of [
        'HIGH_RISK',
        'DECLINED',
        'TRUSTED',
        'HIGH_QUALITY',
        'blob/',
        'allowed',
        'statement',
      ])
        expect(text).toContain(piece);
    },
  );

  it('at 100 columns shows the results on one line per document where they fit', () => {
    const lines = resultTable(demoRows, 100).map((l) => stripVTControlCharacters(l));
    expect(lines[0]).toMatch(/^event\s+fraud\s+quality\s+class\s+decision\s+dead letter$/);
    expect(lines.find((l) => l.startsWith('payslip-edited'))).toMatch(
      /^payslip-edited\s+HIGH_RISK\s+HIGH_QUALITY\s+payslip\s+DECLINED$/,
    );
  });

  it('shows the document and pipeline columns when the terminal is wide enough for them', () => {
    // (the demo caps the width at 100; the table itself keeps what fits)
    const header = stripVTControlCharacters(resultTable(demoRows, 200)[0]!);
    expect(header).toMatch(/^event\s+document\s+pipeline\s+fraud/);
  });
});
