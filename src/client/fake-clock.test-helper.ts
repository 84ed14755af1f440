import type { Clock } from './limiter.js';

/** A manual clock: `sleep` resolves only when `advance` moves time past its deadline. */
export class FakeClock implements Clock {
  private time = 0;
  private timers: { at: number; resolve: () => void }[] = [];

  now(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timers.push({ at: this.time + Math.max(0, ms), resolve });
    });
  }

  /** Moves time forward in steps, firing due timers and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await flush();
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.time = Math.max(this.time, next.at);
      next.resolve();
      await flush();
    }
    this.time = end;
    await flush();
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
