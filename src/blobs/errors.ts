/**
 * The one error type of blob access. The connector turns a non-retriable one into a
 * DeadLetter event carrying `code`, so codes are part of the public contract.
 */
export type BlobErrorCode =
  | 'blob_not_allowed'
  | 'blob_not_found'
  | 'blob_too_large'
  | 'sha256_mismatch'
  | 'blob_unreadable'
  | 'blob_invalid_url'
  /** The transfer took longer than `blobs.transferTimeoutMs`. */
  | 'blob_timeout'
  /** The transfer was slower than `blobs.minBytesPerSecond`. */
  | 'blob_too_slow';

export interface BlobErrorOptions {
  /** Defaults to false: only transport trouble (5xx, timeouts, resets) is worth retrying. */
  retriable?: boolean;
  cause?: unknown;
}

export class BlobError extends Error {
  override readonly name = 'BlobError';
  readonly code: BlobErrorCode;
  readonly retriable: boolean;

  constructor(code: BlobErrorCode, message: string, options: BlobErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}
