/**
 * Jobs the sandbox runs later (webhook deliveries, their retries, decision notifications), on the
 * shared heap scheduler: anonymous jobs, in due order, equal times in insertion order.
 */
import { PollScheduler } from '../util/scheduler.js';

export class Scheduler {
  private readonly timers: PollScheduler;
  private seq = 0;

  constructor(now: () => number = Date.now) {
    this.timers = new PollScheduler({
      now,
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    });
  }

  get size(): number {
    return this.timers.size;
  }

  /** Runs `run` at or after `at` (epoch ms). */
  at(at: number, run: () => void): void {
    this.timers.schedule(String(this.seq++), at, run);
  }

  after(delayMs: number, run: () => void): void {
    this.at(Date.now() + delayMs, run);
  }

  /** Drops every pending job. */
  close(): void {
    this.timers.stop();
  }
}
