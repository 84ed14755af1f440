/**
 * A pass-through that counts (and optionally hashes) the bytes going by, and fails the
 * stream as soon as more arrive than allowed, so an over-long body is never read to its end.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { BlobError } from './errors.js';

export interface MeterOptions {
  /** More bytes than this fail the stream with `tooMany()`. */
  maxBytes: number;
  /** When set, the stream must end with exactly this many bytes. */
  exactBytes?: number;
  hash?: boolean;
  tooMany: () => BlobError;
  /** Called when `exactBytes` is set and the stream ends short. */
  tooFew?: (bytes: number) => BlobError;
}

export class Meter extends Transform {
  bytes = 0;
  private readonly hasher: Hash | undefined;

  constructor(private readonly options: MeterOptions) {
    super();
    this.hasher = options.hash ? createHash('sha256') : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    const limit = Math.min(this.options.maxBytes, this.options.exactBytes ?? Infinity);
    if (this.bytes > limit) {
      callback(this.options.tooMany());
      return;
    }
    this.hasher?.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    const { exactBytes, tooFew } = this.options;
    if (exactBytes !== undefined && this.bytes !== exactBytes && tooFew) {
      callback(tooFew(this.bytes));
      return;
    }
    callback();
  }

  /** Hex digest; only valid after the stream has ended and only when hashing was asked for. */
  digest(): string {
    if (!this.hasher) throw new Error('Meter was created without hashing');
    return this.hasher.digest('hex');
  }
}

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

/** The expected digest in lower case, or a BlobError when the event's value is not one. */
export function expectedSha256(value: string): string {
  if (!HEX_SHA256.test(value)) {
    throw new BlobError('sha256_mismatch', 'blob.sha256 is not a SHA-256 digest (64 hexadecimal characters)');
  }
  return value.toLowerCase();
}

export function checkSha256(expected: string, actual: string, display: string): void {
  if (expected !== actual) {
    throw new BlobError(
      'sha256_mismatch',
      `SHA-256 of ${display} is ${actual}, but the event says ${expected}`,
    );
  }
}
