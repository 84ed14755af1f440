import { jest } from '@jest/globals';
import { Scheduler } from './scheduler.js';

describe('Scheduler', () => {
  // Fake time (Date.now included): the scheduler's one timer fires as the tests advance it.
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('runs jobs in due order with one timer, equal times in insertion order', async () => {
    const s = new Scheduler();
    const order: string[] = [];
    const now = Date.now();
    s.at(now + 30, () => order.push('c'));
    s.at(now + 10, () => order.push('a'));
    s.at(now + 10, () => order.push('b'));
    s.at(now - 5, () => order.push('late'));
    expect(s.size).toBe(4);
    await jest.advanceTimersByTimeAsync(80);
    expect(order).toEqual(['late', 'a', 'b', 'c']);
    expect(s.size).toBe(0);
  });

  test('a throwing job does not stop the others; close drops pending jobs', async () => {
    const s = new Scheduler();
    const ran: number[] = [];
    s.after(0, () => {
      throw new Error('boom');
    });
    s.after(0, () => ran.push(1));
    s.after(10_000, () => ran.push(2));
    await jest.advanceTimersByTimeAsync(30);
    expect(ran).toEqual([1]);
    s.close();
    expect(s.size).toBe(0);
  });

  test('keeps heap order across many random insertions', async () => {
    const s = new Scheduler();
    const seen: number[] = [];
    const base = Date.now();
    const offsets = Array.from({ length: 200 }, (_v, i) => (i * 7919) % 40);
    for (const o of offsets) s.at(base + o, () => seen.push(o));
    await jest.advanceTimersByTimeAsync(100);
    expect(seen).toEqual([...offsets].sort((a, b) => a - b));
  });
});
