/**
 * One timer for everything the sandbox does later (webhook deliveries and their retries): a
 * min-heap of due times with a single setTimeout armed for the earliest, so thousands of pending
 * jobs cost one timer, not thousands.
 */
interface Job {
  at: number;
  seq: number;
  run: () => void;
}

export class Scheduler {
  private heap: Job[] = [];
  private timer: NodeJS.Timeout | null = null;
  private armedFor = Number.POSITIVE_INFINITY;
  private seq = 0;
  private closed = false;

  constructor(private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.heap.length;
  }

  /** Runs `run` at or after `at` (epoch ms). Jobs due at the same time run in insertion order. */
  at(at: number, run: () => void): void {
    if (this.closed) return;
    this.push({ at, seq: this.seq++, run });
    this.arm();
  }

  after(delayMs: number, run: () => void): void {
    this.at(this.now() + Math.max(0, delayMs), run);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.heap = [];
  }

  private arm(): void {
    const first = this.heap[0];
    if (!first || first.at >= this.armedFor) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = first.at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, first.at - this.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = null;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.now();
    while (this.heap.length > 0 && (this.heap[0] as Job).at <= now) {
      const job = this.pop();
      try {
        job.run();
      } catch {
        // A job's failure belongs to the job; the scheduler keeps serving the others.
      }
    }
    this.arm();
  }

  private less(a: Job, b: Job): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(job: Job): void {
    const h = this.heap;
    h.push(job);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i] as Job, h[parent] as Job)) break;
      [h[i], h[parent]] = [h[parent] as Job, h[i] as Job];
      i = parent;
    }
  }

  private pop(): Job {
    const h = this.heap;
    const top = h[0] as Job;
    const last = h.pop() as Job;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l] as Job, h[m] as Job)) m = l;
        if (r < h.length && this.less(h[r] as Job, h[m] as Job)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m] as Job, h[i] as Job];
        i = m;
      }
    }
    return top;
  }
}
