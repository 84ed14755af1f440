/**
 * The submissions analysed per file content (SHA-256), in the order their analysis started, for
 * the serial-fraud sample: the last few earlier ones. Taking the sample walks back from the
 * newest, so it costs the sample's size, not the number of submissions of that content (a
 * benchmark sending the same few files thousands of times made that quadratic).
 */
interface Entry {
  /**
   * Ids in the order they were added; a deleted id stays until the next compaction (and one
   * added again after its delete is there twice: the newest position counts).
   */
  order: string[];
  /** The ids not deleted, in the order of their latest add (a Set keeps insertion order). */
  live: Set<string>;
}

export class SerialIndex {
  private readonly bySha = new Map<string, Entry>();

  /** The last `n` live ids of this content, oldest first; then adds `id` as the newest. */
  takeSampleAndAdd(sha256: string, id: string, n: number): string[] {
    let entry = this.bySha.get(sha256);
    if (!entry) {
      entry = { order: [], live: new Set() };
      this.bySha.set(sha256, entry);
    }
    const sample: string[] = [];
    for (let i = entry.order.length - 1; i >= 0 && sample.length < n; i--) {
      const earlier = entry.order[i] as string;
      if (earlier !== id && entry.live.has(earlier) && !sample.includes(earlier)) sample.push(earlier);
    }
    if (!entry.live.has(id)) {
      entry.live.add(id);
      entry.order.push(id);
    }
    return sample.reverse();
  }

  delete(sha256: string, id: string): void {
    const entry = this.bySha.get(sha256);
    if (!entry?.live.delete(id)) return;
    if (entry.live.size === 0) this.bySha.delete(sha256);
    else if (entry.order.length > 2 * entry.live.size + 16) entry.order = [...entry.live];
  }
}
