/**
 * Every document's latest state, materialised from the compacted state topic. The consumer asks it
 * whether an event was seen (never submit twice) and, when it is given a partition, which documents of
 * that partition are unfinished (resume them). Writes of this instance are applied at once; records
 * read back from the topic never move a document's state backwards.
 */
import type { OpenFeed, RecordFeed, ViewRecord } from '../../kafka/view.js';
import { decodeState, isUnfinished, type DocumentState } from './codec.js';

export class StateStore {
  private readonly states = new Map<string, DocumentState>();
  private readonly eventBySubmission = new Map<string, string>();
  private readonly view: RecordFeed;

  /** `open` reads the state topic (`wiring.ts` passes a `TopicView`). */
  constructor(open: OpenFeed) {
    this.view = open((r) => this.applyRecord(r));
  }

  start(): Promise<void> {
    return this.view.start();
  }

  stop(): Promise<void> {
    return this.view.stop();
  }

  /** Waits until every state written so far to these partitions has been read. */
  caughtUp(partitions?: number[]): Promise<void> {
    return this.view.caughtUp(partitions);
  }

  get(eventId: string): DocumentState | undefined {
    return this.states.get(eventId);
  }

  bySubmission(submissionId: string): DocumentState | undefined {
    const eventId = this.eventBySubmission.get(submissionId);
    return eventId === undefined ? undefined : this.states.get(eventId);
  }

  get size(): number {
    return this.states.size;
  }

  unfinished(partition: number): DocumentState[] {
    const out: DocumentState[] = [];
    for (const s of this.states.values()) {
      if (s.partition === partition && isUnfinished(s)) out.push(s);
    }
    return out;
  }

  /** Applies a state this instance wrote (acknowledged by Kafka). */
  apply(state: DocumentState): void {
    const current = this.states.get(state.event_id);
    if (current && current.updated_at > state.updated_at) return;
    this.states.set(state.event_id, state);
    this.eventBySubmission.set(state.submission_id, state.event_id);
  }

  private applyRecord(record: ViewRecord): void {
    if (record.value === null) {
      const gone = this.states.get(record.key);
      if (gone) this.eventBySubmission.delete(gone.submission_id);
      this.states.delete(record.key);
      return;
    }
    const state = decodeState(record.value);
    if (state) this.apply(state);
  }
}
