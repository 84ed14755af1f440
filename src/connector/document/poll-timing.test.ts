import { jest } from '@jest/globals';
import {
  CHEAPEST_MS,
  ECONOMY_MS,
  LearnedTimes,
  MAX_FINER_KEYS,
  PollPrice,
  PollTiming,
  ReadyTimes,
  TRUSTED_RESULTS,
  sizeClass,
  type PollBudget,
  type ResultTraits,
} from './poll-timing.js';

/** A seeded uniform random source (Park–Miller), so every run of a test draws the same numbers. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

/**
 * Polls `n` results whose processing takes `draw()` ms, as the connector does (each poll at the time
 * `plan` says, the outcome fed back), in simulated time. Returns the mean and 99th percentile delay
 * after ready and the polls per result.
 */
function simulate(
  timing: PollTiming,
  n: number,
  draw: () => number,
  traitsOf: (i: number) => ResultTraits = () => ({}),
): { meanDelay: number; p99Delay: number; pollsPerResult: number } {
  const delays: number[] = [];
  let polls = 0;
  let clock = 1_000_000;
  for (let i = 0; i < n; i++) {
    const uploadedAt = clock;
    const traits = traitsOf(i);
    const readyAfter = draw();
    let now = uploadedAt;
    let lastMiss = 0;
    for (let attempt = 0; ; attempt++) {
      now += timing.plan('fraud', attempt, false, uploadedAt, now, false, traits).delayMs;
      polls += 1;
      const waited = now - uploadedAt;
      if (waited >= readyAfter) {
        timing.observe('fraud', lastMiss, waited, traits);
        delays.push(waited - readyAfter);
        break;
      }
      lastMiss = waited;
    }
    clock += 50;
  }
  delays.sort((a, b) => a - b);
  return {
    meanDelay: delays.reduce((a, b) => a + b, 0) / delays.length,
    p99Delay: delays[Math.floor(delays.length * 0.99)]!,
    pollsPerResult: polls / n,
  };
}

/** A limiter reading the test sets. */
function budget(reading: { capacityPerSecond: number; usedPerSecond: number; waiting: number }): PollBudget {
  return { headroom: () => ({ ratePerSecond: reading.capacityPerSecond, ...reading }) };
}

const uniform = (random: () => number, from: number, to: number) => () => from + random() * (to - from);

describe('ReadyTimes', () => {
  it('learns a distribution from the intervals polls find', () => {
    const t = new ReadyTimes(50, 15000);
    const random = seeded(11);
    for (let i = 0; i < 2000; i++) {
      const ready = 1000 + random() * 3000;
      // Polled every 100 ms: not ready at the poll before, ready at the poll that found it.
      const by = Math.ceil(ready / 100) * 100;
      t.observe(by - 100, by);
    }
    expect(t.quantile(0.5)).toBeGreaterThan(2300);
    expect(t.quantile(0.5)).toBeLessThan(2700);
    expect(t.quantile(0.05)).toBeGreaterThan(900);
    expect(t.quantile(0.99)).toBeLessThan(4200);
    expect(t.survivalAt(800)).toBeGreaterThan(0.98);
  });

  it('keeps the shape it learned when later polls only say "ready by then"', () => {
    const t = new ReadyTimes(50, 15000);
    const random = seeded(5);
    for (let i = 0; i < 1000; i++) {
      const by = Math.ceil((1000 + random() * 3000) / 100) * 100;
      t.observe(by - 100, by);
    }
    const median = t.quantile(0.5);
    // One economical poll at 4.2 s for each result: no lower bound.
    for (let i = 0; i < 1000; i++) t.observe(0, 4200);
    expect(Math.abs(t.quantile(0.5) - median)).toBeLessThan(150);
  });

  it('follows a kind that grows slower, as the old observations fade', () => {
    const t = new ReadyTimes(50, 15000);
    for (let i = 0; i < 500; i++) t.observe(180, 200);
    expect(t.quantile(0.5)).toBeLessThan(220);
    for (let i = 0; i < 2000; i++) t.observe(1900, 2000);
    expect(t.quantile(0.5)).toBeGreaterThan(1800);
  });

  it('polls a result slower than anything seen with gaps within half the time waited', () => {
    const t = new ReadyTimes(50, 15000);
    for (let i = 0; i < 500; i++) t.observe(980, 1000);
    let at = 1100;
    for (let i = 0; i < 20; i++) {
      const next = t.nextPoll(at, ECONOMY_MS, 20, 15000);
      expect(next).toBeGreaterThan(at);
      expect(next - at).toBeLessThanOrEqual(Math.max(20, at / 2) + 1e-6);
      expect(next - at).toBeLessThanOrEqual(15000);
      at = next;
    }
    expect(at).toBeGreaterThan(20_000);
  });
});

