/**
 * The one writer of the state topic: each state goes, as a v2 record, to the partition equal to its
 * input partition, and once Kafka acknowledged it the local store sees it at once (before the
 * changelog reader reads it back). Steps of one document recorded while an earlier one is still
 * queued collapse into one record (`CoalescingSender`, `replace`).
 */
import type { CoalescingSender } from '../../kafka/coalescer.js';
import type { DocumentStateV2 } from './document-state.js';
import { encodeState } from './record.js';

/** Records a document's progress. Resolves once Kafka acknowledged it. */
export interface StatePort {
  writeState(state: DocumentStateV2): Promise<void>;
}

export class StateWriter implements StatePort {
  constructor(
    private readonly sender: Pick<CoalescingSender, 'send'>,
    private readonly topic: string,
    private readonly store: { put(state: DocumentStateV2): void },
  ) {}

  async writeState(state: DocumentStateV2): Promise<void> {
    // A newer state of the same document supersedes one still queued: one record for both.
    await this.sender.send(
      this.topic,
      { key: state.event_id, value: encodeState(state), partition: state.input.partition },
      { replace: true },
    );
    this.store.put(state);
  }

  /** Removes a finished document from the topic (retention). */
  async tombstone(partition: number, eventId: string): Promise<void> {
    await this.sender.send(this.topic, { key: eventId, value: null, partition });
  }
}
