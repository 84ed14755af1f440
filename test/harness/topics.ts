import { randomBytes } from 'node:crypto';

/** A name unique to one test run, for topics, consumer groups, subjects and buckets: `prefix-<time>-<random>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}