describe('PollTiming', () => {
  it('with capacity to spare, results uniform 1-4 s are out within a fraction of a second of ready', () => {
    const random = seeded(3);
    const timing = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, random);
    simulate(timing, 500, uniform(random, 1000, 4000)); // learning
    const r = simulate(timing, 2000, uniform(random, 1000, 4000));
    expect(r.meanDelay).toBeLessThan(150);
    expect(r.p99Delay).toBeLessThan(400);
    expect(r.pollsPerResult).toBeLessThan(10);
  });

  it('at the economy price a result costs little more than one GET', () => {
    const busy = budget({ capacityPerSecond: 40, usedPerSecond: 40, waiting: 0 });
    // The price doubles every quarter second of simulated time spent at the limit.
    const random = seeded(4);
    const spread = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, random, busy);
    simulate(spread, 1000, uniform(random, 1000, 4000));
    expect(simulate(spread, 2000, uniform(random, 1000, 4000)).pollsPerResult).toBeLessThan(1.4);
    const fixed = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, seeded(5), busy);
    simulate(fixed, 200, () => 200);
    expect(simulate(fixed, 2000, () => 200).pollsPerResult).toBeLessThan(1.05);
  });

  it('spends fewer polls and waits longer as the price rises, step by step', () => {
    const random = seeded(9);
    const learned = new ReadyTimes(50, 15000);
    for (let i = 0; i < 2000; i++) {
      const by = Math.ceil((1000 + random() * 3000) / 50) * 50;
      learned.observe(by - 50, by);
    }
    const curve = [CHEAPEST_MS, 100, 500, ECONOMY_MS].map((price) => {
      let delay = 0;
      let polls = 0;
      for (let i = 0; i < 1000; i++) {
        const ready = 1000 + random() * 3000;
        let at = 0;
        for (let attempt = 0; at < ready; attempt++) {
          at = learned.nextPoll(at, price, attempt === 0 ? 0 : 20, 15000);
          polls += 1;
        }
        delay += at - ready;
      }
      return { meanDelay: delay / 1000, pollsPerResult: polls / 1000 };
    });
    for (let i = 1; i < curve.length; i++) {
      expect(curve[i]!.pollsPerResult).toBeLessThan(curve[i - 1]!.pollsPerResult);
      expect(curve[i]!.meanDelay).toBeGreaterThan(curve[i - 1]!.meanDelay);
    }
    // No cliff: each step at most a few times the delay of the one before.
    for (let i = 1; i < curve.length; i++)
      expect(curve[i]!.meanDelay).toBeLessThan(curve[i - 1]!.meanDelay * 5);
    // The economy price: about a third of a GET more than the one that finds the result.
    expect(curve[curve.length - 1]!.pollsPerResult).toBeLessThan(1.4);
  });

  it('marks polls earlier than the economy schedule as spare', () => {
    const random = seeded(8);
    const reading = { capacityPerSecond: 100, usedPerSecond: 10, waiting: 0 };
    const timing = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, random, budget(reading));
    simulate(timing, 500, uniform(random, 1000, 4000));
    const fresh = timing.plan('fraud', 0, false, 0, 0);
    expect(fresh.spare).toBe(true);
    // Calls near the capacity for a while: the price reaches the economy price, nothing is spare.
    reading.usedPerSecond = 95;
    let economy = fresh;
    for (let t = 2e6; t < 2e6 + 4000; t += 250) economy = timing.plan('fraud', 0, false, t, t);
    expect(economy.spare).toBe(false);
    expect(economy.delayMs).toBeGreaterThan(fresh.delayMs);
    // The economy schedule's first poll comes late in the distribution: most results are ready.
    expect(economy.delayMs).toBeGreaterThan(2500);
    // A spare poll that found no spare capacity is placed again a gap later, never at once.
    expect(timing.plan('fraud', 0, false, 0, 0, true).delayMs).toBeGreaterThanOrEqual(19);
  });

  it('polls a kind still being learned at the price the limiter sets: at the limit its first results cost few polls', () => {
    // Learning polls go before creates at the limiter: polled at the cheapest price they would take
    // the capacity the creates need, and the creates would then go in one burst.
    const random = seeded(5);
    const atLimit = { capacityPerSecond: 40, usedPerSecond: 39, waiting: 30 };
    const timing = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, random, budget(atLimit));
    const learning = simulate(timing, 20, uniform(random, 1000, 4000));
    expect(learning.pollsPerResult).toBeLessThan(3);
    // With capacity to spare the same kind is learned at the cheapest price, fresh.
    const roomy = new PollTiming(
      { pollInitialMs: 500, pollMaxMs: 15000 },
      random,
      budget({ capacityPerSecond: 5000, usedPerSecond: 40, waiting: 0 }),
    );
    const fresh = simulate(roomy, 20, uniform(random, 1000, 4000));
    expect(fresh.meanDelay).toBeLessThan(learning.meanDelay);
    expect(fresh.pollsPerResult).toBeGreaterThan(learning.pollsPerResult);
  });

  it('learns from the first few results, before the long tail of the prior matters', () => {
    const random = seeded(12);
    const timing = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, random);
    simulate(timing, 20, uniform(random, 1000, 4000));
    const r = simulate(timing, 200, uniform(random, 1000, 4000));
    expect(r.p99Delay).toBeLessThan(1000);
  });

  it('polls at once when prompted, then backs off from pollInitialMs', () => {
    const timing = new PollTiming({ pollInitialMs: 500, pollMaxMs: 15000 }, () => 0.5);
    expect(timing.plan('decision', 0, true, 0, 0)).toEqual({ delayMs: 0, spare: false });
    const next = timing.plan('decision', 1, true, 0, 0).delayMs;
    expect(next).toBeGreaterThanOrEqual(250);
    expect(next).toBeLessThanOrEqual(500);
  });

  it('never waits longer than pollMaxMs between two polls', () => {
    const timing = new PollTiming({ pollInitialMs: 5, pollMaxMs: 20 }, seeded(1));
    for (let attempt = 0; attempt < 50; attempt++) {
      expect(timing.plan('quality', attempt, false, 0, attempt * 20).delayMs).toBeLessThanOrEqual(21);
    }
  });
});

