/**
 * The bounds of one remote blob transfer (http(s), s3), checked while its bytes go by: a total time
 * (`blobs.transferTimeoutMs`, from the request to the last byte) and a minimum rate
 * (`blobs.minBytesPerSecond`, over each window of `RATE_WINDOW_MS`). Connect, response and idle
 * timeouts alone let a server that trickles a byte a second hold an admission for ever.
 *
 * Time during which the reader does not take the bytes (its side of the stream is full: an upload
 * waiting for the API) is not the source's doing: it counts against neither bound.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { BlobError } from './errors.js';

/** The rate is judged over windows of this length (the first one starts with the transfer). */
export const RATE_WINDOW_MS = 10_000;

export interface TransferLimits {
  /** Whole transfer, from the request to the last byte; 0: no bound. */
  transferTimeoutMs: number;
  /** Fewest bytes per second over a window; 0: no minimum. */
  minBytesPerSecond: number;
  /** Length of a rate window (tests shorten it). */
  rateWindowMs?: number;
}

/** The limits of a policy, defaults filled in (unset in a policy built by hand: no bound). */
export function transferLimits(policy: Partial<TransferLimits>): TransferLimits {
  return {
    transferTimeoutMs: policy.transferTimeoutMs ?? 0,
    minBytesPerSecond: policy.minBytesPerSecond ?? 0,
    ...(policy.rateWindowMs !== undefined ? { rateWindowMs: policy.rateWindowMs } : {}),
  };
}

/** The error of a transfer that ran out of time; `display` names the blob without secrets. */
export function transferTimeout(display: string, limits: TransferLimits): BlobError {
  return new BlobError(
    'blob_timeout',
    `${display} was not transferred within ${limits.transferTimeoutMs} ms (blobs.transferTimeoutMs)`,
  );
}

/**
 * The bookkeeping of both bounds over one transfer, for whatever carries its bytes: `count` each
 * chunk, `stop` at its end; `fail` is called once a bound is crossed. `held()` says whether the
 * reader is not taking bytes now (that time is not the source's).
 */
export class TransferClock {
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly windowMs: number;
  private windowStart: number;
  private windowBytes = 0;
  /** Time the reader was not taking bytes: not the source's. */
  private heldMs = 0;
  private lastTick: number;

  /** `startedAt`: when the transfer began (its request), so that the wait for an answer counts. */
  constructor(
    private readonly limits: TransferLimits,
    private readonly display: string,
    private readonly startedAt: number,
    private readonly held: () => boolean,
    private readonly fail: (error: BlobError) => void,
  ) {
    this.windowMs = limits.rateWindowMs ?? RATE_WINDOW_MS;
    this.windowStart = startedAt;
    this.lastTick = Date.now();
    const bounded = limits.transferTimeoutMs > 0 || limits.minBytesPerSecond > 0;
    if (bounded) {
      const tickMs = Math.max(10, Math.min(1000, this.windowMs / 4, limits.transferTimeoutMs || Infinity));
      this.timer = setInterval(() => this.check(), tickMs);
      this.timer.unref();
    }
  }

  count(bytes: number): void {
    this.windowBytes += bytes;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const now = Date.now();
    const tick = now - this.lastTick;
    this.lastTick = now;
    if (this.held()) {
      // The reader is not taking bytes: this tick is not the source's, and the window starts again.
      this.heldMs += tick;
      this.windowStart = now;
      this.windowBytes = 0;
      return;
    }
    const { transferTimeoutMs, minBytesPerSecond } = this.limits;
    if (transferTimeoutMs > 0 && now - this.startedAt - this.heldMs > transferTimeoutMs) {
      this.stop();
      this.fail(transferTimeout(this.display, this.limits));
      return;
    }
    if (minBytesPerSecond <= 0 || now - this.windowStart < this.windowMs) return;
    const seconds = (now - this.windowStart) / 1000;
    if (this.windowBytes < minBytesPerSecond * seconds) {
      this.stop();
      this.fail(
        new BlobError(
          'blob_too_slow',
          `${this.display} sent ${this.windowBytes} bytes in ${seconds.toFixed(1)} s, slower than blobs.minBytesPerSecond (${minBytesPerSecond})`,
        ),
      );
      return;
    }
    this.windowStart = now;
    this.windowBytes = 0;
  }
}

/** A pass-through that fails with `blob_timeout` or `blob_too_slow` once a bound is crossed. */
export class Pace extends Transform {
  private readonly clock: TransferClock;

  /** `startedAt`: when the transfer began (its request), so that the wait for an answer counts. */
  constructor(limits: TransferLimits, display: string, startedAt = Date.now()) {
    super();
    this.clock = new TransferClock(
      limits,
      display,
      startedAt,
      () => this.readableLength >= this.readableHighWaterMark,
      (error) => this.destroy(error),
    );
  }

  /** Counts bytes of the transfer that were read before they could come through here. */
  count(bytes: number): void {
    this.clock.count(bytes);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.clock.count(chunk.length);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.clock.stop();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.clock.stop();
    callback(error);
  }
}
