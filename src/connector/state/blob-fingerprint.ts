/**
 * Four bytes that tell two blobs of one `event_id` apart, kept in its state record: a later
 * copy of the event pointing at another blob is then told so by a dead letter, whether it arrives in the
 * same batch or a week later, without the state keeping the blob's URL (it may carry a pre-signed
 * query string). The fingerprint is of the URL and the event's sha256, when it gives one; 0 means
 * unknown (a state written before fingerprints), so the low bit of every fingerprint is set.
 */
import { createHash } from 'node:crypto';
import type { BlobRef } from '../types.js';

export function blobFingerprint(blob: BlobRef): number {
  const digest = createHash('sha256')
    .update(blob.url)
    .update('\n')
    .update((blob.sha256 ?? '').toLowerCase())
    .digest();
  return (digest.readUInt32BE(0) | 1) >>> 0;
}

/** True when both fingerprints are known and differ: the copy points at another blob. */
export function anotherBlob(recorded: number | undefined, copy: number): boolean {
  return recorded !== undefined && recorded !== 0 && recorded !== copy;
}