describe('learned per pipeline and file size', () => {
  const options = { pollInitialMs: 500, pollMaxMs: 15000 };
  const quick: ResultTraits = { pipeline: 'QUALITY_ONLY' };
  const slow: ResultTraits = { pipeline: 'FRAUD_ONLY' };
  /** Results of the two pipelines in turn: the quick one's ready in about 1 s, the slow one's in about 4 s. */
  const mixed = (random: () => number) => {
    let i = 0;
    return {
      traitsOf: (n: number) => ((i = n) % 2 === 0 ? quick : slow),
      draw: () => (i % 2 === 0 ? 900 + random() * 200 : 3800 + random() * 400),
    };
  };
  const firstPoll = (timing: PollTiming, traits: ResultTraits) =>
    timing.plan('fraud', 0, false, 5e6, 5e6, false, traits).delayMs;

  it('places the first poll of each pipeline by its own distribution once that is learned', () => {
    const random = seeded(21);
    const timing = new PollTiming(options, () => 0.5);
    const { traitsOf, draw } = mixed(random);
    simulate(timing, 400, draw, traitsOf);
    const quickFirst = firstPoll(timing, quick);
    const slowFirst = firstPoll(timing, slow);
    // Results of the quick pipeline are not held back by the slow one's, nor the slow one's polled
    // seconds before they can be ready.
    expect(quickFirst).toBeLessThan(1100);
    expect(slowFirst).toBeGreaterThan(3000);
    // A result of neither (its pipeline unknown) is scheduled by the kind's mixture.
    expect(firstPoll(timing, {})).toBeLessThan(slowFirst);
  });

  it('costs fewer polls and less delay than one distribution for the kind, with the same results', () => {
    const run = (withTraits: boolean) => {
      const random = seeded(22);
      const timing = new PollTiming(options, seeded(23));
      const { traitsOf, draw } = mixed(random);
      const traits = withTraits ? traitsOf : () => ({});
      simulate(timing, 400, draw, (n) => (traitsOf(n), traits(n)));
      return simulate(timing, 2000, draw, (n) => (traitsOf(n), traits(n)));
    };
    const keyed = run(true);
    const kindOnly = run(false);
    // Fewer polls, and far less delay: the kind's mixture leaves a gap between the two pipelines'
    // times where a slow-pipeline result is found late.
    expect(keyed.pollsPerResult).toBeLessThan(kindOnly.pollsPerResult * 0.9);
    expect(keyed.meanDelay).toBeLessThan(kindOnly.meanDelay * 0.5);
    expect(keyed.p99Delay).toBeLessThan(kindOnly.p99Delay * 0.5);
  });

  it('schedules a pipeline by its kind until it has seen enough results to be trusted', () => {
    const random = seeded(24);
    const timing = new PollTiming(options, () => 0.5);
    // The kind learned from the common pipeline; the rare one is much slower.
    simulate(
      timing,
      300,
      () => 900 + random() * 200,
      () => quick,
    );
    const rare: ResultTraits = { pipeline: 'CLASSIFICATION_ONLY' };
    simulate(
      timing,
      TRUSTED_RESULTS - 1,
      () => 3800 + random() * 400,
      () => rare,
    );
    // Not trusted yet: exactly the schedule its kind gives.
    const kindFirst = firstPoll(timing, {});
    expect(firstPoll(timing, rare)).toBe(kindFirst);
    simulate(
      timing,
      1,
      () => 3800 + random() * 400,
      () => rare,
    );
    expect(firstPoll(timing, rare)).toBeGreaterThan(kindFirst + 1000);
  });

  it('keeps the kind’s schedule for a pipeline whose results take what the kind’s take', () => {
    const random = seeded(25);
    const timing = new PollTiming(options, () => 0.5);
    simulate(timing, 800, uniform(random, 1000, 4000), (n) => (n % 2 === 0 ? quick : slow));
    const kindFirst = firstPoll(timing, {});
    expect(firstPoll(timing, quick)).toBe(kindFirst);
    expect(firstPoll(timing, slow)).toBe(kindFirst);
  });

  it('learns by the file’s size class within a pipeline, and falls back to the pipeline’s for a size not learned', () => {
    const random = seeded(26);
    const timing = new PollTiming(options, () => 0.5);
    const small: ResultTraits = { pipeline: 'FRAUD_ONLY', bytes: 20_000 };
    const large: ResultTraits = { pipeline: 'FRAUD_ONLY', bytes: 8_000_000 };
    let i = 0;
    simulate(
      timing,
      400,
      () => (i % 2 === 0 ? 900 + random() * 200 : 3800 + random() * 400),
      (n) => ((i = n) % 2 === 0 ? small : large),
    );
    expect(firstPoll(timing, small)).toBeLessThan(1100);
    expect(firstPoll(timing, large)).toBeGreaterThan(3000);
    // Same class as the small file (16-64 KiB): its schedule.
    expect(firstPoll(timing, { pipeline: 'FRAUD_ONLY', bytes: 60_000 })).toBe(firstPoll(timing, small));
    // A size never seen, and no size at all: the pipeline's distribution (the mixture of both).
    const pipelineFirst = firstPoll(timing, { pipeline: 'FRAUD_ONLY' });
    expect(firstPoll(timing, { pipeline: 'FRAUD_ONLY', bytes: 300 })).toBe(pipelineFirst);
    expect(pipelineFirst).toBeGreaterThan(firstPoll(timing, small));
    expect(pipelineFirst).toBeLessThan(firstPoll(timing, large));
  });

  it('size classes are a factor of four wide, from below 16 KiB to 64 MiB and above', () => {
    expect(sizeClass(0)).toBe(sizeClass(16 * 1024 - 1));
    expect(sizeClass(16 * 1024)).toBe(sizeClass(16 * 1024 - 1) + 1);
    expect(sizeClass(64 * 1024 - 1)).toBe(sizeClass(16 * 1024));
    expect(sizeClass(64 * 1024)).toBe(sizeClass(16 * 1024) + 1);
    expect(sizeClass(64 * 1024 * 1024)).toBe(sizeClass(16 * 1024 * 1024) + 1);
    expect(sizeClass(1e12)).toBe(sizeClass(64 * 1024 * 1024));
  });

  it('holds at most MAX_FINER_KEYS finer distributions; a key past the cap learns in and is scheduled by its kind', () => {
    const learned = new LearnedTimes(() => new ReadyTimes(50, 15000));
    for (let p = 0; p < MAX_FINER_KEYS * 2; p++)
      learned.observe('fraud', { pipeline: `P${p}`, bytes: 1000 }, 900, 1000);
    expect(learned.finerKeys).toBe(MAX_FINER_KEYS);
    const past: ResultTraits = { pipeline: 'PAST', bytes: 1000 };
    for (let i = 0; i < TRUSTED_RESULTS * 2; i++) learned.observe('fraud', past, 3900, 4000);
    expect(learned.finerKeys).toBe(MAX_FINER_KEYS);
    // Its results taught its kind, which schedules them.
    expect(learned.of('fraud', past)).toBe(learned.of('fraud', {}));
    expect(learned.of('fraud', past).count).toBe(MAX_FINER_KEYS * 2 + TRUSTED_RESULTS * 2);
    // Keys held before the cap go on learning and are used once trusted and different.
    for (let i = 0; i < TRUSTED_RESULTS; i++)
      learned.observe('fraud', { pipeline: 'P0', bytes: 1000 }, 180, 200);
    expect(learned.of('fraud', { pipeline: 'P0', bytes: 1000 }).quantile(0.5)).toBeLessThan(300);
  });
});

