/**
 * A whole child log in little room, for a failing test's message: each line once, with a count of
 * the identical-message lines that directly followed it (a retry loop's warnings become one line),
 * the newest entries kept. A bounded buffer of raw chunks keeps only the end of a log that such a
 * loop filled, and loses what led to it.
 */

/** One kept line and how many lines of the same level and message followed it in a row. */
interface Entry {
  key: string;
  line: string;
  repeats: number;
}

export class LogDigest {
  private readonly entries: Entry[] = [];
  private partial = '';

  constructor(private readonly maxEntries = 150) {}

  /** Takes a chunk of the log (JSON lines; a line may span chunks). */
  write(chunk: string): void {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') this.add(line);
  }

  private add(line: string): void {
    const key = keyOf(line);
    const last = this.entries.at(-1);
    if (last && last.key === key) {
      last.repeats += 1;
      return;
    }
    this.entries.push({ key, line, repeats: 0 });
    if (this.entries.length > this.maxEntries) this.entries.shift();
  }

  /** The kept lines, each cut to `width` characters, repeats noted after the line they follow. */
  text(width = 300): string {
    return this.entries
      .map(
        (e) =>
          (e.line.length > width ? `${e.line.slice(0, width)}…` : e.line) +
          (e.repeats > 0 ? ` [×${e.repeats + 1}]` : ''),
      )
      .join('\n');
  }
}

/** A JSON log line's level and message; any other line is its own key. */
function keyOf(line: string): string {
  try {
    const parsed = JSON.parse(line) as { level?: unknown; msg?: unknown };
    return `${String(parsed.level)} ${String(parsed.msg)}`;
  } catch {
    return line;
  }
}
