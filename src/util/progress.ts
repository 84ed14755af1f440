/**
 * A one-line progress display for long work (replays, benchmarks): count, rate and time left,
 * redrawn in place. Only on an interactive terminal: with output to a file, a pipe or CI it writes
 * nothing, so logs carry no carriage returns or half lines.
 */

interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(chunk: string): unknown;
}

interface ProgressOptions {
  /** What is being done, e.g. "replay documents.arrived". */
  label: string;
  /** The count at which the work is done, when known (for the percentage and time left). */
  total?: number;
  /** What is counted, e.g. "records". */
  unit?: string;
  /** Default: process.stderr (stdout stays for results). */
  stream?: ProgressStream;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** Least time between two redraws. */
  redrawMs?: number;
  /** The rate is measured over this last stretch, so it follows changes of pace. */
  windowMs?: number;
}

const number = new Intl.NumberFormat('en-US');

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function formatRate(perSecond: number): string {
  if (perSecond >= 100) return number.format(Math.round(perSecond));
  return perSecond.toFixed(1);
}

/** The line shown for a state of the work; pure, so it is tested without a terminal. */
export function progressLine(state: {
  label: string;
  unit: string;
  done: number;
  total?: number;
  ratePerSecond: number | null;
}): string {
  const { label, unit, done, total, ratePerSecond } = state;
  const parts = [label];
  if (total !== undefined && total > 0) {
    const percent = Math.min(100, Math.floor((done / total) * 100));
    parts.push(`${number.format(done)}/${number.format(total)} ${unit} (${percent}%)`);
  } else {
    parts.push(`${number.format(done)} ${unit}`);
  }
  parts.push(ratePerSecond === null ? `- ${unit}/s` : `${formatRate(ratePerSecond)} ${unit}/s`);
  if (total !== undefined && total > 0) {
    const left = Math.max(0, total - done);
    if (left === 0) parts.push('done');
    else if (ratePerSecond !== null && ratePerSecond > 0) {
      const seconds = left / ratePerSecond;
      parts.push(seconds < 1 ? 'under 1s left' : `~${formatDuration(seconds)} left`);
    } else parts.push('time left unknown');
  }
  return parts.join('  ');
}

/** NO_COLOR set to anything but the empty string (no-color.org): no colour, no redrawn lines. */
function noColor(env: NodeJS.ProcessEnv): boolean {
  return env.NO_COLOR !== undefined && env.NO_COLOR !== '';
}

/** True where colour helps a person: a terminal that can show it, unless NO_COLOR says otherwise. */
export function colourWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb' && !noColor(env);
}

/** True where a progress line helps a person: a terminal, not CI, and no NO_COLOR. */
export function progressWanted(stream: ProgressStream, env: NodeJS.ProcessEnv): boolean {
  const ci = env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';
  return stream.isTTY === true && !ci && env.TERM !== 'dumb' && !noColor(env);
}

export class Progress {
  readonly enabled: boolean;
  private readonly stream: ProgressStream;
  private readonly now: () => number;
  private readonly redrawMs: number;
  private readonly windowMs: number;
  private readonly label: string;
  private readonly unit: string;
  private total: number | undefined;
  private samples: Array<{ at: number; done: number }> = [];
  private lastDraw = -Infinity;
  private lastDone = 0;
  private drawn = false;

  constructor(options: ProgressOptions) {
    this.stream = options.stream ?? process.stderr;
    this.enabled = progressWanted(this.stream, options.env ?? process.env);
    this.now = options.now ?? Date.now;
    this.redrawMs = options.redrawMs ?? 250;
    this.windowMs = options.windowMs ?? 10_000;
    this.label = options.label;
    this.unit = options.unit ?? 'records';
    this.total = options.total;
    this.samples.push({ at: this.now(), done: 0 });
  }

  /** Records the count reached (and a new total, if it changed); redraws at most every redrawMs. */
  update(done: number, total?: number): void {
    if (total !== undefined) this.total = total;
    this.lastDone = done;
    const at = this.now();
    this.samples.push({ at, done });
    while (this.samples.length > 2 && at - this.samples[1]!.at >= this.windowMs) this.samples.shift();
    if (!this.enabled || at - this.lastDraw < this.redrawMs) return;
    this.lastDraw = at;
    this.draw();
  }

  /** Count per second over the last window; null until some time has passed. */
  rate(): number | null {
    const first = this.samples[0]!;
    const last = this.samples.at(-1)!;
    const seconds = (last.at - first.at) / 1000;
    return seconds >= 0.5 ? Math.max(0, (last.done - first.done) / seconds) : null;
  }

  /** Draws the final state and ends the line, so what is printed next starts on its own line. */
  finish(): void {
    if (!this.enabled) return;
    this.draw();
    this.stream.write('\n');
    this.drawn = false;
  }

  private draw(): void {
    let line = progressLine({
      label: this.label,
      unit: this.unit,
      done: this.lastDone,
      ...(this.total !== undefined ? { total: this.total } : {}),
      ratePerSecond: this.rate(),
    });
    const width = this.stream.columns;
    if (width && line.length >= width) line = line.slice(0, width - 1);
    // \r back to the start, then erase the rest of the previous (possibly longer) line.
    this.stream.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  /** Whether a line is on screen and not yet ended (callers printing something else end it first). */
  get active(): boolean {
    return this.drawn;
  }
}
