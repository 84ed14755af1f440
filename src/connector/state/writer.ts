/**
 * The one writer of the state topic: each state goes to the partition equal to its input partition,
 * and once Kafka acknowledged it the local store sees it at once (before the view reads it back).
 */
import type { CoalescingSender } from '../../kafka/coalescer.js';
import { encodeState, type DocumentState } from './codec.js';

/** What the engine needs to record a document's progress. Resolves once Kafka acknowledged it. */
export interface StatePort {
  writeState(state: DocumentState): Promise<void>;
}

export class StateWriter implements StatePort {
  constructor(
    private readonly sender: Pick<CoalescingSender, 'send'>,
    private readonly topic: string,
    private readonly store: { apply(state: DocumentState): void },
  ) {}

  async writeState(state: DocumentState): Promise<void> {
    await this.sender.send(this.topic, {
      key: state.event_id,
      value: encodeState(state),
      partition: state.partition,
    });
    this.store.apply(state);
  }
}
