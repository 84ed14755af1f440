/**
 * Many callers, one producer request at a time: the idempotent producer keeps one request in flight
 * per broker, so concurrent sends are gathered while a request is out and go together in the next one.
 * No message waits for a timer; under load, requests grow instead of queueing one by one.
 *
 * One message too large never fails the others: it is refused on its own before it is queued, a
 * request is bounded in bytes as well as in count (kafkajs puts all messages of a partition in one
 * record batch, which the broker measures against the topic's limit), and when the broker still
 * refuses a gathered request as too large, its messages are sent again one by one so that only the
 * culprit fails. When a send goes out, and what `replace` and `lazy` do, is told at `CoalescingSender`.
 */
import { isMessageTooLarge, MessageTooLargeError } from './errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES, messageSize } from './message-size.js';
import type { KafkaProducer, OutgoingMessage } from './producer.js';

interface Pending {
  topic: string;
  message: OutgoingMessage;
  size: number;
  /** Set when later sends may supersede this entry while it is queued. */
  slot?: string;
  /** Queued `lazy` (and not replaced by an eager send since): starts no request by itself. */
  lazy: boolean;
  settle: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
}

type Batches = Array<{ topic: string; messages: OutgoingMessage[] }>;

/** Every message is checked against its topic's limit in `send`, before it is queued. */
const SIZES_CHECKED = { sizesChecked: true };

/** What the sender needs of a producer; `limitFor` (per-topic limits) is optional for tests. */
type CoalescedProducer = Pick<KafkaProducer, 'sendBatch'> & Partial<Pick<KafkaProducer, 'limitFor'>>;

interface CoalescingOptions {
  /**
   * Upper bound of the bytes gathered into one request (default: the producer's limit for the
   * first message's topic, else 1,000,000), so gathering alone never makes a batch too large.
   */
  maxBatchBytes?: number;
  /** How long a `lazy` message waits for a request to ride on before it starts one (default 200). */
  lazyLingerMs?: number;
}

/** Long enough that at ten documents a second a document's later states ride on the next one's. */
const DEFAULT_LAZY_LINGER_MS = 200;

export interface SendOptions {
  /** Supersede a message of the same topic, partition and key still queued (see the class comment). */
  replace?: boolean;
  /** Nobody waits for it soon: wait up to `lazyLingerMs` for another request to go with. */
  lazy?: boolean;
}

/**
 * The first send to an idle sender goes out once the current turn of the event loop is over
 * (`setImmediate`), not at once: what the same turn sends meets it in one request. At a trickle
 * that is a document's results fetched together, and the states recorded after them (one record,
 * see below); a flood gathers while a request is out anyway.
 *
 * A message sent with `replace` supersedes the one still queued under the same topic and key (a
 * compacted topic keeps only the latest value of a key anyway): the queued entry takes the newer
 * value in its place, and every caller's promise resolves once that newer value is acknowledged.
 * Several steps of one document recorded while a request is out thus cost one record.
 *
 * A message sent `lazy` is one nobody needs acknowledged soon (a document's progress past its
 * first state): it starts no request of its own until `lazyLingerMs` have passed, and goes with the
 * next request anything else starts meanwhile. At a trickle a document's later states thus ride on
 * the next document's first state or results instead of costing a request each, and a later state
 * of the same document that arrives meanwhile replaces it; a flood gathers them anyway.
 * `sendLingeringNow` sends what lingers at once, or right after the request that is out (a stop or
 * a revoke should not wait for it).
 */
export class CoalescingSender {
  private queue: Pending[] = [];
  /** Queued (not yet taken) entries that may be superseded, by topic and key. */
  private readonly replaceable = new Map<string, Pending>();
  private inFlight = false;
  /** Queued entries not lazy: while there are none, the queue waits for the linger timer. */
  private eager = 0;
  private lingering: NodeJS.Timeout | undefined;

  constructor(
    private readonly producer: CoalescedProducer,
    private readonly maxBatch = 500,
    private readonly options: CoalescingOptions = {},
  ) {}

