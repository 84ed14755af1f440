import { silentLogger } from '../observability/logger.js';
import type { KafkaClient } from './client.js';
import type { GroupJoin } from './consumer.js';
import { PartitionReader } from './partition-reader.js';

/** The consumer as the reader drives it: group joins in, pause/seek/resume out. */
class FakeConsumer {
  calls: string[] = [];
  joined = false;
  private onJoin: ((join: GroupJoin) => void) | null = null;
  onBatchEnd(): () => void {
    return () => undefined;
  }
  onGroupJoin(cb: (join: GroupJoin) => void): void {
    this.onJoin = cb;
  }
  async connect(): Promise<void> {}
  async subscribe(): Promise<void> {}
  async run(): Promise<void> {}
  pause(topic: string, partitions: number[]): void {
    this.calls.push(`pause ${partitions.join(',')}`);
  }
  resume(topic: string, partitions: number[]): void {
    this.calls.push(`resume ${partitions.join(',')}`);
  }
  seek(topic: string, partition: number, offset: string): void {
    // kafkajs refuses a seek while the consumer is not running in its group (after a crash).
    if (!this.joined)
      throw new Error('Consumer group was not initialized, consumer#run must be called first');
    this.calls.push(`seek ${partition}@${offset}`);
  }
  join(partitions: number[]): void {
    this.joined = partitions.length > 0;
    const assignment: Record<string, number[]> = partitions.length > 0 ? { t: partitions } : {};
    this.onJoin?.({ memberId: 'm', isLeader: true, assignment, added: {}, removed: {} });
  }
}

describe('PartitionReader', () => {
  it('survives the empty assignment a crashed consumer reports, and seeks back on the next join', async () => {
    const consumer = new FakeConsumer();
    const kafka = { consumer: () => consumer } as unknown as KafkaClient;
    const reader = new PartitionReader(kafka, 't', silentLogger);
    await reader.start();
    consumer.join([0, 1, 2]);
    reader.openPartition(1, 5, () => undefined);
    expect(consumer.calls).toEqual(['pause 0,1,2', 'seek 1@5', 'resume 1']);
    consumer.calls = [];
    // The crash: kafkajs left the group; the reader must neither throw nor seek.
    expect(() => consumer.join([])).not.toThrow();
    reader.openPartition(2, 0, () => undefined);
    expect(consumer.calls).toEqual([]);
    // The restart joins again: only open partitions it was given are sought, from their positions.
    consumer.join([0, 1]);
    expect(consumer.calls).toEqual(['pause 0', 'seek 1@5']);
    expect(reader.position(1)).toBe(5);
    expect(reader.position(2)).toBe(0);
  });
});
