/**
 * One timer for everything due later: a min-heap of due times with a single setTimeout armed for the
 * earliest. The connector's polls of every in-flight document and the sandbox's webhook deliveries
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
}

export class PollScheduler {
  private heap: Entry[] = [];
  private live = new Map<string, Entry>();
  private timer: unknown = null;
  private timerDueAt = Infinity;
  private seq = 0;
  private stopped = false;

  constructor(private readonly clock: SchedulerClock = realClock) {}

  /** Runs `run` at `dueAt` (epoch ms). A key already scheduled is replaced. */
  schedule(key: string, dueAt: number, run: () => void): void {
    if (this.stopped) return;
    const entry: Entry = { dueAt, seq: this.seq++, key, run };
    this.live.set(key, entry);
    this.push(entry);
    this.arm();
  }

  cancel(key: string): void {
    this.live.delete(key);
  }

  /** Cancels every key starting with `prefix` (all polls of one document or one partition). */
  cancelPrefix(prefix: string): void {
    for (const key of this.live.keys()) if (key.startsWith(prefix)) this.live.delete(key);
  }

  get size(): number {
    return this.live.size;
  }

  stop(): void {
    this.stopped = true;
    this.live.clear();
    this.heap = [];
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    const head = this.peekLive();
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
      const head = this.peekLive();
      if (!head || head.dueAt > now) break;
      this.pop();
      this.live.delete(head.key);
      try {
        head.run();
      } catch {
        // a task reports its own failures; the scheduler must keep running the others
      }
    }
    this.arm();
  }

  /** The earliest entry still live; stale heap entries (cancelled or replaced) are dropped lazily. */
  private peekLive(): Entry | undefined {
    while (this.heap.length > 0) {
      const head = this.heap[0]!;
      if (this.live.get(head.key) === head) return head;
      this.pop();
    }
    return undefined;
  }

  private less(a: Entry, b: Entry): boolean {
    return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
  }

  private push(entry: Entry): void {
    const h = this.heap;
    h.push(entry);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
