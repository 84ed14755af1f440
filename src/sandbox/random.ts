/**
 * Random draws for the sandbox. With a seed every draw is reproducible (tests, benchmarks);
 * without one it uses Math.random.
 */
export interface Random {
  next(): number;
}

/** mulberry32: tiny, fast, and good enough for simulated latencies and fault coin flips. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return {
    next() {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

const mathRandom: Random = { next: () => Math.random() };

export function createRandom(seed: number | null): Random {
  return seed === null ? mathRandom : seededRandom(seed);
}

interface Distribution {
  distribution: 'fixed' | 'uniform' | 'exponential';
  meanMs: number;
  minMs?: number;
  maxMs?: number;
}

/**
 * Draws a duration. `uniform` spans [minMs, maxMs] (defaults: 0 and 2 × mean); `exponential`
 * has the given mean and is clamped to [minMs, maxMs] when set; `fixed` is always the mean.
 */
export function drawDuration(random: Random, d: Distribution): number {
  const min = d.minMs ?? 0;
  const max = d.maxMs ?? Math.max(min, d.meanMs * 2);
  let value: number;
  switch (d.distribution) {
    case 'fixed':
      return d.meanMs;
    case 'uniform':
      value = min + random.next() * (max - min);
      break;
    case 'exponential':
      value = -Math.log(1 - random.next()) * d.meanMs;
      value = Math.min(Math.max(value, min), d.maxMs ?? Number.POSITIVE_INFINITY);
      break;
  }
  return Math.round(value);
}

export function chance(random: Random, probability: number): boolean {
  return probability > 0 && random.next() < probability;
}
