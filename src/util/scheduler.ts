/**
 * One timer for everything due later: a min-heap of due times with a single setTimeout armed for the
 * earliest. Each entry knows its place in the heap, so a cancelled or replaced job leaves at once
 * (a document's deadline, cancelled when it finishes, used to stay for the whole deadline window,
 * with the document it referred to). The connector's polls of every in-flight document and the sandbox's webhook deliveries
 * cost one timer each, not one sleeping task per job.
 */
export interface SchedulerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: SchedulerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

interface Entry {
  dueAt: number;
  seq: number;
  key: string;
  run: () => void;
  /** Position in the heap, kept up to date by every move. */
  index: number;
}

export class PollScheduler {
  private readonly heap: Entry[] = [];
  private readonly live = new Map<string, Entry>();
  private timer: unknown = null;
  private timerDueAt = Infinity;
  private seq = 0;
  private stopped = false;

  constructor(private readonly clock: SchedulerClock = realClock) {}

  /** Runs `run` at `dueAt` (epoch ms). A key already scheduled is replaced. */
  schedule(key: string, dueAt: number, run: () => void): void {
    if (this.stopped) return;
    this.cancel(key);
    const entry: Entry = { dueAt, seq: this.seq++, key, run, index: this.heap.length };
    this.live.set(key, entry);
    this.heap.push(entry);
    this.up(entry.index);
    this.arm();
  }

  /**
   * Forgets `key` at once: its entry leaves the heap, so a cancelled job (e.g. the deadline of a
   * document that finished) holds nothing of it until its due time.
   */
  cancel(key: string): void {
    const entry = this.live.get(key);
    if (!entry) return;
    this.live.delete(key);
    this.removeAt(entry.index);
  }

  /**
   * Takes `key` off the schedule when it is due within `withinMs`, for the caller to run it now
   * (jobs best done together: the polls of one document's results). Says whether it was taken.
   */
  takeEarly(key: string, withinMs: number): boolean {
    const entry = this.live.get(key);
    if (!entry || entry.dueAt > this.clock.now() + withinMs) return false;
    this.cancel(key);
    return true;
  }

  /** Cancels every key starting with `prefix` (all polls of one document or one partition). */
  cancelPrefix(prefix: string): void {
    for (const key of [...this.live.keys()]) if (key.startsWith(prefix)) this.cancel(key);
  }

  get size(): number {
    return this.live.size;
  }

  /** Entries held in the heap: equal to `size`, nothing cancelled stays behind. */
  get held(): number {
    return this.heap.length;
  }

  stop(): void {
    this.stopped = true;
    this.live.clear();
    this.heap.length = 0;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    const head = this.heap[0];
    if (!head) return;
    if (this.timer !== null && this.timerDueAt <= head.dueAt) return;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timerDueAt = head.dueAt;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, head.dueAt - this.clock.now()));
  }

  private fire(): void {
    this.timer = null;
    this.timerDueAt = Infinity;
    const now = this.clock.now();
    for (;;) {
      const head = this.heap[0];
      if (!head || head.dueAt > now) break;
      this.live.delete(head.key);
      this.removeAt(0);
      try {
        head.run();
      } catch {
        // a task reports its own failures; the scheduler must keep running the others
      }
    }
    this.arm();
  }

  private less(a: Entry, b: Entry): boolean {
    return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
  }

  private place(entry: Entry, index: number): void {
    this.heap[index] = entry;
    entry.index = index;
  }

  private removeAt(index: number): void {
    const h = this.heap;
    const last = h.pop()!;
    if (index === h.length) return;
    this.place(last, index);
    this.up(index);
    this.down(last.index);
  }

  private up(index: number): void {
    const h = this.heap;
    const entry = h[index]!;
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(entry, h[parent]!)) break;
      this.place(h[parent]!, i);
      i = parent;
    }
    this.place(entry, i);
  }

  private down(index: number): void {
    const h = this.heap;
    const entry = h[index]!;
    let i = index;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      let best = entry;
      if (l < h.length && this.less(h[l]!, best)) {
        m = l;
        best = h[l]!;
      }
      if (r < h.length && this.less(h[r]!, best)) m = r;
      if (m === i) break;
      this.place(h[m]!, i);
      i = m;
    }
    this.place(entry, i);
  }
}
