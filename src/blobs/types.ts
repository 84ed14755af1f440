import type { Readable } from 'node:stream';

/** The `blob` object of an arrival event. */
export interface BlobRef {
  url: string;
  sha256?: string | null;
  size_bytes?: number | null;
  content_type?: string | null;
}

/** A blob that passed every check; the caller uploads it and then calls `cleanup()`. */
export interface OpenedBlob {
  /** A fresh stream of the bytes each call (uploads may be retried). */
  open(): Promise<Readable>;
  /**
   * The whole blob, when it was small enough to be read into memory at admission: upload this
   * buffer instead of a stream. Undefined after cleanup() and for blobs that stream.
   */
  readonly bytes?: Buffer | undefined;
  /** Bytes when known (for Content-Length). */
  size: number | undefined;
  contentType: string | undefined;
  /** Hex, when computed (always when the event gave one to verify). */
  sha256: string | undefined;
  /** Releases what the blob holds (an open file, a temp file). Safe to call twice. */
  cleanup(): Promise<void>;
}
