/**
 * When to ask V8 for a full collection (`util/full-gc.ts`) after the store read or dropped many
 * records. A restore decodes every record of its partitions: kafkajs builds objects for each record
 * of a fetch of up to megabytes, and with docstream's small young generation most of them outlive it
 * and land in the old generation as garbage, with the fetch buffers they point at. Nothing collects
 * that generation in an idle process, so it stayed resident at several times the index's own size
 * (docs/performance.md). A revoked partition's index is garbage in the same place.
 *
 * One collection, once no restore is under way and the store has been quiet a moment, and only after
 * enough records that it is worth a pause of tens of milliseconds; a rebalance that moves several
 * partitions pays one, not one per partition. The first restore's end is collected whatever it read:
 * starting (loading modules, compiling, connecting) leaves garbage of its own in the old generation,
 * which an idle instance otherwise kept resident for good.
 */
export interface RestoreGarbageOptions {
  /** Records read (or documents dropped) since the last collection that make one worth it. */
  thresholdRecords: number;
  /** Quiet time after the last restore ends before collecting (a rebalance's next restore may start). */
  quietMs: number;
  collect(): Promise<unknown>;
  /** Told after each collection: the records that led to it and how long it took. */
  onCollected?(records: number, ms: number): void;
  now?: () => number;
}

export class RestoreGarbage {
  private records = 0;
  private restoring = 0;
  private timer: NodeJS.Timeout | undefined;
  private collecting = false;
  private stopped = false;
  /** No collection yet: the first restore's end collects what starting left. */
  private first = true;
  private readonly now: () => number;

  constructor(private readonly o: RestoreGarbageOptions) {
    this.now = o.now ?? Date.now;
  }

  restoreStarted(): void {
    this.restoring++;
    this.cancel();
  }

  restoreEnded(): void {
    this.restoring = Math.max(0, this.restoring - 1);
    this.schedule();
  }

  /** Records read from the state topic (restored, or applied by its tail). */
  read(records: number): void {
    this.records += records;
  }

  /** A partition's documents dropped (revoked): their index is garbage now. */
  dropped(documents: number): void {
    this.records += documents;
    this.schedule();
  }

  /** No collection after this. */
  stop(): void {
    this.stopped = true;
    this.cancel();
  }

  private cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.stopped || this.restoring > 0) return;
    if (!this.first && this.records < this.o.thresholdRecords) return;
    this.cancel();
    // collect catches what its collection throws; onCollected is the caller's log line.
    this.timer = setTimeout(() => {
      this.collect().catch(() => undefined);
    }, this.o.quietMs);
    // Never what keeps a stopping process alive.
    this.timer.unref();
  }

  private async collect(): Promise<void> {
    this.timer = undefined;
    if (this.stopped || this.restoring > 0 || this.collecting) return;
    const records = this.records;
    this.records = 0;
    this.first = false;
    this.collecting = true;
    const started = this.now();
    try {
      await this.o.collect();
    } catch {
      // A collection that could not be asked for changes nothing but memory.
    } finally {
      this.collecting = false;
    }
    this.o.onCollected?.(records, this.now() - started);
    // Records read meanwhile wait for the next restore's end or drop.
  }
}
