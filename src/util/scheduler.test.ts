import { PollScheduler, type SchedulerClock } from './scheduler.js';

class FakeClock implements SchedulerClock {
  t = 0;
  timers: Array<{ at: number; fn: () => void; id: number }> = [];
  private id = 0;
  armed = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    this.armed++;
    const id = ++this.id;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== h);
  }
  advance(ms: number): void {
    this.t += ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= this.t).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      due.fn();
    }
  }
}

describe('PollScheduler', () => {
  it('runs tasks in due order with a single pending timer', () => {
    const clock = new FakeClock();
    const s = new PollScheduler(clock);
    const ran: string[] = [];
    s.schedule('c', 300, () => ran.push('c'));
    s.schedule('a', 100, () => ran.push('a'));
    s.schedule('b', 200, () => ran.push('b'));
    expect(clock.timers).toHaveLength(1);
    clock.advance(150);
    expect(ran).toEqual(['a']);
    clock.advance(1000);
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(s.size).toBe(0);
  });

  it('replaces a key and cancels by key or prefix', () => {
    const clock = new FakeClock();
    const s = new PollScheduler(clock);
    const ran: string[] = [];
    s.schedule('doc1:fraud', 100, () => ran.push('old'));
    s.schedule('doc1:fraud', 200, () => ran.push('new'));
    s.schedule('doc1:quality', 150, () => ran.push('q'));
    s.schedule('doc2:fraud', 150, () => ran.push('d2'));
    s.cancelPrefix('doc1:');
    clock.advance(500);
    expect(ran).toEqual(['d2']);
  });

  it('keeps running other tasks when one throws', () => {
    const clock = new FakeClock();
    const s = new PollScheduler(clock);
    const ran: string[] = [];
    s.schedule('a', 10, () => {
      throw new Error('boom');
    });
    s.schedule('b', 10, () => ran.push('b'));
    clock.advance(10);
    expect(ran).toEqual(['b']);
  });
});
