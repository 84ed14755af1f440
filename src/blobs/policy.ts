/**
 * What blob access is allowed to do. The shape matches the `blobs` configuration section,
 * so `config.blobs` can be passed as is, while this module stays free of the config loader.
 */
export interface BlobPolicy {
  /** Directories `file://` blobs may be read from; symlinks are resolved before the check; empty allows none. */
  fileRoots: readonly string[];
  /** `host` or `host:port` entries `http(s)://` blobs may be fetched from; empty allows none. */
  httpHosts: readonly string[];
  /** Allow loopback, private, link-local and unique-local addresses (metadata stays refused). */
  allowPrivateNetworks: boolean;
  /** Buckets `s3://` blobs may be read from; empty allows none. */
  s3Buckets: readonly string[];
  /** S3 endpoint URL for an S3-compatible store; empty means AWS. */
  s3Endpoint: string;
  s3Region: string;
  s3ForcePathStyle: boolean;
  /** Verify `blob.sha256` before the bytes are handed out, when an event gives one. */
  verifySha256: boolean;
  /** Largest blob accepted, in bytes. */
  maxBytes: number;
  /** Check and read small `file://` blobs with synchronous system calls (default true). */
  fileSyncReads?: boolean;
  /** Blobs up to this many bytes are held in memory from admission to upload (`kept.ts`). */
  inMemoryBytes?: number;
  /** Bound on a whole http(s)/s3 transfer, request to last byte (`pace.ts`); unset or 0: none. */
  transferTimeoutMs?: number;
  /** Slowest http(s)/s3 transfer accepted, bytes per second over each window; unset or 0: none. */
  minBytesPerSecond?: number;
}
