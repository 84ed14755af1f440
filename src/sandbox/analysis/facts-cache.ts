/**
 * File facts are a pure function of the bytes, so they are kept by SHA-256 in a small LRU: the
 * same file uploaded again (a retry, a benchmark corpus, serial fraud) is not inspected again.
 * Entries are the inspection's promise, so concurrent uploads of the same bytes share one
 * inspection. An inspection that could not read the bytes (an I/O error, not a verdict on the
 * file) is not kept.
 */
import type { FileFacts, Inspection } from './inspect.js';

export type { Inspection };

export const FACTS_CACHE_ENTRIES = 256;

/** Freezes the facts a cache entry shares between submissions, so no reader can alter them. */
function freeze(facts: FileFacts): FileFacts {
  Object.freeze(facts.metadata);
  Object.freeze(facts.pageText);
  if (facts.image) Object.freeze(facts.image);
  return Object.freeze(facts);
}

export class FactsCache {
  /** Map order is recency order: the first key is the least recently used. */
  private readonly entries = new Map<string, Promise<FileFacts>>();
  hits = 0;
  misses = 0;

  constructor(private readonly capacity = FACTS_CACHE_ENTRIES) {}

  get size(): number {
    return this.entries.size;
  }

  /** The facts of the bytes with this SHA-256, inspecting them with `inspect` only when not kept. */
  facts(sha256: string, inspect: () => Promise<Inspection>): Promise<FileFacts> {
    const kept = this.entries.get(sha256);
    if (kept) {
      this.hits++;
      this.entries.delete(sha256);
      this.entries.set(sha256, kept);
      return kept;
    }
    this.misses++;
    const pending = inspect().then((r) => {
      if (!r.cacheable && this.entries.get(sha256) === pending) this.entries.delete(sha256);
      return r.cacheable ? freeze(r.facts) : r.facts;
    });
    pending.catch(() => {
      if (this.entries.get(sha256) === pending) this.entries.delete(sha256);
    });
    this.entries.set(sha256, pending);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return pending;
  }
}
