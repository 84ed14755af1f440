/**
 * The one writer of the state topic: each state goes, as a v2 record, to the partition equal to its
 * input partition, and once Kafka acknowledged it the local store sees it at once (before the
 * changelog reader reads it back). Steps of one document recorded while an earlier one is still
 * queued collapse into one record (`CoalescingSender`, `replace`). A step nobody waits for soon
 * (`lazy`) rides on the next request instead of starting one.
 */
import type { CoalescingSender } from '../../kafka/coalescer.js';
import type { DocumentStateV2 } from './document-state.js';
import { encodeState } from './record.js';

/** Records a document's progress. Resolves once Kafka acknowledged it. */
export interface StatePort {
  /** `lazy`: no caller needs it acknowledged soon; it may wait a moment for other records to go with. */
  writeState(state: DocumentStateV2, options?: { lazy?: boolean }): Promise<void>;
  /** Sends the lazy records still waiting, now (a stop or a revoke). */
  sendLingeringNow?(): void;
}

export class StateWriter implements StatePort {
  constructor(
    private readonly sender: Pick<CoalescingSender, 'send'> &
      Partial<Pick<CoalescingSender, 'sendLingeringNow'>>,
    private readonly topic: string,
    private readonly store: { put(state: DocumentStateV2): void },
  ) {}

  async writeState(state: DocumentStateV2, options: { lazy?: boolean } = {}): Promise<void> {
    // A newer state of the same document supersedes one still queued: one record for both.
    await this.sender.send(
      this.topic,
      { key: state.event_id, value: encodeState(state), partition: state.input.partition },
      { replace: true, lazy: options.lazy === true },
    );
    this.store.put(state);
  }

  sendLingeringNow(): void {
    this.sender.sendLingeringNow?.();
  }
}

/** Removes a finished document from the state topic (retention): its tombstone, keyed by event id. */
export function stateTombstones(
  sender: Pick<CoalescingSender, 'send'>,
  topic: string,
): (partition: number, eventId: string) => Promise<void> {
  return async (partition, eventId) => {
    await sender.send(topic, { key: eventId, value: null, partition });
  };
}
