/**
 * The state of the owned partitions, fed by the changelog reader: finished documents go to the
 * compact index, unfinished ones (a bounded few: the in-flight documents) stay as v2 objects. A
 * tombstone removes a document; a revoked partition is forgotten at once.
 *
 * Retention: documents that finished before the window are not kept when read back, and each one
 * found (while restoring or by `expire`) is reported once, so the owner writes its tombstone.
 */
import type { ChangelogRecord, ChangelogSink } from '../../kafka/changelog.js';
import { FinishedIndex } from './finished-index.js';
import { packIdBytes } from './packed-id.js';
import type { FinishedEntry } from './partition-index.js';
import {
  isFinished,
  type DocumentStateV2,
  type FinishedState,
  type UnfinishedState,
  StateRecordError,
} from './document-state.js';
import { decodeState, peekFinished } from './record.js';
import { REPLAY_KEY, decodeReplayMarker, type ReplayMarker } from './replay-marker.js';

const REPLAY_KEY_BYTES = Buffer.from(REPLAY_KEY, 'utf8');

interface PartitionStateOptions {
  /** Input topic named in v1 records that did not carry it. */
  inputTopic: string;
  /** How long a finished document stays, in ms (default 7 days). */
  retentionMs?: number;
  now?: () => number;
  /** A finished document is past the window: write its tombstone. */
  onExpired?: (partition: number, eventId: string) => void;
  /** A record could not be read (never its contents: they may be personal data). */
  onBadRecord?: (partition: number, offset: number, error: Error) => void;
}

export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;

export class PartitionState implements ChangelogSink {
  readonly finished = new FinishedIndex();
  private readonly unfinished = new Map<number, Map<string, UnfinishedState>>();
  private readonly markers = new Map<number, ReplayMarker>();
  private readonly retentionMs: number;
  private readonly now: () => number;
  private readonly scratch = new Uint8Array(16);

  constructor(private readonly options: PartitionStateOptions) {
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.now = options.now ?? Date.now;
  }

  apply(record: ChangelogRecord): void {
    // The replay marker's key starts with a NUL byte, which no event id does: one byte tells them apart.
    if (record.key[0] === 0 && record.key.equals(REPLAY_KEY_BYTES)) {
      this.applyMarker(record);
      return;
    }
    // Most records of a restore are finished documents: they go to the index without objects.
    if (record.value !== null && this.applyFinished(record.partition, record.key, record.value)) return;
    const eventId = record.key.toString('utf8');
    if (record.value === null) {
      this.remove(record.partition, eventId);
      return;
    }
    let state: DocumentStateV2;
    try {
      state = decodeState(eventId, record.value, this.options.inputTopic);
    } catch (err) {
      if (!(err instanceof StateRecordError)) throw err;
      this.options.onBadRecord?.(record.partition, record.offset, err);
      return;
    }
    this.put(record.partition, state);
  }

  private applyMarker(record: ChangelogRecord): void {
    if (record.value === null) {
      this.markers.delete(record.partition);
      return;
    }
    try {
      this.markers.set(record.partition, decodeReplayMarker(record.value));
    } catch (err) {
      if (!(err instanceof StateRecordError)) throw err;
      this.options.onBadRecord?.(record.partition, record.offset, err);
    }
  }

  /** The latest replay marker of `partition` (see `ReplayMarker`). */
  marker(partition: number): ReplayMarker | undefined {
    return this.markers.get(partition);
  }

  private applyFinished(partition: number, key: Buffer, value: Buffer): boolean {
    const peek = peekFinished(value);
    if (!peek) return false;
    const open = this.unfinished.get(partition);
    if (open && open.size > 0) open.delete(key.toString('utf8'));
    if (peek.finishedMs < this.now() - this.retentionMs) {
      const eventId = key.toString('utf8');
      this.finished.delete(partition, eventId);
      this.options.onExpired?.(partition, eventId);
      return true;
    }
    this.finished.setPacked(
      partition,
      packIdBytes(key, this.scratch),
      peek.sidIsUuid ? { uuid: peek.sid, bytes: peek.sid } : { uuid: null, bytes: peek.sid },
      peek.failed,
      peek.results,
      peek.finishedMs,
      peek.generation,
      peek.blob,
    );
    return true;
  }

  drop(partition: number): void {
    this.finished.dropPartition(partition);
    this.unfinished.delete(partition);
    this.markers.delete(partition);
  }

  /** What is recorded for `eventId` in `partition`: unfinished in full, finished in brief. */
  get(
    partition: number,
    eventId: string,
  ): { finished: FinishedEntry } | { unfinished: UnfinishedState } | undefined {
    const open = this.unfinished.get(partition)?.get(eventId);
    if (open) return { unfinished: open };
    const done = this.finished.get(partition, eventId);
    return done ? { finished: done } : undefined;
  }

  /** Records a state the owner wrote (after Kafka acknowledged it), as if read back. */
  put(partition: number, state: DocumentStateV2): void {
    if (isFinished(state)) {
      this.unfinished.get(partition)?.delete(state.event_id);
      if (state.finished_at < this.now() - this.retentionMs) {
        this.finished.delete(partition, state.event_id);
        this.options.onExpired?.(partition, state.event_id);
        return;
      }
      this.finished.set(partition, toEntry(state));
      return;
    }
    this.finished.delete(partition, state.event_id);
    let open = this.unfinished.get(partition);
    if (!open) {
      open = new Map();
      this.unfinished.set(partition, open);
    }
    open.set(state.event_id, state);
  }

  remove(partition: number, eventId: string): void {
    this.finished.delete(partition, eventId);
    this.unfinished.get(partition)?.delete(eventId);
  }

  /** The unfinished documents of `partition`, which its new owner resumes. */
  unfinishedOf(partition: number): UnfinishedState[] {
    return [...(this.unfinished.get(partition)?.values() ?? [])];
  }

  /** Removes finished documents past the window, reporting each to `onExpired`; returns how many. */
  expire(): number {
    return this.finished.expire(this.now() - this.retentionMs, (partition, eventId) =>
      this.options.onExpired?.(partition, eventId),
    );
  }
}

function toEntry(state: FinishedState): FinishedEntry {
  return {
    event_id: state.event_id,
    submission_id: state.submission_id,
    status: state.status,
    awaited: state.awaited,
    published: state.published,
    finished_at: state.finished_at,
    generation: state.generation ?? 0,
    blob: state.blob ?? 0,
  };
}