describe('PollPrice', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('rises to the economy price while calls use the capacity, falls back to the cheapest once they do not', () => {
    const reading = { capacityPerSecond: 100, usedPerSecond: 90, waiting: 3 };
    const price = new PollPrice(budget(reading));
    let now = Date.now();
    const step = () => {
      jest.advanceTimersByTime(250);
      now = Date.now();
      return price.at(now);
    };
    let p = price.at(now);
    for (let i = 0; i < 20; i++) p = step();
    expect(p).toBe(ECONOMY_MS);
    expect(price.hasSpareCapacity()).toBe(false);
    reading.waiting = 0;
    reading.usedPerSecond = 20;
    const falling: number[] = [];
    for (let i = 0; i < 60; i++) falling.push(step());
    // Down by a fifth per step: gradual, not a jump.
    for (let i = 1; i < falling.length; i++)
      expect(falling[i]!).toBeGreaterThanOrEqual(falling[i - 1]! * 0.8 - 1e-9);
    expect(falling[falling.length - 1]).toBe(CHEAPEST_MS);
    expect(price.hasSpareCapacity()).toBe(true);
  });

  it('holds its price between calls used at 60 % and 80 % of the capacity, rises above', () => {
    const reading = { capacityPerSecond: 100, usedPerSecond: 70, waiting: 0 };
    const price = new PollPrice(budget(reading));
    const first = price.at(0);
    expect(price.at(1000)).toBe(first);
    reading.usedPerSecond = 85;
    expect(price.at(2000)).toBe(first * 2);
    // A spare poll goes only below 90 % of the capacity, and while the queue is short (a second of
    // the rate: 100 calls here).
    expect(price.hasSpareCapacity()).toBe(true);
    reading.usedPerSecond = 95;
    expect(price.hasSpareCapacity()).toBe(false);
    reading.usedPerSecond = 50;
    reading.waiting = 100;
    expect(price.hasSpareCapacity()).toBe(true);
    reading.waiting = 101;
    expect(price.hasSpareCapacity()).toBe(false);
  });
});
