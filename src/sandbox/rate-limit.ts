/**
 * Per-client token buckets: `burst` requests at once, refilled at `ratePerSecond`. Each client id
 * (application) has its own bucket, so one client's 429s never spend another's budget.
 */
interface RateLimit {
  ratePerSecond: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  /** Takes one token; returns 0 when allowed, else the milliseconds until a token is available. */
  take(clientId: string, limit: RateLimit, now = Date.now()): number {
    let bucket = this.buckets.get(clientId);
    if (!bucket) {
      bucket = { tokens: limit.burst, updated: now };
      this.buckets.set(clientId, bucket);
    }
    const elapsed = Math.max(0, now - bucket.updated) / 1000;
    bucket.tokens = Math.min(limit.burst, bucket.tokens + elapsed * limit.ratePerSecond);
    bucket.updated = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) / limit.ratePerSecond) * 1000);
  }

  reset(): void {
    this.buckets.clear();
  }

  /** Refills one client's bucket (its limit changed); the others' budgets are untouched. */
  forget(clientId: string): void {
    this.buckets.delete(clientId);
  }
}

/** Retry-After as delta-seconds (at least 1) or as an HTTP date, rounded up to whole seconds. */
export function formatRetryAfter(waitMs: number, format: 'seconds' | 'http-date', now = Date.now()): string {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  if (format === 'seconds') return String(seconds);
  return new Date(Math.ceil(now / 1000) * 1000 + seconds * 1000).toUTCString();
}
