import { ReadinessEstimator } from './poll-timing.js';

describe('ReadinessEstimator', () => {
  it('settles where about the chosen quantile of first polls find the result ready', () => {
    const e = new ReadinessEstimator(100, 10, 60000);
    // Processing takes 1000..2000 ms uniformly; the 90th percentile is 1900 ms.
    let t = 0;
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    let hits = 0;
    for (let i = 0; i < 5000; i++) {
      t += 1000;
      const ready = 1000 + random() * 1000 <= e.value;
      if (i >= 1000 && ready) hits += 1;
      e.observe(ready, t);
    }
    expect(hits / 4000).toBeGreaterThan(0.8);
    expect(hits / 4000).toBeLessThan(0.96);
  });

  it('counts a burst of simultaneous outcomes once', () => {
    const e = new ReadinessEstimator(250, 10, 4000);
    for (let i = 0; i < 100; i++) e.observe(false, 1000);
    expect(e.value).toBeLessThan(300);
    for (let i = 0; i < 100; i++) e.observe(true, 1001);
    expect(e.value).toBeGreaterThan(250);
  });

  it('stays within its bounds', () => {
    const e = new ReadinessEstimator(50, 10, 100);
    for (let t = 0; t < 100000; t += 100) e.observe(false, t);
    expect(e.value).toBe(100);
  });
});