  private limitFor(topic: string): number {
    return this.producer.limitFor?.(topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  /**
   * Resolves once the broker acknowledged the message. Rejects with MessageTooLargeError, for this
   * message alone, when it exceeds its topic's limit. With `replace`, a message of the same topic,
   * key and partition still queued is replaced by this one (see the class comment).
   */
  send(topic: string, message: OutgoingMessage, options: SendOptions = {}): Promise<void> {
    const size = messageSize(message);
    const limit = this.limitFor(topic);
    if (size > limit) {
      return Promise.reject(new MessageTooLargeError({ topic, size, limit, fromBroker: false }));
    }
    return new Promise((resolve, reject) => {
      const slot = options.replace ? slotOf(topic, message) : undefined;
      // A message that does not replace keeps its place after a queued one of the same key: a later
      // replacement must not jump ahead of it.
      if (!options.replace && this.replaceable.size > 0) {
        const other = slotOf(topic, message);
        if (other !== undefined) this.replaceable.delete(other);
      }
      const lazy = options.lazy === true;
      const queued = slot === undefined ? undefined : this.replaceable.get(slot);
      if (queued) {
        queued.message = message;
        queued.size = size;
        queued.settle.push({ resolve, reject });
        // A caller waiting soon makes the entry urgent; a lazy one never makes it less so.
        if (queued.lazy && !lazy) {
          queued.lazy = false;
          this.eager += 1;
        }
      } else {
        const item: Pending = { topic, message, size, lazy, settle: [{ resolve, reject }] };
        if (slot !== undefined) {
          item.slot = slot;
          this.replaceable.set(slot, item);
        }
        this.queue.push(item);
        if (!lazy) this.eager += 1;
      }
      if (!lazy) this.start();
      else if (!this.inFlight) this.linger();
    });
  }

  /**
   * Sends what is queued now, lazy messages included, instead of when their linger ends: they turn
   * eager, so that while a request is out they follow it as soon as it is acknowledged rather than
   * wait out their linger behind it.
   */
  sendLingeringNow(): void {
    for (const item of this.queue) {
      if (!item.lazy) continue;
      item.lazy = false;
      this.eager += 1;
    }
    if (this.queue.length > 0) this.start();
  }

  private start(): void {
    clearTimeout(this.lingering);
    this.lingering = undefined;
    if (this.inFlight || this.queue.length === 0) return;
    this.inFlight = true;
    // Once the current turn is over: what the same turn sends meets this in one request.
    setImmediate(() => {
      this.flush().catch((err: unknown) => this.failQueued(err));
    });
  }

  /**
   * `flush` settles every message it takes, whatever the broker answers; only a defect can make it
   * throw. Then what is queued is refused with that error rather than left waiting for good.
   */
  private failQueued(err: unknown): void {
    this.inFlight = false;
    const queued = this.queue.splice(0);
    this.replaceable.clear();
    this.eager = 0;
    for (const item of queued) rejectAll(item, err);
  }

  private takeBatch(): Pending[] {
    const budget = this.options.maxBatchBytes ?? this.limitFor(this.queue[0]!.topic);
    let bytes = 0;
    let count = 0;
    for (const item of this.queue) {
      if (count >= this.maxBatch || (count > 0 && bytes + item.size > budget)) break;
      bytes += item.size;
      count += 1;
    }
    const taken = this.queue.splice(0, count);
    for (const item of taken) {
      if (item.slot !== undefined) this.replaceable.delete(item.slot);
      if (!item.lazy) this.eager -= 1;
    }
    return taken;
  }

  private async flush(): Promise<void> {
    // The first request takes whatever is queued; after it, lazy messages alone wait for their
    // linger, unless they fill a request.
    let first = true;
    while (this.queue.length > 0 && (first || this.eager > 0 || this.queue.length >= this.maxBatch)) {
      first = false;
      const items = this.takeBatch();
      try {
        await this.producer.sendBatch(byTopic(items), SIZES_CHECKED);
        for (const item of items) resolveAll(item);
      } catch (err) {
        if (items.length > 1 && isMessageTooLarge(err)) await this.sendOneByOne(items);
        else for (const item of items) rejectAll(item, err);
      }
    }
    this.inFlight = false;
    if (this.queue.length > 0) this.linger();
  }

  /** Lazy messages alone in the queue: they start a request when the linger ends, if none did before. */
  private linger(): void {
    if (this.lingering !== undefined) return;
    this.lingering = setTimeout(() => {
      this.lingering = undefined;
      this.start();
    }, this.options.lazyLingerMs ?? DEFAULT_LAZY_LINGER_MS);
    // A stop sends what lingers at once (`sendLingeringNow`); the timer never holds the process.
    this.lingering.unref();
  }

  private async sendOneByOne(items: Pending[]): Promise<void> {
    for (const item of items) {
      try {
        await this.producer.sendBatch(byTopic([item]), SIZES_CHECKED);
        resolveAll(item);
      } catch (err) {
        rejectAll(item, err);
      }
    }
  }
}

/** A keyless message has no slot: nothing replaces it and it replaces nothing. */
function slotOf(topic: string, message: OutgoingMessage): string | undefined {
  if (message.key === null || message.key === undefined) return undefined;
  const key = typeof message.key === 'string' ? message.key : message.key.toString('latin1');
  return `${message.partition ?? ''}\u0000${topic}\u0000${key}`;
}

function resolveAll(item: Pending): void {
  for (const s of item.settle) s.resolve();
}

function rejectAll(item: Pending, err: unknown): void {
  for (const s of item.settle) s.reject(err);
}

function byTopic(items: Pending[]): Batches {
  const grouped = new Map<string, OutgoingMessage[]>();
  for (const item of items) {
    const list = grouped.get(item.topic) ?? [];
    list.push(item.message);
    grouped.set(item.topic, list);
  }
  return [...grouped].map(([topic, messages]) => ({ topic, messages }));
}
