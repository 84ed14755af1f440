/**
 * Whether a transaction committed, told by one of its records: after the transactional id was
 * initialised again (which completes whatever the broker was ending), the record is read back as a
 * read_committed consumer reads it; visible means committed, skipped (aborted) means not. What a
 * transactional writer asks when a commit failed without an answer, before it sends the batch again.
 * One record reader per topic asked about, started on the first question and stopped with the writers.
 */
import type { Logger } from '../observability/logger.js';
import type { KafkaAdmin } from './admin.js';
import type { KafkaClient } from './client.js';
import { RecordReader } from './record-reader.js';
import type { CommitWitness, WrittenRecord } from './transactions.js';

export class ReadCommittedWitness implements CommitWitness {
  private readonly readers = new Map<string, Promise<RecordReader>>();

  constructor(
    private readonly kafka: KafkaClient,
    private readonly admin: KafkaAdmin,
    private readonly logger: Logger,
  ) {}

  async committed(record: WrittenRecord): Promise<boolean> {
    const reader = await this.readerOf(record.topic);
    return (await reader.read(record.partition, record.offset)) !== null;
  }

  async stop(): Promise<void> {
    const readers = [...this.readers.values()];
    this.readers.clear();
    await Promise.all(readers.map(async (r) => (await r.catch(() => null))?.stop()));
  }

  private readerOf(topic: string): Promise<RecordReader> {
    let reader = this.readers.get(topic);
    if (!reader) {
      const made = new RecordReader(this.kafka, this.admin, topic, this.logger);
      reader = made.start().then(() => made);
      // A reader that failed to start is made again at the next question.
      reader.catch(() => this.readers.delete(topic));
      this.readers.set(topic, reader);
    }
    return reader;
  }
}
