/**
 * A plain-text table that fits a width: columns are two spaces apart; when the natural widths do not
 * fit, the droppable columns go first (as many as needed), then columns are narrowed step by step
 * (each step where it adds the fewest lines) and their cells wrap (at spaces, after `_`, `/` and `-`, or mid-word when a word alone is
 * too long).
 */

/** A cell: its text, and how to colour each of its lines (applied after wrapping). */
export interface Cell {
  text: string;
  paint?: (line: string) => string;
}

export interface FitOptions {
  /** Widest line allowed (in characters). */
  width: number;
  /** Indexes of columns never narrowed (e.g. the key column). */
  keep?: number[];
  /** Indexes of columns that may be left out, in the order they go. */
  droppable?: number[];
  /** The floor of a column whose longest unbreakable piece is over a quarter of the width. */
  minColumn?: number;
}

const GAP = '  ';

/** Splits `text` into lines of at most `width` characters, breaking after a separator where it can. */
export function wrap(text: string, width: number): string[] {
  if (width < 1) throw new Error('width must be at least 1');
  const lines: string[] = [];
  let rest = text;
  while (rest.length > width) {
    const head = rest.slice(0, width + 1);
    // the last break opportunity within the width: after a separator, or at a space
    let cut = -1;
    for (let i = Math.min(width, head.length - 1); i > 0; i--) {
      const c = head[i - 1];
      if (head[i] === ' ') {
        cut = i;
        break;
      }
      if (c === '_' || c === '/' || c === '-') {
        cut = i;
        break;
      }
    }
    if (cut <= 0) cut = width;
    lines.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  lines.push(rest);
  return lines;
}

function lineWidth(widths: number[]): number {
  return widths.reduce((a, b) => a + b, 0) + GAP.length * Math.max(0, widths.length - 1);
}

/** The longest piece of `text` that wrapping never breaks (a word, or a run between separators). */
function longestPiece(text: string): number {
  return Math.max(0, ...text.split(/ |(?<=[_/-])/).map((w) => w.length));
}

/**
 * Renders `rows` (the first is the header) within `options.width` columns and returns the lines
 * (trailing spaces trimmed). Columns are dropped (in `droppable` order) only as far as needed for
 * the others to fit at their floors: a column's floor is its longest unbreakable piece, or
 * `minColumn` when that piece alone is longer. Then the columns are narrowed where it costs the
 * fewest extra lines.
 */
export function fitTable(rows: Cell[][], options: FitOptions): string[] {
  const minColumn = options.minColumn ?? 8;
  const natural = (i: number) => Math.max(...rows.map((r) => (r[i]?.text ?? '').length));
  const floor = (i: number) => {
    if (options.keep?.includes(i)) return natural(i);
    const piece = Math.max(...rows.map((r) => longestPiece(r[i]?.text ?? '')));
    return Math.min(natural(i), piece <= options.width / 4 ? piece : minColumn);
  };
  let columns = rows[0]!.map((_, i) => i);
  const drops = [...(options.droppable ?? [])];
  const fits = (cols: number[], width: (i: number) => number) => lineWidth(cols.map(width)) <= options.width;
  while (!fits(columns, floor) && drops.length > 0) {
    const drop = drops.shift()!;
    columns = columns.filter((i) => i !== drop);
  }
  const widths = new Map(columns.map((i) => [i, natural(i)]));
  const total = () => lineWidth(columns.map((i) => widths.get(i)!));
  // Narrow one column at a time by one character: the one that adds the fewest lines to the table
  // (the widest among equals), down to its floor; then below it (mid-word breaks) down to 1 when
  // even the floors do not fit.
  const height = (i: number, w: number) => rows.map((r) => wrap(r[i]?.text ?? '', w).length);
  const lines = (i: number, w: number) => {
    const mine = height(i, w);
    return rows.reduce(
      (n, _, r) =>
        n + Math.max(mine[r]!, ...columns.filter((c) => c !== i).map((c) => height(c, widths.get(c)!)[r]!)),
      0,
    );
  };
  for (const limit of [floor, (i: number) => (options.keep?.includes(i) ? natural(i) : 1)]) {
    while (total() > options.width) {
      const narrowable = columns.filter((i) => widths.get(i)! > limit(i));
      if (narrowable.length === 0) break;
      const cost = new Map(narrowable.map((i) => [i, lines(i, widths.get(i)! - 1)]));
      const best = narrowable.reduce((a, b) =>
        cost.get(b)! < cost.get(a)! || (cost.get(b) === cost.get(a) && widths.get(b)! > widths.get(a)!)
          ? b
          : a,
      );
      widths.set(best, widths.get(best)! - 1);
    }
  }
  const out: string[] = [];
  for (const row of rows) {
    const cells = columns.map((i) => wrap(row[i]?.text ?? '', widths.get(i)!));
    const height = Math.max(...cells.map((c) => c.length));
    for (let l = 0; l < height; l++) {
      const parts = columns.map((i, k) => {
        const text = cells[k]![l] ?? '';
        const paint = row[i]?.paint;
        const pad = ' '.repeat(widths.get(i)! - text.length);
        return (text && paint ? paint(text) : text) + pad;
      });
      out.push(parts.join(GAP).trimEnd());
    }
  }
  return out;
}
