/**
 * What a document's life (`../document/ports.ts`) needs of the outputs: results published and dead letters
 * written, each resolved once Kafka acknowledged it. Declared here, beside what implements it
 * (`output.ts`), so that the outputs need nothing of the document folder.
 */
import type { Awaitable, DeadLetter, DocumentIdentity } from '../types.js';

export interface OutputPort {
  /** Publishes one final result to its topic (key = submission id). Resolves once acknowledged. */
  publishResult(
    kind: Awaitable,
    doc: DocumentIdentity,
    body: Record<string, unknown>,
    extra?: ResultExtra,
  ): Promise<void>;
  /** `stateFollows`: the caller records the document's state next (exactly-once: one transaction). */
  deadLetter(deadLetter: DeadLetter, options?: { stateFollows?: boolean }): Promise<void>;
}

export interface ResultExtra {
  report_url?: string | null;
  source?: 'poll' | 'webhook';
  /** The document's input partition: exactly-once writes the result in its transaction. */
  inputPartition?: number;
}
