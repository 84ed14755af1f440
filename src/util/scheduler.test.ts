import fc from 'fast-check';
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

  it('takes a job off the schedule early only when it is due within the given time', () => {
    const clock = new FakeClock();
    const s = new PollScheduler(clock);
    const ran: string[] = [];
    s.schedule('soon', 40, () => ran.push('soon'));
    s.schedule('later', 60, () => ran.push('later'));
    expect(s.takeEarly('later', 50)).toBe(false);
    expect(s.takeEarly('soon', 50)).toBe(true);
    expect(s.takeEarly('soon', 50)).toBe(false);
    expect(s.takeEarly('unknown', 50)).toBe(false);
    clock.advance(100);
    // Taken, it is the caller's to run: the scheduler does not run it as well.
    expect(ran).toEqual(['later']);
    expect(s.held).toBe(0);
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

  it('holds nothing of a cancelled or replaced job (the deadline of a finished document)', () => {
    const clock = new FakeClock();
    const s = new PollScheduler(clock);
    for (let i = 0; i < 1000; i++) {
      s.schedule(`doc${i}:deadline`, 900_000 + i, () => undefined);
      s.schedule(`doc${i}:fraud`, 100 + i, () => undefined);
      s.schedule(`doc${i}:fraud`, 200 + i, () => undefined);
    }
    expect(s.held).toBe(2000);
    for (let i = 0; i < 1000; i++) s.cancel(`doc${i}:deadline`);
    expect(s.held).toBe(1000);
    clock.advance(10_000);
    expect(s.size).toBe(0);
    expect(s.held).toBe(0);
  });

  it('runs exactly the live jobs, in due order, whatever the schedules, replacements and cancels', () => {
    type Op =
      | { op: 'schedule'; key: number; at: number }
      | { op: 'cancel'; key: number }
      | { op: 'advance'; ms: number };
    const op = fc.oneof(
      fc.record({ op: fc.constant('schedule' as const), key: fc.nat(20), at: fc.nat(1000) }),
      fc.record({ op: fc.constant('cancel' as const), key: fc.nat(20) }),
      fc.record({ op: fc.constant('advance' as const), ms: fc.nat(300) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops: Op[]) => {
        const clock = new FakeClock();
        const s = new PollScheduler(clock);
        const ran: string[] = [];
        const model = new Map<number, { at: number; seq: number; tag: string }>();
        const expected: string[] = [];
        let seq = 0;
        const runModel = (until: number) => {
          const due = [...model.entries()]
            .filter(([, v]) => v.at <= until)
            .sort(([, a], [, b]) => a.at - b.at || a.seq - b.seq);
          for (const [key, v] of due) {
            model.delete(key);
            expected.push(v.tag);
          }
        };
        for (const o of ops) {
          if (o.op === 'schedule') {
            const at = clock.t + o.at;
            const tag = `${o.key}@${seq}`;
            model.set(o.key, { at, seq: seq++, tag });
            s.schedule(String(o.key), at, () => ran.push(tag));
          } else if (o.op === 'cancel') {
            model.delete(o.key);
            s.cancel(String(o.key));
          } else {
            clock.advance(o.ms);
            runModel(clock.t);
          }
          expect(s.size).toBe(model.size);
          expect(s.held).toBe(model.size);
        }
        expect(ran).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
