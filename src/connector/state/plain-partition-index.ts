/**
 * The plain way to hold one partition's finished documents: a Map from event id to an entry object.
 * Used only when the packed index is switched off (`packed-state-index`, docs/optimisations.md), to
 * measure what the packed one (`partition-index.ts`) buys; same interface, same answers.
 */
import { uuidString } from './binary.js';
import { awaitableList } from './document-state.js';
import type { PackedId } from './packed-id.js';
import type { FinishedEntry } from './partition-index.js';

const textDecoder = new TextDecoder();

function idText(id: PackedId): string {
  return id.uuid ? uuidString(id.uuid) : textDecoder.decode(id.bytes);
}

/** A copy, so that a caller changing what it got does not change what is held. */
function copy(entry: FinishedEntry): FinishedEntry {
  return { ...entry, awaited: [...entry.awaited], published: [...entry.published] };
}

export class PlainPartitionIndex {
  private readonly entriesById = new Map<string, FinishedEntry>();

  get live(): number {
    return this.entriesById.size;
  }

  get(eventId: string): FinishedEntry | undefined {
    const entry = this.entriesById.get(eventId);
    return entry ? copy(entry) : undefined;
  }

  set(entry: FinishedEntry): void {
    // Kept to the second, as the packed index keeps it.
    this.entriesById.set(entry.event_id, {
      ...copy(entry),
      finished_at: Math.floor(entry.finished_at / 1000) * 1000,
    });
  }

  setPacked(
    key: PackedId,
    sid: PackedId,
    failed: boolean,
    results: number,
    finishedSeconds: number,
    generation = 0,
    blob = 0,
  ): void {
    const eventId = idText(key);
    this.entriesById.set(eventId, {
      event_id: eventId,
      submission_id: idText(sid),
      status: failed ? 'FAILED' : 'DONE',
      awaited: awaitableList(results & 0xf),
      published: awaitableList(results >> 4),
      finished_at: finishedSeconds * 1000,
      generation,
      blob,
    });
  }

  delete(eventId: string): boolean {
    return this.entriesById.delete(eventId);
  }

  expire(beforeSeconds: number, onExpired: (eventId: string) => void): number {
    let expired = 0;
    for (const [id, entry] of this.entriesById) {
      if (entry.finished_at / 1000 >= beforeSeconds) continue;
      this.entriesById.delete(id);
      onExpired(id);
      expired++;
    }
    return expired;
  }

  *entries(): Generator<FinishedEntry> {
    for (const entry of this.entriesById.values()) yield copy(entry);
  }

  /** Not counted: the objects are in V8's heap, not in arrays of known size. */
  bytes(): number {
    return 0;
  }
}
