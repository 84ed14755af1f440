/**
 * Many callers, one producer request at a time: the idempotent producer keeps one request in flight
 * per broker, so concurrent sends are gathered while a request is out and go together in the next one.
 * No message waits for a timer; under load, requests grow instead of queueing one by one.
 */
import type { KafkaProducer, OutgoingMessage } from './producer.js';

interface Pending {
  topic: string;
  message: OutgoingMessage;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class CoalescingSender {
  private queue: Pending[] = [];
  private inFlight = false;

  constructor(
    private readonly producer: Pick<KafkaProducer, 'sendBatch'>,
    private readonly maxBatch = 500,
  ) {}

  /** Resolves once the broker acknowledged the message. */
  send(topic: string, message: OutgoingMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ topic, message, resolve, reject });
      if (!this.inFlight) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.inFlight = true;
    while (this.queue.length > 0) {
      const items = this.queue.splice(0, this.maxBatch);
      const byTopic = new Map<string, OutgoingMessage[]>();
      for (const item of items) {
        const list = byTopic.get(item.topic) ?? [];
        list.push(item.message);
        byTopic.set(item.topic, list);
      }
      try {
        await this.producer.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
        for (const item of items) item.resolve();
      } catch (err) {
        for (const item of items) item.reject(err);
      }
    }
    this.inFlight = false;
  }
}
