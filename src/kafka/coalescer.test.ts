import { CoalescingSender } from './coalescer.js';
import type { OutgoingMessage } from './producer.js';

describe('CoalescingSender', () => {
  it('sends the first message at once and gathers the rest while a request is out', async () => {
    const requests: Array<Array<{ topic: string; messages: OutgoingMessage[] }>> = [];
    let release: () => void = () => undefined;
    const producer = {
      sendBatch: (batches: Array<{ topic: string; messages: OutgoingMessage[] }>) => {
        requests.push(batches);
        return new Promise<[]>((resolve) => (release = () => resolve([])));
      },
    };
    const sender = new CoalescingSender(producer);
    const first = sender.send('a', { key: '1', value: 'x' });
    const rest = [sender.send('a', { key: '2', value: 'x' }), sender.send('b', { key: '3', value: 'x' })];
    expect(requests).toHaveLength(1);
    release();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(requests).toHaveLength(2);
    expect(requests[1]!.map((b) => [b.topic, b.messages.length])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    release();
    await Promise.all(rest);
  });

  it('rejects every message of a failed request and keeps going', async () => {
    let fail = true;
    const producer = {
      sendBatch: async () => {
        if (fail) throw new Error('broker down');
        return [];
      },
    };
    const sender = new CoalescingSender(producer);
    await expect(sender.send('a', { key: '1', value: 'x' })).rejects.toThrow('broker down');
    fail = false;
    await expect(sender.send('a', { key: '2', value: 'x' })).resolves.toBeUndefined();
  });
});
