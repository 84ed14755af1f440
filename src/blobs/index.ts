/**
 * Reading the file an arrival event points at, confined by a BlobPolicy: `file://` under the
 * configured roots, `http(s)://` from configured hosts on checked addresses, `s3://` from
 * configured buckets. Every refusal or failure is a BlobError with a code for the DeadLetter.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { silentLogger, type Logger } from '../observability/logger.js';
import { BlobError } from './errors.js';
import { FileBlobReader } from './file-source.js';
import { HttpBlobReader, type HostResolver } from './http-source.js';
import { IN_MEMORY_BYTES, Keeper, MemoryBudget } from './kept.js';
import type { BlobPolicy } from './policy.js';
import { S3BlobReader } from './s3-source.js';
import { Spool } from './spool.js';
import type { BlobRef, OpenedBlob } from './types.js';
import { parseBlobUrl } from './url.js';
import type { ProxyRoutes } from '../util/proxy.js';

export { BlobError, type BlobErrorCode } from './errors.js';
export type { BlobPolicy } from './policy.js';
export type { BlobRef, OpenedBlob } from './types.js';
export type { AddressClass } from './address.js';
export { DEFAULT_CONNECTIONS_PER_HOST } from './pool.js';

export interface BlobSourceDeps {
  /** Whose configuration (endpoint rules, credentials) s3 blobs are signed with; built from the policy by default. */
  s3Client?: S3Client;
  logger?: Logger;
  /** Host name resolution for http(s) blobs; the system resolver by default. */
  resolveHost?: HostResolver;
  /**
   * Connections kept per http(s) host and to the S3 endpoint: enough for the documents admitted at
   * once (`connector.maxInFlight`), fewer than a burst would open without a cap.
   */
  connectionsPerHost?: number;
  /** The proxy of http(s) blobs and the CAs trusted for them (src/util/proxy.ts); default: direct. */
  egress?: { routes: ProxyRoutes; ca?: string[] };
}

export interface BlobSource {
  /** Checks and opens a blob; rejects with a BlobError. */
  resolve(ref: BlobRef): Promise<OpenedBlob>;
  /** Releases connections and removes leftover temp files. */
  close(): void;
}

export function createBlobSource(policy: BlobPolicy, deps: BlobSourceDeps = {}): BlobSource {
  const logger = deps.logger ?? silentLogger;
  const spool = new Spool();
  // One memory budget for every blob held from admission to upload, whichever its scheme.
  const budget = new MemoryBudget();
  const inMemoryBytes = policy.inMemoryBytes ?? IN_MEMORY_BYTES;
  const keeper = new Keeper(spool, budget, inMemoryBytes, policy.maxBytes);
  const files = new FileBlobReader(policy, logger, { smallFileBytes: inMemoryBytes, budget });
  const http = new HttpBlobReader(
    policy,
    keeper,
    logger,
    deps.resolveHost,
    deps.connectionsPerHost,
    deps.egress,
  );
  const s3 = new S3BlobReader(policy, keeper, logger, deps.s3Client, deps.connectionsPerHost);

  async function resolve(ref: BlobRef): Promise<OpenedBlob> {
    if (ref === null || typeof ref !== 'object') {
      throw new BlobError('blob_invalid_url', 'blob must be an object with a url');
    }
    const parsed = parseBlobUrl(ref.url);
    try {
      let blob: OpenedBlob;
      switch (parsed.kind) {
        case 'file':
          blob = await files.open(parsed.path, parsed.display, ref);
          break;
        case 'http':
          blob = await http.resolve(parsed.url, parsed.display, ref);
          break;
        case 's3':
          blob = await s3.resolve(parsed.bucket, parsed.key, parsed.display, ref);
          break;
      }
      logger.debug(
        { blob: parsed.display, size: blob.size, verified: blob.sha256 !== undefined },
        'blob resolved',
      );
      return blob;
    } catch (error) {
      if (error instanceof BlobError) {
        logger.debug({ blob: parsed.display, code: error.code, retriable: error.retriable }, 'blob refused');
        throw error;
      }
      throw new BlobError('blob_unreadable', `${parsed.display} could not be read`, {
        retriable: true,
        cause: error,
      });
    }
  }

  return {
    resolve,
    close() {
      http.close();
      s3.close();
      spool.closeSync();
    },
  };
}
